"""The canonical tool-call evidence entry: one format, one parser."""

import pytest

from roles.claims.evidence import (
    ToolCall,
    first_target,
    format_evidence,
    is_failed_call,
    parse_evidence,
)


def test_evidence_round_trips_through_the_parser():
    entry = format_evidence("shell", {"command": "ls /tmp"}, "a.txt\nb.txt\n")

    assert entry == 'shell: {"command": "ls /tmp"} → a.txt\nb.txt'
    assert parse_evidence(entry) == ToolCall(
        tool="shell",
        args={"command": "ls /tmp"},
        target="ls /tmp",
        output="a.txt\nb.txt",
    )


def test_arrows_and_colons_inside_args_and_output_survive():
    args = {"command": 'echo "a → b: c" | grep ": "'}
    entry = format_evidence("shell", args, "a → b: c")

    call = parse_evidence(entry)

    assert call.args == args
    assert call.output == "a → b: c"


def test_a_long_output_keeps_its_head_and_its_tail():
    text = "h" * 900 + "t" * 900
    call = parse_evidence(format_evidence("read_file", {"path": "x"}, text))

    assert call.output == "h" * 700 + " … " + "t" * 300


def test_an_output_up_to_1000_characters_is_kept_whole():
    call = parse_evidence(format_evidence("read_file", {"path": "x"}, "y" * 1000))

    assert call.output == "y" * 1000


def test_non_ascii_args_are_kept_readable():
    entry = format_evidence("search", {"query": "天气 Paris"}, "sunny")

    assert "天气 Paris" in entry
    assert parse_evidence(entry).target == "天气 Paris"


@pytest.mark.parametrize(
    ("args", "target"),
    [
        ({"query": "q", "command": "c"}, "q"),
        ({"query": "  ", "command": "c"}, "c"),
        ({"path": "/p", "url": "http://u"}, "/p"),
        ({"url": "http://u"}, "http://u"),
        ({"pattern": "*.py"}, "*.py"),
        ({"pattern": "*.ini", "root": "/srv/conf"}, "/srv/conf/*.ini"),
        ({"root": "/srv/conf"}, ""),
        ({"query": 3, "path": "/p"}, "/p"),
    ],
)
def test_target_is_the_first_non_empty_query_command_path_or_url(args, target):
    assert parse_evidence(format_evidence("tool", args, "")).target == target


def test_long_targets_are_cut_at_120_characters():
    call = parse_evidence(format_evidence("shell", {"command": "x" * 300}, ""))

    assert call.target == "x" * 120 + "…"
    assert call.args["command"] == "x" * 300
    assert first_target(call.args) == "x" * 300


@pytest.mark.parametrize(
    "entry",
    [
        None,
        42,
        "",
        "shell:ls → x",  # the original's broken production format
        "shell: ls /tmp → x",
        'shell: ["ls"] → x',
        ': {"command": "ls"} → x',
        'two words: {"command": "ls"} → x',
    ],
)
def test_anything_else_is_not_evidence(entry):
    assert parse_evidence(entry) is None


def test_entry_without_an_arrow_has_no_output():
    call = parse_evidence('search: {"query": "x"}')

    assert call == ToolCall("search", {"query": "x"}, "x", "")


def test_formatting_refuses_bad_tool_names_and_args():
    with pytest.raises(ValueError, match="tool name"):
        format_evidence("", {}, "")
    with pytest.raises(ValueError, match="tool name"):
        format_evidence("a: b", {}, "")
    with pytest.raises(TypeError, match="args must be a dict"):
        format_evidence("shell", ["ls"], "")


def test_unserialisable_args_and_missing_output_still_format():
    entry = format_evidence("shell", {"when": object}, None)

    assert parse_evidence(entry).output == ""


@pytest.mark.parametrize(
    ("output", "failed"),
    [
        ("error: unknown format", True),
        ("ERROR: timeout", True),
        ("ls: cannot access 'x': No such file or directory", True),
        ("[LAW1] rm deletes files permanently — denied", True),
        ("exit status 2", True),
        ("a.txt\nb.txt", False),
        ("", False),
    ],
)
def test_a_call_failed_when_its_output_reports_an_error(output, failed):
    call = parse_evidence(format_evidence("shell", {"command": "x"}, output))

    assert is_failed_call(call) is failed


def test_a_file_read_that_mentions_errors_is_data_not_a_failure():
    settings = "[server]\nport = 8437\n[database]\ntimeout = 30\n# on error: retry"
    read = parse_evidence(format_evidence("read_file", {"path": "s.ini"}, settings))
    missing = format_evidence("read_file", {"path": "x"}, "ERROR: no such file: x")

    assert is_failed_call(read) is False
    assert is_failed_call(parse_evidence(missing)) is True
