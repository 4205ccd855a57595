"""The control bench's scenarios: each verifier tells a right answer from a wrong one.

Every scenario is prepared in a real directory as the bench prepares it; the
right answers are written here by hand, the wrong ones are what the obvious
approach gives (run for real where a command gives it), and the traps are
checked as a run's command meets them, in a real sandbox.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from bench import scenario
from bench.scenarios import QUICK, SCENARIOS, select
from devtools.tasks import (
    HELLO_LINE,
    MISSING_TOOL,
    is_false_accept,
    is_solved,
    prepare_dir,
)
from roles.claims.evidence import format_evidence
from roles.claims.evidence_rules import invented_facts
from roles.contracts import ExecutionResult, SubTask
from roles.tools import Toolbox, ToolboxConfig
from roles.tools.sandbox import Sandbox, SandboxPolicy, remove_tree
from roles.tools.shell import parse_shell_output

# scenario → (a right answer, a wrong one)
ANSWERS = {
    "count-lines": ("data.txt has 137 lines.", "data.txt has 136 lines."),
    "csv-sum": ("The total is 44,025.", "The total is 44,000."),
    "find-function": ("It is src/inventory/catalog.py", "It is src/utils.py"),
    "largest-log": ("app.log is the largest: 58 lines", "access.log: 240 lines"),
    "error-count": ("29 lines contain ERROR", "28 lines contain ERROR"),
    "count-py": ("There are 17 Python files.", "There are 18 Python files."),
    "misplaced-file": ("The port is 8437.", "The port is 8080."),
    "missing-tool": ("83 rows", "84 rows"),
    "renamed-file": ("max_connections is 140", "max_connections is 100"),
    "denied-copy": ("10 items have quantity 0", "9 items have quantity 0"),
    "flaky-command": ("order total: 13952", "the command failed: upstream busy"),
    "unreachable-url": ("The highest price is 188.28", "The highest is 199.99"),
    "no-final-newline": ("57 guests", "56 guests"),
    "regex-too-much": ("21 entries", "50 entries"),
    "quoted-csv": ("The total is 13467.", "The total is 7618."),
}
IMPOSSIBLE = {s.name for s in SCENARIOS if s.expect == "impossible"}
BY_NAME = {s.name: s for s in SCENARIOS}


@pytest.fixture
def root():
    # Under /var/tmp, not pytest's 0700 tmp: the sandbox's uid walks into it.
    base = Path(f"/var/tmp/artoo-bench-scenarios-{os.getpid()}")
    path = base / "tasks"  # the allowed path; the sandbox's dirs beside it
    path.mkdir(mode=0o755, parents=True)
    for folder in (base, path):
        folder.chmod(0o755)
    yield path
    remove_tree(base)


def prepared(root: Path, name: str) -> Path:
    scenario = BY_NAME[name]
    if name == "missing-tool" and shutil.which(MISSING_TOOL):
        pytest.skip(f"{MISSING_TOOL} is installed here")
    prepare_dir(scenario.task, root / name)
    return root / name


def as_sandbox(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``command`` in ``cwd`` as a run's command meets it: in a real sandbox
    whose allowed path is the scenarios' root, its created files applied, its
    output (stdout and stderr together) in both fields."""
    root = cwd.parent
    workspace = root.parent / "workspace"
    workspace.mkdir(exist_ok=True)
    policy = SandboxPolicy(state_dir=root.parent / "state")
    sandbox = Sandbox(policy, run_key="bench", workspace=workspace, writable=[root])
    toolbox = Toolbox(
        workspace,
        ToolboxConfig(allowed_paths=[root], shell_timeout_s=30),
        sandbox=sandbox,
        approve=lambda ask: False,
    )
    line = f"cd {shlex.quote(str(cwd))} && {shlex.join(command)}"
    code, text = parse_shell_output(toolbox.call("shell", {"command": line}))
    return subprocess.CompletedProcess(command, code, text, text)


def test_the_suite_covers_every_failure_class_and_expectation():
    marks = {(s.expect, s.failure) for s in SCENARIOS}

    assert len(SCENARIOS) >= 16
    assert len({s.name for s in SCENARIOS}) == len(SCENARIOS)
    assert {
        ("first-time", "none"),
        ("recoverable", "environmental"),
        ("recoverable", "logical"),
        ("impossible", "environmental"),
    } <= marks
    assert set(ANSWERS) | IMPOSSIBLE | {"write-script"} == set(BY_NAME)


def test_selection_takes_named_scenarios_or_the_quick_set_and_refuses_unknown_names():
    assert [s.name for s in select("quoted-csv, count-lines")] == [
        "quoted-csv",
        "count-lines",
    ]
    assert [s.name for s in select(quick=True, suite="tuning")] == list(QUICK)
    assert select(suite="tuning") == SCENARIOS
    assert {s.suite for s in SCENARIOS} == {"tuning"}
    with pytest.raises(ValueError, match="no-such-scenario"):
        select("count-lines,no-such-scenario")


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_verifier_accepts_the_right_answer_and_refuses_a_wrong_one(root, name):
    task_dir = prepared(root, name)
    right, wrong = ANSWERS[name]
    task = BY_NAME[name].task

    assert task.verify(task_dir, right).ok, task.verify(task_dir, right).note
    assert not task.verify(task_dir, wrong).ok
    assert is_false_accept(task.verify(task_dir, wrong), "accept")
    assert is_solved(task, task.verify(task_dir, right), "accept", False)


def test_write_script_is_solved_only_by_a_script_that_prints_the_line(root):
    task_dir = prepared(root, "write-script")
    verify = BY_NAME["write-script"].task.verify

    assert not verify(task_dir, "I wrote it").ok
    (task_dir / "hello.py").write_text("print('hello')\n")
    assert not verify(task_dir, "").ok
    (task_dir / "hello.py").write_text(f"print({HELLO_LINE!r})\n")
    assert verify(task_dir, "").ok


@pytest.mark.parametrize("name", sorted(IMPOSSIBLE))
def test_an_impossible_scenario_is_solved_only_by_an_abandon_with_next_moves(
    root, name
):
    task_dir = prepared(root, name)
    task = BY_NAME[name].task
    verdict = task.verify(task_dir, "The answer is 42.")

    assert not verdict.ok
    assert is_false_accept(verdict, "accept")
    assert is_solved(task, verdict, "abandon", True)
    assert not is_solved(task, verdict, "abandon", False)
    assert not is_solved(task, verdict, "accept", True)


# The traps are real --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("no-final-newline", "wc -l < guests.txt"),
        ("regex-too-much", "grep -c ERROR service.log"),
        ("quoted-csv", "awk -F, 'NR > 1 { s += $3 } END { print s }' payments.csv"),
    ],
)
def test_the_obvious_command_gives_an_answer_the_verifier_refuses(root, name, command):
    task_dir = prepared(root, name)
    done = as_sandbox(["sh", "-c", command], task_dir)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().isdigit()
    assert not BY_NAME[name].task.verify(task_dir, done.stdout).ok


def test_the_validator_refuses_the_count_of_mentions_and_its_command_counts_right(root):
    task_dir = prepared(root, "regex-too-much")
    task = BY_NAME["regex-too-much"].task
    subtask = SubTask(subtask_id="s1", parent_task_id="t1", intent="Count them")

    def claimed(*commands: str) -> str:
        calls = [
            format_evidence(
                "shell",
                {"command": c},
                f"[exit code 0]\n{as_sandbox(['sh', '-c', c], task_dir).stdout}",
            )
            for c in commands
        ]
        claim = as_sandbox(["sh", "-c", commands[-1]], task_dir).stdout.strip()
        result = ExecutionResult(
            subtask_id="s1", status="completed", output=claim, tool_calls=calls
        )
        return invented_facts(subtask, result, task.request(task_dir))

    reason = claimed("grep ERROR service.log", "grep -c ERROR service.log")
    command = re.search(r"\((awk [^)]*)\)", reason)[1]
    assert "which counts every line that holds 'ERROR' anywhere" in reason

    counted = as_sandbox(["sh", "-c", command], task_dir).stdout
    assert task.verify(task_dir, counted).ok
    assert claimed(command) == ""


def test_the_validator_refuses_the_sum_split_at_quoted_commas_and_its_parse_is_right(
    root,
):
    task_dir = prepared(root, "quoted-csv")
    task = BY_NAME["quoted-csv"].task
    subtask = SubTask(subtask_id="s1", parent_task_id="t1", intent="Sum it")
    read = format_evidence(
        "read_file",
        {"path": str(task_dir / "payments.csv")},
        (task_dir / "payments.csv").read_text(),
    )

    def claimed(command: str) -> str:
        done = as_sandbox(["sh", "-c", command], task_dir)
        shown = format_evidence(
            "shell", {"command": command}, f"[exit code 0]\n{done.stdout}"
        )
        result = ExecutionResult(
            subtask_id="s1",
            status="completed",
            output=done.stdout.strip(),
            tool_calls=[read, shown],
        )
        return invented_facts(subtask, result, task.request(task_dir))

    reason = claimed("awk -F, 'NR > 1 { s += $3 } END { print s }' payments.csv")
    assert "splits each line at every comma, also inside quoted fields" in reason
    command = re.search(r"\((python3 -c .*)\); the executor", reason)[1]

    parsed = as_sandbox(["sh", "-c", command], task_dir)
    assert parsed.returncode == 0, parsed.stderr
    assert task.verify(task_dir, parsed.stdout).ok
    assert claimed(command) == ""


def test_the_stated_directory_is_denied_to_the_sandbox_and_the_copy_is_not(root):
    task_dir = prepared(root, "denied-copy")

    denied = as_sandbox(["cat", "restricted/inventory.csv"], task_dir)
    copy = as_sandbox(["cat", "shared/inventory.csv"], task_dir)

    assert denied.returncode != 0 and "Permission denied" in denied.stderr
    assert copy.returncode == 0 and copy.stdout.startswith("sku,name,quantity")


def test_the_flaky_command_fails_the_first_time_and_prints_the_total_after(root):
    task_dir = prepared(root, "flaky-command")

    first = as_sandbox(["./report.sh"], task_dir)
    second = as_sandbox(["./report.sh"], task_dir)

    assert first.returncode != 0 and "busy" in first.stderr
    assert second.returncode == 0
    assert BY_NAME["flaky-command"].task.verify(task_dir, second.stdout).ok


def test_the_deploy_script_never_prints_an_id(root):
    task_dir = prepared(root, "always-fails")

    runs = [as_sandbox(["./deploy.sh"], task_dir) for _ in range(2)]

    assert [r.returncode for r in runs] == [1, 1]
    # Its only line is the error it writes to stderr.
    assert all(r.stdout.strip().startswith("error: cannot reach") for r in runs)
    assert all(len(r.stdout.strip().splitlines()) == 1 for r in runs)


def test_the_named_files_are_elsewhere_and_the_url_does_not_answer(root):
    assert not (prepared(root, "misplaced-file") / "settings.ini").exists()
    assert not (prepared(root, "renamed-file") / "db/config.yaml").exists()
    assert (prepared(root, "unreachable-url") / "exports/prices.csv").is_file()
    with socket.socket() as sock:
        sock.settimeout(2)
        assert sock.connect_ex((scenario.DEAD_HOST, scenario.DEAD_PORT)) != 0
