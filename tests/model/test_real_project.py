"""The local model works through three projects of growing size.

``devtools/projecttasks.py`` prepares each repository under the session's task
root: a flag and its test in a small CLI, a function and its tests in a small
package, a bug in a module whose failing test names it. Each project is
created with its own verification command (the repository's tests) and
protected paths. The operator approves every Law 1 prompt of the project's
runs (the repository is the project's own) and cancels the project after
``PROJECT_TIMEOUT_S``.

The test judges the outcome itself; what the project claims is not evidence.
Its verifier runs the repository's tests and the asked behaviour on the final
directory, and the tests again at each commit a milestone was verified at. A
false done is a milestone accepted at a commit whose tests fail here, or a
project ``complete`` whose directory the verifier refuses; it is asserted
never to happen with the session's false accepts, after the table is out. Each
project's row: finished or not, task runs, escalations, tokens, wall time and
false done (``tests/model/report.py``).
"""

from __future__ import annotations

import json
import time

import pytest

from devtools.apiclient import TERMINAL, Api, Db, create_user, wait_for
from devtools.driver import Outcome, answer_approval, token_split
from devtools.projecttasks import PROJECT_TASKS, ProjectTask, false_dones, prepare_repo
from tests.model.report import PROJECTS, Row

pytestmark = [pytest.mark.model, pytest.mark.timeout(3600)]

PROJECT_TIMEOUT_S = 30 * 60
CANCEL_GRACE_S = 180
POLL_S = 2.0
PROJECT_TERMINAL = ("complete", "failed", "cancelled")


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


def records(db: Db, project_id: str, type_: str) -> list[dict]:
    """Return the payloads of the project's bus messages of one type."""
    rows = db.rows(
        "SELECT payload FROM artoo_web_busmessage WHERE project_id = ? AND type = ? "
        "ORDER BY id",
        (project_id.replace("-", ""), type_),
    )
    return [json.loads(payload) for (payload,) in rows]


@pytest.mark.parametrize("task", PROJECT_TASKS, ids=lambda t: t.name)
def test_a_project_is_done_only_when_its_verifier_agrees(
    task: ProjectTask, cluster, tasks_root, results
):
    root = tasks_root / task.name
    prepare_repo(task, root)
    # An account per project: a second create_user of one name fails.
    api = Api(cluster.url, create_user(cluster, f"model-{task.name}"))
    row = Row(task.name, "project", PROJECTS, note="the project did not finish")
    results.append(row)
    created = api.post_json(
        "/api/projects",
        {
            "request": task.request(root),
            "directory": str(root),
            "verify": list(task.verify),
            "protected": list(task.protected),
        },
    )
    assert created.status == 201, created.text
    project_id = created.json()["id"]
    row.run_id = f"project {project_id}"

    out = Outcome(project_id)
    project = drive_project(api, project_id, out)
    verdict = task.verify_repo(root)
    db = Db(cluster)
    verified = [
        r["commit"]
        for r in records(db, project_id, "RecordVerification")
        if r["passed"] and r["commit"]
    ]
    false = false_dones(root, verified)
    if project["status"] == "complete" and not verdict.ok:
        false.append(f"complete, and the verifier says: {verdict.note}")
    runs = [api.run(r["id"]) for r in project["runs"]]
    # The project's own agents (scope, planner, QA, assessor) count tokens whole.
    agent_tokens = sum(u["tokens"] for u in (project["usage"] or {}).values())

    row.solved = verdict.ok and project["status"] == "complete"
    row.false_accept = bool(false)
    row.directive = project["status"]
    row.path = "→".join(r["directive"] or r["status"] for r in runs) or "-"
    row.rounds = len(runs)
    row.escalations = len(records(db, project_id, "RecordEscalation"))
    row.tokens = sum(r["tokens"] for r in runs) + agent_tokens
    for run in runs:
        run_prompt, run_completion = token_split(db, run["id"])
        row.prompt_tokens += run_prompt
        row.completion_tokens += run_completion
    row.wall_s = out.wall_s
    row.note = (
        f"{verdict.note}; {len(project['milestones'])} milestone(s), "
        f"{len(verified)} verified, {project['completed_tasks']} task(s) done, "
        f"{len(runs)} run(s) ({row.path}), {agent_tokens} tokens of the "
        "project's own agents"
        + (f"; false done: {'; '.join(false)}" if false else "")
        + (f"; reason: {project['reason'][:200]}" if project["reason"] else "")
        + ("; cancelled after 30 min" if out.cancelled else "")
    )
    print(
        f"\n[model] {task.name}: finished={project['status'] == 'complete'} "
        f"verifier={verdict.ok} false_done={row.false_accept} "
        f"status={project['status']} tasks_run={row.rounds} "
        f"escalations={row.escalations} tokens={row.tokens} "
        f"wall={out.wall_s:.0f}s approvals={len(out.approvals)}"
        f"\n[model]   {row.note}\n[model]   remit: {project['remit'][:300]!r}",
        flush=True,
    )
    assert project["status"] in PROJECT_TERMINAL
