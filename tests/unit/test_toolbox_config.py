"""A Toolbox's settings: defaults as before, bad values refused when made."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from roles.tools import Toolbox, ToolboxConfig, ToolError
from roles.tools.files import READ_LIMIT
from roles.tools.web import DDG_URL, SERPER_URL


def test_the_defaults_are_those_of_a_toolbox_given_no_settings():
    config = ToolboxConfig()
    assert (config.shell_timeout_s, config.kill_grace_s) == (30, 2.0)
    assert (config.output_cap, config.fetch_max_bytes) == (1_000_000, 2_000_000)
    assert (config.http_timeout_s, config.read_max_bytes) == (15, READ_LIMIT)
    assert (config.search_url, config.serper_url) == (DDG_URL, SERPER_URL)
    assert (config.serper_api_key, config.sandbox_error) == ("", "")
    assert config.fetch_local is False
    assert config.allowed_paths == config.hidden_paths == ()
    assert config.blocked_tools == config.unavailable_tools == frozenset()


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("shell_timeout_s", -1, "shell_timeout_s must be a positive number of sec"),
        ("shell_timeout_s", 0, "shell_timeout_s must be a positive number of sec"),
        ("http_timeout_s", -0.5, "http_timeout_s must be a positive number of sec"),
        ("kill_grace_s", -2, "kill_grace_s must be zero or more seconds, got -2"),
        ("output_cap", 0, "output_cap must be a positive number of bytes, got 0"),
        ("fetch_max_bytes", 0, "fetch_max_bytes must be a positive number of bytes"),
        ("read_max_bytes", -5, "read_max_bytes must be a positive number of bytes"),
    ],
)
def test_a_bad_timeout_or_cap_is_refused_naming_the_setting(setting, value, message):
    with pytest.raises(ValueError, match=message):
        ToolboxConfig(**{setting: value})


def test_a_config_made_from_lists_is_an_immutable_value():
    config = ToolboxConfig(
        allowed_paths=["/srv/data"],
        blocked_tools=["search", "search"],
        blocked_targets=["  rm -rf build ", "", "ls /b"],
    )
    assert config.allowed_paths == (Path("/srv/data"),)
    assert config.blocked_tools == frozenset({"search"})
    assert config.blocked_targets == frozenset({"rm -rf build", "ls /b"})
    assert config == ToolboxConfig(
        allowed_paths=(Path("/srv/data"),),
        blocked_tools={"search"},
        blocked_targets=["rm -rf build", "ls /b"],
    )
    with pytest.raises(FrozenInstanceError):
        config.shell_timeout_s = 1


def test_a_toolbox_refuses_what_its_config_blocks(tmp_path):
    config = ToolboxConfig(blocked_tools=["search"], unavailable_tools=["fetch_url"])
    toolbox = Toolbox(tmp_path, config)
    assert {s.name for s in toolbox.specs()} == {
        "shell",
        "glob",
        "read_file",
        "read_file_lines",
        "write_file",
        "create_file",
        "apply_edit",
    }
    with pytest.raises(ToolError, match="not available on this server"):
        toolbox.call("fetch_url", {"url": "http://example.com/"})
