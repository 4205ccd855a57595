"""The clocks and server flags ``ARTOO_MODEL=local make run`` gives a CPU model."""

import pytest

from devtools import model as installer
from devtools.localmodel import CLUSTER_ENV, LocalModel, LocalModelMissing


def test_a_local_model_gets_the_fan_in_deadline_of_the_model_tier(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("ARTOO_FANIN_DEADLINE_S", raising=False)
    env = LocalModel(tmp_path).env
    assert env["ARTOO_FANIN_DEADLINE_S"] == CLUSTER_ENV["ARTOO_FANIN_DEADLINE_S"]
    assert int(env["ARTOO_FANIN_DEADLINE_S"]) > 300
    monkeypatch.setenv("ARTOO_FANIN_DEADLINE_S", "450")
    assert LocalModel(tmp_path).env["ARTOO_FANIN_DEADLINE_S"] == "450"


def test_speculative_decoding_is_off_unless_asked(tmp_path, monkeypatch):
    monkeypatch.delenv("ARTOO_LOCAL_DRAFT", raising=False)
    command = LocalModel(tmp_path).command()
    assert not any(flag.startswith("--spec") for flag in command)


def test_a_draft_model_and_its_length_reach_the_server(tmp_path, monkeypatch):
    monkeypatch.setenv("ARTOO_LOCAL_DRAFT", "0.5b:8")
    local = LocalModel(tmp_path)
    command = local.command()
    draft = command[command.index("--spec-draft-model") + 1]
    assert draft.endswith(installer.WEIGHTS["0.5b"].filename)
    assert command[command.index("--spec-draft-n-max") + 1] == "8"
    assert command[command.index("--spec-type") + 1] == "draft-simple"
    lookup = LocalModel(tmp_path, draft="ngram-mod").command()
    assert lookup[lookup.index("--spec-type") + 1] == "ngram-mod"
    assert "--spec-draft-model" not in lookup


@pytest.mark.parametrize("setting", ["7b", "0.5b:0", "0.5b:x", "ngram", "0.5b:-2"])
def test_a_malformed_draft_setting_is_refused_by_name(tmp_path, setting):
    with pytest.raises(ValueError, match="ARTOO_LOCAL_DRAFT") as refused:
        LocalModel(tmp_path, draft=setting)
    assert repr(setting) in str(refused.value)


def test_missing_draft_weights_say_how_to_install_them(tmp_path, monkeypatch):
    monkeypatch.setenv("ARTOO_MODEL_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(LocalModelMissing) as missing:
        LocalModel(tmp_path, draft="0.5b").require_installed()
    text = str(missing.value)
    assert "draft weights" in text
    assert "devtools/model.py --size 0.5b" in text
    assert "make model" in text
