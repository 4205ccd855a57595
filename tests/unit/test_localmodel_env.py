"""The clocks ``ARTOO_MODEL=local make run`` gives a cluster on a CPU model."""

from devtools.localmodel import CLUSTER_ENV, LocalModel


def test_a_local_model_gets_the_fan_in_deadline_of_the_model_tier(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("ARTOO_FANIN_DEADLINE_S", raising=False)
    env = LocalModel(tmp_path).env
    assert env["ARTOO_FANIN_DEADLINE_S"] == CLUSTER_ENV["ARTOO_FANIN_DEADLINE_S"]
    assert int(env["ARTOO_FANIN_DEADLINE_S"]) > 300
    monkeypatch.setenv("ARTOO_FANIN_DEADLINE_S", "450")
    assert LocalModel(tmp_path).env["ARTOO_FANIN_DEADLINE_S"] == "450"
