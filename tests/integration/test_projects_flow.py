"""Projects end to end: a real worker, the bus, and each task as a real Run.

The project agents (Scope, TaskPlan, QA, Assessor) are scripted per test; each
task's Run goes through R1–R4b with scripted roles that write the file the
task's plan names (``proj-<n>.txt``) into the project's directory.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from artoo_web import projects
from artoo_web.models import BusMessage, Project, Run
from tests.conftest import wait_until
from tests.integration.test_pipeline_llm import _call, accept, judge, plan, text_of
from tests.llm_server import ScriptedLLMServer, Step

pytestmark = pytest.mark.slow

FILE = re.compile(r"proj-\w+\.txt")


def named_file(request) -> str:
    found = FILE.findall(text_of(request))
    return found[-1] if found else "proj-none.txt"


def perceive(request) -> str:
    intent = f"ok-step write {named_file(request)}"
    spec = {"task_id": "project_task", "intent": intent, "constraints": {}}
    return json.dumps({**spec, "raw_input": intent})


def write(request) -> Step | str:
    """Write the file the subtask's intent (its request) names once, then report
    it written: the planner's steps beside it may name another."""
    found = FILE.findall(text_of(request))
    name = found[0] if found else "proj-none.txt"
    if not any(m.get("role") == "tool" for m in request.messages):
        arguments = {"path": name, "content": f"content of {name}\n"}
        return Step(tool_calls=(_call("write_file", arguments),))
    return json.dumps({"status": "completed", "output": f"wrote {name}"})


@pytest.fixture
def model(monkeypatch, settings, tmp_path):
    settings.WORKSPACE = tmp_path / "workspace"
    with ScriptedLLMServer() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ARTOO_LLM_RETRIES", "1")
        server.responder(perceive, role="R1")
        server.responder(lambda r: plan(f"ok-step write {named_file(r)}"), role="R2")
        server.responder(write, role="R3")
        server.responder(judge, role="R4a")
        server.responder(accept, role="R4b")
        server.default_reply(json.dumps({"passed": True}), role="QA")
        yield server


# Each milestone is done only when its command passes at the last commit.
NOTES_WRITTEN = "ls proj-*.txt"


def scope(server, *milestones: str, verify: tuple[str, ...] = (NOTES_WRITTEN,)) -> None:
    body = {
        "remit": "Notes files",
        "milestones": [{"description": m, "verify": list(verify)} for m in milestones],
    }
    server.reply("Scope", json.dumps(body))


def implement(server, name: str, **extra) -> None:
    body = {
        "action": "implement",
        "task_description": f"Write {name}",
        "implementation_plan": f"ok-step write {name} with its content",
        **extra,
    }
    server.reply("TaskPlan", json.dumps(body))


def planner(server, action: str, **extra) -> None:
    server.reply("TaskPlan", json.dumps({"action": action, **extra}))


def verdict(server, value: str, **extra) -> None:
    server.reply("Assessor", json.dumps({"verdict": value, **extra}))


def ended(project: Project, timeout: float = 120) -> Project:
    def done():
        fresh = Project.objects.get(id=project.id)
        return fresh if fresh.is_terminal else None

    return wait_until(done, timeout=timeout, what="the project's end")


def types(project: Project, *wanted: str) -> list[BusMessage]:
    return list(project.messages.filter(type__in=wanted).order_by("id"))


def commits(project: Project) -> list[str]:
    out = subprocess.run(
        [
            "git",
            "-c",
            "safe.directory=*",
            "-C",
            project.directory,
            "log",
            "--reverse",
            "--format=%s",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.splitlines()


def test_a_two_milestone_project_completes(celery_worker, user, model, client):
    scope(model, "User can read notes", "User can read more notes")
    implement(model, "proj-1.txt", carry_forward=["more notes"])
    planner(model, "milestone_done")
    implement(model, "proj-2.txt")
    planner(model, "milestone_done")
    verdict(model, "milestone_complete")
    verdict(model, "milestone_complete")
    project = ended(projects.create(user, "Write two notes files"))
    assert project.status == "complete", project.reason
    runs = list(Run.objects.filter(project=project).order_by("created_at"))
    assert [(r.dispatch_id, r.status) for r in runs] == [
        ("t1-a1", "done"),
        ("t2-a1", "done"),
    ]
    # A project's task is a change, whatever R1 made of its words.
    asks = [r.load_state().spec.asks for r in runs]
    assert [(q.answer, q.effect) for q in asks] == [("effect", "change")] * 2
    assert commits(project) == [
        "artoo: project start",
        "t1: Write proj-1.txt",
        "t2: Write proj-2.txt",
    ]
    done = [m.payload for m in types(project, "RecordDone")]
    assert [(d["milestone_index"], d["entry"]["task_id"]) for d in done] == [
        (0, "t1"),
        (1, "t2"),
    ]
    assert "content of proj-1.txt" in text_of(model.requests_for("QA")[0])
    assert set(project.usage) == {"scope_agent", "task_planner", "qa", "assessor"}
    assert all(row["tokens"] > 0 for row in project.usage.values())
    finish = types(project, "FinishProject")[0].payload
    assert (finish["status"], finish["reason"]) == (
        "complete",
        "all 2 milestones complete",
    )
    checked = [m.payload for m in types(project, "RecordVerification")]
    assert [(c["passed"], c["results"][0]["exit_code"]) for c in checked] == [
        (True, 0),
        (True, 0),
    ]
    client.force_login(user)
    page = client.get(f"/projects/{project.id}/").content.decode()
    assert "Write proj-2.txt" in page and f"/runs/{runs[1].id}/" in page
    assert client.get(f"/runs/{runs[0].id}/").status_code == 200


def test_a_qa_failure_is_retried_by_the_task_planner_and_fixed(
    celery_worker, user, model
):
    scope(model, "User can read notes")
    implement(model, "proj-1.txt")
    implement(model, "proj-1b.txt")
    planner(model, "milestone_done")
    verdict(model, "milestone_complete")
    failing = {"passed": False, "feedback": "the header line is missing"}
    model.reply("QA", json.dumps(failing))
    model.reply("QA", json.dumps({"passed": True}))
    project = ended(projects.create(user, "Write a notes file"))
    assert project.status == "complete", project.reason
    dispatched = Run.objects.filter(project=project).order_by("created_at")
    assert [r.dispatch_id for r in dispatched] == ["t1-a1", "t1-a2"]
    escalation = types(project, "RecordEscalation")[0].payload["event"]
    assert (escalation["tier"], escalation["trigger"]) == (1, "qa_failed")
    retry = text_of(model.requests_for("TaskPlan")[1])
    assert "the header line is missing" in retry and "Attempt 2" in retry
    done = [m.payload["entry"]["task_id"] for m in types(project, "RecordDone")]
    assert done == ["t1"]
    # The failed attempt's file was reset away, kept aside; the retry's committed.
    assert commits(project) == ["artoo: project start", "t1: Write proj-1b.txt"]
    assert sorted(os.listdir(project.directory)) == [".git", "proj-1b.txt"]
    kept = {c.dispatch_id: (c.kind, c.new_files) for c in project.task_commits.all()}
    assert kept == {
        "t1-a1": ("discarded", ["proj-1.txt"]),
        "t1-a2": ("done", []),
    }


def test_the_periodic_review_comes_after_exactly_five_completed_tasks(
    celery_worker, user, model
):
    scope(model, "User can read five notes")
    for n in range(1, 6):
        implement(model, f"proj-{n}.txt")
    verdict(model, "aligned")
    planner(model, "milestone_done")
    verdict(model, "milestone_complete")
    project = ended(projects.create(user, "Write five notes files"), timeout=240)
    assert project.status == "complete", project.reason
    sequence = [
        m.type if m.type != "AskAssessor" else m.payload["view"]["trigger"]
        for m in types(project, "RecordDone", "AskAssessor")
    ]
    assert sequence == ["RecordDone"] * 5 + ["periodic", "milestone_done"]
    assert Run.objects.filter(project=project, status="done").count() == 5


def test_cancel_mid_task_stops_its_run_and_the_project(celery_worker, user, model):
    scope(model, "User can read notes")
    implement(model, "proj-1.txt")
    # The task's executor is slow: the cancel comes while its Run works.
    model.responder(lambda request: Step(content="{}", delay_s=30), role="R3")
    project = projects.create(user, "Write a notes file")
    run = wait_until(
        lambda: Run.objects.filter(project=project, status="running").first(),
        timeout=60,
        what="the task's run",
    )
    projects.cancel(project)
    project = ended(project, timeout=60)
    assert project.status == "cancelled"
    wait_until(
        lambda: Run.objects.get(id=run.id).status == "cancelled",
        timeout=30,
        what="the task's run cancelled",
    )
    finish = types(project, "FinishProject")[0].payload
    assert finish["status"] == "cancelled"
    assert types(project, "StopTask")[0].payload["request_id"] == "t1-a1"
    # The cancelled run's reply arrives after the end and changes nothing.
    wait_until(lambda: types(project, "RunReply"), what="the run's reply")
    wait_until(
        lambda: not project.messages.filter(delivered_at__isnull=True).exists(),
        what="every message delivered",
    )
    assert Project.objects.get(id=project.id).status == "cancelled"
    assert Run.objects.filter(project=project).count() == 1


def test_an_abort_judged_minor_drift_sends_the_hint_and_clears_carry_forward(
    celery_worker, user, model
):
    # A command that passes with no work: the report's own rule ends it.
    scope(model, "User can read notes", verify=("true",))
    planner(
        model,
        "abort",
        escalation_context="no notes format is defined",
        carry_forward=["Parse the notes"],
    )
    hint = "Plain text notes are enough; write one file"
    verdict(model, "minor_drift", correction_hint=hint)
    planner(model, "milestone_done")
    verdict(model, "milestone_complete")
    project = ended(projects.create(user, "Write a notes file"))
    # No task ran, so the repository shows no work: the project cannot be complete.
    assert project.status == "failed", project.reason
    assert "no task changed a file (no task was done)" in project.reason
    tiers = [
        (m.payload["event"]["tier"], m.payload["event"]["trigger"])
        for m in types(project, "RecordEscalation")
    ]
    assert tiers == [(2, "abort"), (3, "minor_drift")]
    assessed = text_of(model.requests_for("Assessor")[0])
    assert "no notes format is defined" in assessed and "Parse the notes" in assessed
    replanned = types(project, "AskTaskPlanner")[1].payload["view"]
    assert replanned["correction_hint"] == hint and replanned["carry_forward"] == []
    assert hint in text_of(model.requests_for("TaskPlan")[1])
    assert not Run.objects.filter(project=project).exists()


def test_a_major_divergence_re_scopes_keeping_the_completed_work(
    celery_worker, user, model
):
    scope(model, "User can read notes", "User can browse notes in a GUI")
    implement(model, "proj-1.txt")
    planner(model, "milestone_done")
    verdict(model, "milestone_complete")
    planner(model, "milestone_done")
    analysis = "There is no GUI toolkit; notes must be read from the console"
    verdict(model, "major_divergence", divergence_analysis=analysis)
    scope(model, "User can list notes from the console")
    planner(model, "milestone_done")
    verdict(model, "milestone_complete")
    project = ended(projects.create(user, "Notes with a GUI"))
    assert project.status == "complete", project.reason
    rescope = types(project, "AskScopeAgent")[1].payload
    assert rescope["divergence_analysis"] == analysis
    assert "Milestone 1 complete: User can read notes" in rescope["prior_work"]
    second = text_of(model.requests_for("Scope")[1])
    assert analysis in second and "User can read notes" in second
    state = project.load_state()
    assert [m.description for m in state.milestones] == [
        "User can read notes",
        "User can list notes from the console",
    ]
    assert state.rescopes == 1 and state.completed_tasks == 1


def test_an_agent_that_keeps_failing_fails_the_project_with_the_reason(
    celery_worker, user, model
):
    model.fault("Scope", status=400, message="model refused", times=10)
    project = ended(projects.create(user, "Write a notes file"), timeout=60)
    assert project.status == "failed"
    assert "Scope could not handle AskScopeAgent after 3 attempts" in project.reason
    finish = types(project, "FinishProject")[0].payload
    assert finish["status"] == "failed" and project.load_state().phase == "failed"
