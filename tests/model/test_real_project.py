"""The local model works through one project: a flag and its test in a small CLI.

The project runs on the same cluster as the prepared tasks, in a repository
prepared under the session's task root. The operator approves every Law 1
prompt of the project's runs (the repository is the project's own) and cancels
the project after ``PROJECT_TIMEOUT_S``. The verifier runs the repository's
tests and the new flag itself; what the project claims is not evidence.
Asserted: a project the verifier finds wrong is never ``complete`` (a false
accept, asserted with the session's others), and a cancelled project ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devtools.apiclient import TERMINAL, Api, Db, create_user, wait_for
from devtools.driver import Outcome, answer_approval, token_split
from devtools.tasks import Verdict
from tests.model.report import Row

pytestmark = [pytest.mark.model, pytest.mark.timeout(3600)]

PROJECT_TIMEOUT_S = 30 * 60
CANCEL_GRACE_S = 180
POLL_S = 2.0
PROJECT_TERMINAL = ("complete", "failed", "cancelled")

GREET = '''\
"""Print a greeting."""

import argparse


def greeting(name):
    return f"Hello, {name}!"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Print a greeting.")
    parser.add_argument("name")
    args = parser.parse_args(argv)
    print(greeting(args.name))


if __name__ == "__main__":
    main()
'''

TEST_GREET = """\
import unittest

from greet import greeting


class GreetingTest(unittest.TestCase):
    def test_greeting(self):
        self.assertEqual(greeting("Ann"), "Hello, Ann!")


if __name__ == "__main__":
    unittest.main()
"""

REQUEST = (
    "In {dir}, add a --json flag to greet.py: with it, `python greet.py --json Ann` "
    'prints {{"greeting": "Hello, Ann!"}} as JSON instead of the plain line. '
    "Add a test for the flag to test_greet.py; `python -m unittest` must pass."
)


def prepare_repo(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "greet.py").write_text(GREET)
    (root / "test_greet.py").write_text(TEST_GREET)
    # Root's, as the tasks' root: a command writes it as root's files.
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def verify_repo(root: Path) -> Verdict:
    """Run the repository's tests and the flag; count the tests that ran."""
    env = {"PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1"}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, *args],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    tests = run("-m", "unittest", "-v")
    ran = tests.stderr.count(" ... ")
    if tests.returncode != 0:
        return Verdict(False, f"python -m unittest failed: {tests.stderr[-300:]!r}")
    if ran < 2:
        return Verdict(False, f"python -m unittest ran {ran} test(s): none added")
    flag = run("greet.py", "--json", "Ann")
    try:
        printed = json.loads(flag.stdout)
    except ValueError:
        return Verdict(False, f"greet.py --json Ann printed {flag.stdout[:200]!r}")
    if printed != {"greeting": "Hello, Ann!"}:
        return Verdict(False, f"greet.py --json Ann printed {printed!r}")
    plain = run("greet.py", "Ann").stdout.strip()
    if plain != "Hello, Ann!":
        return Verdict(False, f"greet.py Ann now prints {plain!r}")
    return Verdict(True, f"{ran} tests pass and --json prints the greeting")


def drive_project(api: Api, project_id: str, out: Outcome) -> dict:
    """Approve every Law 1 prompt of the project's runs until it ends."""
    start = time.monotonic()
    cancelled = [False]

    def ended() -> dict | None:
        project = api.get(f"/api/projects/{project_id}").json()
        if project["status"] in PROJECT_TERMINAL:
            return project
        for run in project["runs"]:
            if run["status"] in TERMINAL:
                continue
            out.run_id = run["id"]
            for ask in api.run(run["id"])["pending_approvals"]:
                answer_approval(api, out, ask, "approve", None)
            if run["status"] == "needs_input":
                api.post_json(f"/api/runs/{run['id']}/answer", {"answer": ""})
        if not cancelled[0] and time.monotonic() - start > PROJECT_TIMEOUT_S:
            api.post_json(f"/api/projects/{project_id}/cancel", {})
            cancelled[0] = True
        return None

    project = wait_for(
        ended,
        PROJECT_TIMEOUT_S + CANCEL_GRACE_S,
        POLL_S,
        what=f"project {project_id} ended",
    )
    out.wall_s = time.monotonic() - start
    out.cancelled = cancelled[0]
    return project


def test_a_project_adds_a_flag_and_its_test(cluster, tasks_root, results):
    root = tasks_root / "project-json-flag"
    prepare_repo(root)
    api = Api(cluster.url, create_user(cluster, "model-project"))
    row = Row("project-json-flag", "project", note="the project did not finish")
    results.append(row)
    created = api.post_json(
        "/api/projects",
        {"request": REQUEST.format(dir=root), "directory": str(root)},
    )
    assert created.status == 201, created.text
    project_id = created.json()["id"]
    row.run_id = f"project {project_id}"

    out = Outcome(project_id)
    project = drive_project(api, project_id, out)
    verdict = verify_repo(root)
    runs = [api.run(r["id"]) for r in project["runs"]]
    # The project's own agents (scope, planner, QA, assessor) count tokens whole.
    agent_tokens = sum(u["tokens"] for u in (project["usage"] or {}).values())

    row.solved = verdict.ok and project["status"] == "complete"
    row.false_accept = project["status"] == "complete" and not verdict.ok
    row.directive = project["status"]
    row.path = "→".join(r["directive"] or r["status"] for r in runs) or "-"
    row.rounds = len(runs)
    row.tokens = sum(r["tokens"] for r in runs) + agent_tokens
    for run in runs:
        run_prompt, run_completion = token_split(Db(cluster), run["id"])
        row.prompt_tokens += run_prompt
        row.completion_tokens += run_completion
    row.wall_s = out.wall_s
    row.note = (
        f"{verdict.note}; {len(project['milestones'])} milestone(s), "
        f"{project['completed_tasks']} task(s) done, {len(runs)} run(s), "
        f"{agent_tokens} tokens of the project's own agents (not in the "
        "prompt/completion columns, which are the runs')"
        + (f"; reason: {project['reason'][:200]}" if project["reason"] else "")
        + ("; cancelled after 30 min" if out.cancelled else "")
    )
    print(
        f"\n[model] project-json-flag: solved={row.solved} "
        f"false_accept={row.false_accept} status={project['status']} "
        f"runs={row.path} wall={out.wall_s:.0f}s approvals={len(out.approvals)}"
        f"\n[model]   {row.note}\n[model]   remit: {project['remit'][:300]!r}",
        flush=True,
    )
    assert project["status"] in PROJECT_TERMINAL
