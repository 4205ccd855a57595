"""A file a failed command left is not read as data until something writes it again.

A download from a dead server through a redirect leaves an empty file; counting
its lines gives 0, which an answer must not rest on (a run once accepted "the
CSV file has 0 rows" for a report it never had).
"""

from __future__ import annotations

import pytest

from roles.claims.evidence import parse_evidence
from roles.tools.errors import ToolError
from tests.sandbox.conftest import have, make_toolbox, prepare
from tests.unit.test_tools_toolbox import Operator

# A port nothing listens on: the connection is refused at once.
DEAD = "http://127.0.0.1:9/reports/q3.csv"

pytestmark = pytest.mark.skipif(not have("curl"), reason="needs curl")


@pytest.fixture
def toolbox(policy, base):
    workspace = base / "ws"
    prepare(workspace)
    return make_toolbox(policy, workspace, Operator(True))


def test_a_failed_downloads_leftover_is_refused_to_a_count_and_a_read(toolbox):
    left = toolbox.call("shell", {"command": f"curl -s {DEAD} > q3.csv"})
    assert left.startswith("[exit code 7]")
    assert (toolbox.workspace / "q3.csv").read_bytes() == b""

    for name, args in (
        ("shell", {"command": "wc -l q3.csv"}),
        ("shell", {"command": f"wc -l {toolbox.workspace}/q3.csv"}),
        ("read_file", {"path": "q3.csv"}),
    ):
        with pytest.raises(ToolError, match="q3.csv is what `curl -s") as refused:
            toolbox.call(name, args)
        assert "(exit code 7)" in str(refused.value)
    # Nothing of what was refused is evidence: every entry after the download
    # is an error, and the count's 0 is shown nowhere.
    entries = [parse_evidence(e) for e in toolbox.evidence[1:]]
    assert all(e.output.startswith("ERROR: ") for e in entries)
    assert not any("0 q3.csv" in e.output for e in entries)


def test_a_leftover_written_again_by_a_command_that_succeeds_is_data(toolbox):
    toolbox.call("shell", {"command": f"curl -s {DEAD} > q3.csv"})
    # Trying the download again is not refused: it writes the file.
    again = toolbox.call("shell", {"command": f"curl -s -o q3.csv {DEAD}"})
    assert again.startswith("[exit code 7]")
    with pytest.raises(ToolError):
        toolbox.call("shell", {"command": "wc -l q3.csv"})

    toolbox.call("shell", {"command": "printf 'a\\nb\\n' > q3.csv"})
    assert toolbox.call("shell", {"command": "wc -l q3.csv"}) == (
        "[exit code 0]\n2 q3.csv\n"
    )


def test_write_file_and_delete_clear_a_leftover_and_other_files_are_untouched(
    toolbox,
):
    toolbox.call("shell", {"command": f"curl -s {DEAD} > a.csv"})
    toolbox.call("shell", {"command": f"curl -s {DEAD} > b.csv"})
    # A file the failed command did not write, named beside it, stays data.
    assert "precious" in toolbox.call("read_file", {"path": "victim.txt"})
    # A longer name that only contains the leftover's is another file.
    toolbox.call("shell", {"command": "echo x > xa.csv.bak"})
    assert toolbox.call("shell", {"command": "cat xa.csv.bak"}).endswith("x\n")

    toolbox.call("write_file", {"path": "a.csv", "content": "1\n2\n3\n"})
    assert toolbox.call("read_file", {"path": "a.csv"}).startswith("1\n2")
    toolbox.call("shell", {"command": "rm b.csv"})
    toolbox.call("shell", {"command": "echo fresh > b.csv"})
    assert toolbox.call("shell", {"command": "cat b.csv"}).endswith("fresh\n")
