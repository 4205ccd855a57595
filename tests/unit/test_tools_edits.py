"""The editing tools on real files: read_file_lines, apply_edit, create_file.

Each goes through the toolbox's one gate as write_file does: confinement, GGS
blocks, memory's Avoid, Law 1 (with the diff) and the evidence record.
"""

from __future__ import annotations

import json
import os

import pytest

from roles.claims.evidence import is_failed_call, parse_evidence
from roles.memory_contracts import TargetSignal
from roles.runstate import RunState
from roles.tools import Toolbox, ToolboxConfig, ToolError, ToolPaused, fileio
from roles.tools.effect_pending import pending_call
from roles.tools.lines import LINES_SPAN, SCAN_BYTES
from tests.unit.test_tools_toolbox import Operator

CONFIG = "[server]\nhost = example.org\nport = 80\n\n[client]\nport = 80\n"


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.ini").write_text(CONFIG)
    return root


def approving(workspace, **config) -> tuple[Toolbox, Operator]:
    operator = Operator(True)
    return Toolbox(workspace, ToolboxConfig(**config), approve=operator), operator


def refusal(toolbox: Toolbox, name: str, args: dict) -> str:
    with pytest.raises(ToolError) as err:
        toolbox.call(name, args)
    return str(err.value)


# apply_edit


def test_apply_edit_replaces_the_one_occurrence_and_says_where(workspace):
    toolbox, _ = approving(workspace)
    said = toolbox.call(
        "apply_edit",
        {"path": "app.ini", "old": "host = example.org", "new": "host = x"},
    )
    assert (workspace / "app.ini").read_text() == CONFIG.replace("example.org", "x")
    assert said.startswith("replaced 1 occurrence at line 2; wrote ")
    call = parse_evidence(toolbox.evidence[-1])
    assert (call.tool, call.target) == ("apply_edit", "app.ini")
    assert not is_failed_call(call)


def test_apply_edit_of_text_found_twice_names_the_count_and_lines_and_changes_nothing(
    workspace,
):
    toolbox, operator = approving(workspace)
    before = (workspace / "app.ini").read_bytes()
    message = refusal(
        toolbox, "apply_edit", {"path": "app.ini", "old": "port = 80", "new": "p"}
    )
    assert "old was found 2 times in" in message and "nothing was changed" in message
    assert message.endswith(":\nL3: port = 80\nL6: port = 80")
    assert (workspace / "app.ini").read_bytes() == before
    assert operator.asks == []
    assert parse_evidence(toolbox.evidence[-1]).output.startswith("ERROR: apply_edit")


def test_apply_edit_of_text_not_there_names_the_lines_most_like_its_first_line(
    workspace,
):
    toolbox, operator = approving(workspace)
    before = (workspace / "app.ini").read_bytes()
    old = "host = example.com\nport = 80"
    message = refusal(toolbox, "apply_edit", {"path": "app.ini", "old": old, "new": ""})
    assert "old was found 0 times in" in message
    assert message.splitlines()[1] == "L2: host = example.org"
    assert (workspace / "app.ini").read_bytes() == before
    # A line copied with its number from read_file_lines is told so.
    numbered = {"path": "app.ini", "old": "L3: port = 80", "new": "x"}
    assert "Leave the 'L<n>: ' line numbers out" in refusal(
        toolbox, "apply_edit", numbered
    )
    assert operator.asks == []


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("", "x", "needs the text to replace in old"),
        ("port = 80", "port = 80", "old and new are the same"),
    ],
)
def test_apply_edit_refuses_an_empty_or_unchanged_old(workspace, old, new, said):
    toolbox, _ = approving(workspace)
    args = {"path": "app.ini", "old": old, "new": new}
    assert said in refusal(toolbox, "apply_edit", args)
    assert (workspace / "app.ini").read_text() == CONFIG


def test_apply_edit_of_a_missing_binary_or_huge_file_is_a_clear_error(workspace):
    toolbox, _ = approving(workspace)
    (workspace / "blob.bin").write_bytes(b"a\x00b")
    (workspace / "huge.txt").write_text("x\n" * (600 << 10))
    (workspace / "app.yaml").write_text("port: 80\n")
    args = {"old": "a", "new": "b"}
    missing = refusal(toolbox, "apply_edit", {"path": "app.yml", **args})
    assert "no such file" in missing and "app.yaml" in missing
    assert "binary" in refusal(toolbox, "apply_edit", {"path": "blob.bin", **args})
    assert "sed -i" in refusal(toolbox, "apply_edit", {"path": "huge.txt", **args})


# Law 1


def test_an_edit_of_a_file_that_was_there_asks_with_the_diff_and_a_denial_keeps_it(
    workspace,
):
    operator = Operator(False)
    toolbox = Toolbox(workspace, approve=operator)
    path = workspace / "app.ini"
    before, stamp = path.read_bytes(), path.stat()
    args = {"path": "app.ini", "old": "host = example.org", "new": "host = x"}

    output = toolbox.call("apply_edit", args)

    assert output == (
        f"[LAW1] apply_edit would change existing file: {path} — denied by the operator"
    )
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == stamp.st_mtime_ns
    (ask,) = operator.asks
    assert ask.command == f"apply_edit {path}"
    (change,) = ask.changes
    assert change["kind"] == "overwritten" and change["path"] == str(path)
    assert "-host = example.org\n+host = x" in change["diff"]
    assert (change["size_before"], change["size_after"]) == (
        len(CONFIG),
        len(CONFIG) - 10,
    )
    operator.decision = True
    toolbox.call("apply_edit", args)
    assert path.read_text() == CONFIG.replace("example.org", "x")


def test_write_file_over_a_text_file_shows_its_diff_too(workspace):
    operator = Operator(False)
    Toolbox(workspace, approve=operator).call(
        "write_file", {"path": "app.ini", "content": "[server]\n"}
    )
    assert "-host = example.org" in operator.asks[0].changes[0]["diff"]
    assert (workspace / "app.ini").read_text() == CONFIG


def test_a_parked_edit_carries_its_diff_and_resumes_on_the_same_ask(workspace):
    args = {"path": "app.ini", "old": "port = 80\n\n", "new": "port = 81\n\n"}

    def parks(ask):
        raise ToolPaused(pending_call(ask))

    with pytest.raises(ToolPaused) as paused:
        Toolbox(workspace, approve=parks).call("apply_edit", args)
    stored = json.loads(json.dumps(paused.value.pending))
    assert "-port = 80\n+port = 81" in stored["ask"]["changes"][0]["diff"]
    assert (workspace / "app.ini").read_text() == CONFIG

    def decided(ask):  # as the executor's handler answers a resumed call
        return json.loads(json.dumps(pending_call(ask)))["ask"] == stored["ask"]

    Toolbox(workspace, approve=decided).call("apply_edit", args)
    assert (workspace / "app.ini").read_text() == CONFIG.replace(
        "port = 80\n\n", "port = 81\n\n"
    )


def test_an_edit_approved_after_the_file_changed_meanwhile_writes_nothing(workspace):
    path = workspace / "app.ini"

    def rewrites_then_approves(ask):
        path.write_text(CONFIG + "added = 1\n")
        return True

    toolbox = Toolbox(workspace, approve=rewrites_then_approves)
    message = refusal(
        toolbox, "apply_edit", {"path": "app.ini", "old": "host", "new": "name"}
    )
    assert "changed while the edit waited for approval; nothing was written" in message
    assert path.read_text() == CONFIG + "added = 1\n"


def test_a_file_the_toolbox_created_is_edited_without_asking(workspace):
    operator = Operator(False)
    toolbox = Toolbox(workspace, approve=operator)
    toolbox.call("create_file", {"path": "new/notes.md", "content": "a\nb\n"})
    toolbox.call("apply_edit", {"path": "new/notes.md", "old": "b", "new": "c"})
    assert operator.asks == []
    assert (workspace / "new/notes.md").read_text() == "a\nc\n"


# create_file


def test_create_file_makes_a_new_file_and_refuses_one_that_exists(workspace):
    toolbox, operator = approving(workspace)
    said = toolbox.call("create_file", {"path": "d/e/new.txt", "content": "new\n"})
    assert said.startswith("wrote 4 bytes to ")
    assert (workspace / "d/e/new.txt").read_text() == "new\n"
    before = (workspace / "app.ini").read_bytes()
    message = refusal(toolbox, "create_file", {"path": "app.ini", "content": "x"})
    assert message.endswith(
        "create_file makes new files only, nothing was written "
        "(apply_edit changes it, write_file replaces it)"
    )
    assert (workspace / "app.ini").read_bytes() == before
    assert operator.asks == []


def test_create_files_write_refuses_a_file_that_appeared_since_it_looked(workspace):
    path = workspace / "late.txt"
    path.write_text("theirs\n")
    with pytest.raises(ToolError, match="already exists"):
        fileio.write_text(path, "mine\n", roots=[workspace], create=True)
    assert path.read_text() == "theirs\n"


# Confinement: refused exactly as write_file is


EDITS = [
    ("create_file", {"content": "x"}),
    ("apply_edit", {"old": "top", "new": "pwned"}),
    ("read_file_lines", {"start": 1, "end": 2}),
]


@pytest.mark.parametrize(("name", "extra"), EDITS)
@pytest.mark.parametrize("where", ["../outside.txt", "link.txt", "/etc/hostname"])
def test_a_path_out_of_the_workspace_is_refused_as_write_file_refuses_it(
    workspace, tmp_path, name, extra, where
):
    secret = tmp_path / "outside.txt"
    secret.write_text("top secret\n")
    (workspace / "link.txt").symlink_to(secret)
    toolbox, operator = approving(workspace)
    written = refusal(toolbox, "write_file", {"path": where, "content": "x"})
    assert "outside the workspace" in written
    assert refusal(toolbox, name, {"path": where, **extra}) == written
    assert secret.read_text() == "top secret\n"
    assert operator.asks == []


def test_an_allowed_path_is_edited_like_the_workspace(workspace, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "data.txt").write_text("a\nb\n")
    toolbox, operator = approving(workspace, allowed_paths=[shared])
    target = str(shared / "data.txt")
    toolbox.call("apply_edit", {"path": target, "old": "b", "new": "c"})
    assert (shared / "data.txt").read_text() == "a\nc\n"
    assert [a.command for a in operator.asks] == [f"apply_edit {target}"]


# GGS, memory


def test_ggs_blocks_and_memorys_avoid_refuse_the_editing_tools_by_their_path(
    workspace,
):
    target = "app.ini"
    config = ToolboxConfig(blocked_targets=[target], blocked_tools=["create_file"])
    toolbox = Toolbox(workspace, config, approve=Operator(True))
    assert "create_file" not in [s.name for s in toolbox.specs()]
    assert "blocked by GGS: tool 'create_file'" in refusal(
        toolbox, "create_file", {"path": "n.txt", "content": "x"}
    )
    edit = {"path": target, "old": "host", "new": "name"}
    assert "blocked by GGS: path 'app.ini'" in refusal(toolbox, "apply_edit", edit)
    lines = {"path": target, "start": 1, "end": 2}
    assert "blocked by GGS" in refusal(toolbox, "read_file_lines", lines)

    avoid = TargetSignal(
        tool="apply_edit",
        target=target,
        action="Avoid",
        attention=0.85,
        decision=-0.85,
        content="edit app.ini: broke the server",
    )
    stored = RunState(memory_targets=[avoid]).model_dump_json()
    rules = RunState.model_validate_json(stored).memory_rules()
    remembering = Toolbox(workspace, memory_rules=rules, approve=Operator(True))
    message = refusal(remembering, "apply_edit", edit)
    assert message.startswith("avoided by memory: apply_edit 'app.ini'")
    assert (workspace / "app.ini").read_text() == CONFIG
    assert not (workspace / "n.txt").exists()


# read_file_lines


def test_read_file_lines_shows_the_span_numbered_with_the_files_length(workspace):
    toolbox = Toolbox(workspace)
    said = toolbox.call("read_file_lines", {"path": "app.ini", "start": 2, "end": 3})
    assert said == "[app.ini: lines 2-3 of 6]\nL2: host = example.org\nL3: port = 80"
    # Numbers as text are read; an end past the last line stops at it.
    said = toolbox.call(
        "read_file_lines", {"path": "app.ini", "start": "5", "end": "99"}
    )
    assert said == "[app.ini: lines 5-6 of 6]\nL5: [client]\nL6: port = 80"
    assert parse_evidence(toolbox.evidence[-1]).target == "app.ini"


@pytest.mark.parametrize(
    ("start", "end", "said"),
    [
        (7, 9, "app.ini has 6 lines; start 7 is past its end"),
        (4, 2, "end 2 is before start 4"),
        (0, 2, "start must be at least 1"),
        ("first", 2, "needs start as a whole number, not 'first'"),
        (1, None, "needs end as a whole number, not None"),
    ],
)
def test_read_file_lines_refuses_a_bad_range_clearly(workspace, start, end, said):
    args = {"path": "app.ini", "start": start, "end": end}
    assert said in refusal(Toolbox(workspace), "read_file_lines", args)


def test_read_file_lines_of_a_missing_or_binary_file_is_a_clear_error(workspace):
    toolbox = Toolbox(workspace)
    (workspace / "blob.bin").write_bytes(b"\x7fELF\x00\x01")
    args = {"start": 1, "end": 2}
    missing = refusal(toolbox, "read_file_lines", {"path": "app.cfg", **args})
    assert missing.startswith("no such file:")
    binary = refusal(toolbox, "read_file_lines", {"path": "blob.bin", **args})
    assert "looks like a binary file" in binary


def test_read_file_lines_caps_the_span_the_output_and_long_lines(workspace):
    toolbox = Toolbox(workspace)
    (workspace / "many.txt").write_text("".join(f"{n}\n" for n in range(1, 501)))
    said = toolbox.call("read_file_lines", {"path": "many.txt", "start": 1, "end": 500})
    rows = said.splitlines()
    assert rows[0] == (
        f"[many.txt: lines 1-{LINES_SPAN} of 500; cut at the {LINES_SPAN}-line cap, "
        f"read from line {LINES_SPAN + 1} for more]"
    )
    assert rows[-1] == f"L{LINES_SPAN}: {LINES_SPAN}"
    (workspace / "wide.txt").write_text(("w" * 3000 + "\n") * 20)
    said = toolbox.call("read_file_lines", {"path": "wide.txt", "start": 1, "end": 20})
    assert said.splitlines()[0].endswith(
        "cut at the output cap, read from line 7 for more]"
    )
    assert said.splitlines()[1] == "L1: " + "w" * 500 + " […]"
    assert len(said) < 4000


def test_read_file_lines_reads_a_huge_file_only_as_far_as_its_bound(workspace):
    huge = workspace / "huge.log"
    line = b"0123456789abcdef" * 4 + b"\n"  # 65 bytes
    with open(huge, "wb") as handle:
        handle.truncate(0)
        for _ in range((SCAN_BYTES // len(line)) // 4096 + 2):
            handle.write(line * 4096)
    toolbox = Toolbox(workspace)
    said = toolbox.call("read_file_lines", {"path": "huge.log", "start": 3, "end": 4})
    assert said.splitlines()[0].startswith("[huge.log: lines 3-4 of more than ")
    far = os.path.getsize(huge) // len(line)
    message = refusal(
        toolbox, "read_file_lines", {"path": "huge.log", "start": far, "end": far}
    )
    assert "lies past the first 64 MiB" in message and "sed -n" in message


def test_a_read_file_lines_output_that_says_not_found_is_data(workspace):
    (workspace / "log.txt").write_text("GET /x 404 not found\n")
    toolbox = Toolbox(workspace)
    toolbox.call("read_file_lines", {"path": "log.txt", "start": 1, "end": 1})
    assert not is_failed_call(parse_evidence(toolbox.evidence[-1]))
