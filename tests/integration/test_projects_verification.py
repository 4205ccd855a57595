"""Done by verification only, with real git, real files and a real command.

A tiny repository whose test script passes only when ``notes.txt`` says hello;
the project's state machine is stepped by the Project's own handler
(``advance``) on bus messages, QA's verification handler runs the script in
the sandbox at the last commit, as a worker would. The Assessor's
``milestone_complete`` is scripted: it is the false "done" the command refuses.
The real-model tier's prepared projects (``devtools/projecttasks.py``) get
their own commands run in the sandbox too, before and after a hand-written
solution.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.db import transaction

from artoo_web import bus, projectchecks, projects
from artoo_web.handlers import projects as handlers
from artoo_web.models import Project
from devtools.projecttasks import PROJECT_TASKS, prepare_repo, run_tests
from roles.llm.caps import Capabilities
from roles.projects.contracts import (
    AssessorVerdict,
    ImplementationResult,
    QAVerdict,
    TaskPlan,
)
from roles.projects.events import AskQA
from tests.unit.test_project_tasks import SOLUTIONS, apply

pytestmark = pytest.mark.django_db

CHECK = "sh tests/check.sh"
SCRIPT = (
    'grep -qx hello notes.txt || { echo "notes.txt does not say hello"; exit 1; }\n'
)


@pytest.fixture(autouse=True)
def roots(settings, tmp_path):
    settings.WORKSPACE = tmp_path / "workspace"
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    settings.ARTOO_ALLOWED_PATHS = [allowed]
    return allowed


@pytest.fixture
def sandboxed(settings):
    from artoo_web import runtime

    if settings.ARTOO_SANDBOX != "on":
        pytest.skip("verification runs only in the sandbox")
    problem = runtime.sandbox_problem(runtime.sandbox_policy())
    if problem:
        pytest.skip(f"no sandbox here: {problem}")


def git(path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(path), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def deliver(project: Project, sender: str, type_: str, payload) -> None:
    """Deliver one reply to the Project, as its worker would."""
    with transaction.atomic():
        msg = bus.send(None, sender, "Project", type_, payload, project=project)
        handlers.advance(msg)
    project.refresh_from_db()


def answer(project: Project, sender: str, type_: str, key: str, value) -> None:
    payload = {"request_id": project.state["awaiting"], key: value}
    deliver(project, sender, type_, payload)


def started(user, roots, **config) -> Project:
    """Return a project on a repository with a test script, scoped to one milestone."""
    repo = roots / "notes"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "check.sh").write_text(SCRIPT)
    (repo / "notes.txt").write_text("nothing yet\n")
    project = projects.create(user, "Make notes say hello", str(repo), **config)
    scope = {"remit": "Notes say hello", "milestones": ["Notes say hello"]}
    answer(project, "Scope", "ScopeReply", "scope", scope)
    return project


def task_done(project: Project, text: str) -> None:
    """Plan a task that writes ``text`` into notes.txt, run it, pass QA."""
    plan = TaskPlan(
        action="implement",
        task_description=f"Write {text}",
        implementation_plan=f"notes.txt holds {text}",
    )
    answer(project, "TaskPlan", "PlanReply", "plan", plan)
    (Path(project.directory) / "notes.txt").write_text(f"{text}\n")
    result = ImplementationResult(files=["notes.txt"], result_summary=f"wrote {text}")
    answer(project, "Impl", "RunReply", "result", result)
    answer(project, "QA", "QAReply", "verdict", QAVerdict(passed=True))


def claim_done(project: Project) -> None:
    """The TaskPlanner claims the milestone done and the Assessor agrees."""
    answer(project, "TaskPlan", "PlanReply", "plan", TaskPlan(action="milestone_done"))
    verdict = AssessorVerdict(verdict="milestone_complete")
    answer(project, "Assessor", "AssessorReply", "verdict", verdict)


def verify(project: Project) -> None:
    """Run QA's verification handler on the pending VerifyMilestone, then
    deliver its reply to the Project."""
    ask = project.messages.filter(type="VerifyMilestone", delivered_at=None).get()
    with transaction.atomic():
        handlers.verify(ask)
    reply = project.messages.filter(type="VerifyReply").order_by("-id").first()
    with transaction.atomic():
        handlers.advance(reply)
    project.refresh_from_db()


def verifications(project: Project) -> list[dict]:
    return [m.payload for m in project.messages.filter(type="RecordVerification")]


def test_a_false_done_is_refused_and_a_true_one_accepted(user, roots, sandboxed):
    project = started(user, roots, verify=[CHECK])
    task_done(project, "goodbye")
    claim_done(project)
    assert project.status == "verify"
    verify(project)
    # The Assessor said complete, the script says otherwise: not done.
    assert project.status == "plan", project.reason
    first = verifications(project)[0]
    head = git(project.directory, "rev-parse", "HEAD").strip()
    assert (first["passed"], first["commit"]) == (False, head)
    assert first["results"][0]["exit_code"] == 1
    assert "notes.txt does not say hello" in first["reason"]
    assert "Not done: verification failed" in project.state["correction_hint"]
    # The command changed nothing in the repository.
    assert git(project.directory, "status", "--porcelain") == ""
    task_done(project, "hello")
    claim_done(project)
    verify(project)
    assert project.status == "complete", project.reason
    second = verifications(project)[1]
    assert second["passed"] and second["results"][0]["exit_code"] == 0
    assert second["commit"] == git(project.directory, "rev-parse", "HEAD").strip()
    assert project.reason == "all 1 milestone complete"


def test_a_milestone_without_a_command_is_never_accepted(user, roots):
    project = started(user, roots)
    task_done(project, "hello")
    claim_done(project)
    assert project.status == "plan"
    record = verifications(project)[0]
    assert not record["passed"] and "no verification command" in record["reason"]
    assert not project.messages.filter(type="VerifyMilestone").exists()


def test_uncommitted_work_is_not_verified(user, roots, sandboxed):
    project = started(user, roots, verify=[CHECK])
    task_done(project, "hello")
    claim_done(project)
    (roots / "notes" / "stray.txt").write_text("not committed\n")
    verify(project)
    assert project.status == "plan"
    record = verifications(project)[0]
    assert record["results"][0]["exit_code"] is None
    assert "changes the last commit does not hold" in record["reason"]


def test_a_task_that_edits_the_test_script_is_refused_by_qa(user, roots):
    project = started(user, roots, verify=[CHECK])
    assert projectchecks.protected(project) == ["tests/check.sh"]
    plan = TaskPlan(
        action="implement",
        task_description="Make the check pass",
        implementation_plan="edit the check",
    )
    answer(project, "TaskPlan", "PlanReply", "plan", plan)
    (roots / "notes" / "tests" / "check.sh").write_text("exit 0\n")
    (roots / "notes" / "notes.txt").write_text("hello\n")
    result = ImplementationResult(files=["notes.txt", "tests/check.sh"])
    answer(project, "Impl", "RunReply", "result", result)
    ask = AskQA.model_validate(
        project.messages.filter(type="AskQA").order_by("-id").first().payload
    )
    verdict, usage = handlers.ask_qa(None, project, ask)
    assert not verdict.passed and usage is None
    assert "tests/check.sh: a verification file of the milestone" in verdict.feedback


class Judge:
    """A QA model that passes every task it is asked about, and counts the asks."""

    def __init__(self):
        self.asked = 0
        self.caps = Capabilities()

    def complete_json(self, messages, reply_cls):
        self.asked += 1
        return QAVerdict(passed=True), None


def qa_of(project: Project, files: list[str], judge: Judge):
    """Run a task that wrote ``files`` up to QA; return QA's verdict."""
    plan = TaskPlan(
        action="implement", task_description="Edit", implementation_plan="p"
    )
    answer(project, "TaskPlan", "PlanReply", "plan", plan)
    answer(project, "Impl", "RunReply", "result", ImplementationResult(files=files))
    ask = AskQA.model_validate(
        project.messages.filter(type="AskQA").order_by("-id").first().payload
    )
    verdict, _ = handlers.ask_qa(judge, project, ask)
    return verdict


def test_work_that_breaks_a_passing_command_is_refused_before_the_model(
    user, roots, sandboxed
):
    project = started(user, roots, verify=[CHECK])
    repo = Path(project.directory)
    task_done(project, "hello")  # committed: the command passes from here on
    judge = Judge()
    (repo / "extra.txt").write_text("more\n")
    # Work that keeps the command passing goes to the model.
    assert qa_of(project, ["extra.txt"], judge).passed and judge.asked == 1
    answer(project, "QA", "QAReply", "verdict", QAVerdict(passed=True))
    (repo / "notes.txt").write_text("goodbye\n")

    verdict = qa_of(project, ["notes.txt"], judge)

    assert not verdict.passed and judge.asked == 1
    assert f"`{CHECK}` passed at the last commit {project.last_commit[:12]}" in (
        verdict.feedback
    )
    assert "(exit 1): notes.txt does not say hello" in verdict.feedback
    # The commands ran on copies: the work and the repository are as they were.
    assert (repo / "notes.txt").read_text() == "goodbye\n"
    assert git(repo, "status", "--porcelain") == " M notes.txt\n"
    assert not list(settings_sandbox_dir().glob(f"verify-{project.id}*"))


def test_a_command_failing_before_the_task_does_not_refuse_its_work(
    user, roots, sandboxed
):
    project = started(user, roots, verify=[CHECK])  # notes.txt: "nothing yet"
    judge = Judge()
    (Path(project.directory) / "notes.txt").write_text("still not\n")
    assert qa_of(project, ["notes.txt"], judge).passed and judge.asked == 1


def settings_sandbox_dir() -> Path:
    from django.conf import settings

    return Path(settings.SANDBOX_DIR)


def test_a_bad_project_config_is_refused_and_makes_nothing(user, roots):
    repo = roots / "bad"
    with pytest.raises(ValueError, match="Bad project config: verify.0: .*empty"):
        projects.create(user, "Make notes", str(repo), verify=["  "])
    with pytest.raises(ValueError, match="at most 300 characters"):
        projects.create(user, "Make notes", str(repo), verify=["x" * 5000])
    with pytest.raises(ValueError, match="inside the repository"):
        projects.create(user, "Make notes", str(repo), protected=["../etc"])
    assert not repo.exists() and not Project.objects.exists()


@pytest.mark.parametrize("task", PROJECT_TASKS, ids=lambda t: t.name)
def test_the_model_tiers_projects_can_be_verified_in_the_sandbox(
    task, user, roots, sandboxed
):
    # Their own commands fail or pass in the sandbox as the verifier says.
    repo = roots / task.name
    prepare_repo(task, repo)
    project = projects.create(
        user, task.request(repo), str(repo), task.verify, task.protected
    )
    commands = project.load_state().verify
    _, before = projectchecks.run_checks(project, commands)
    assert [r.passed for r in before] == [run_tests(repo)[0].ok]
    assert before[0].passed == (task.name != "project-cart-bug"), before
    apply(repo, SOLUTIONS[task.name])
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@e.org", "commit", "-qm", "ok")
    project.last_commit = git(repo, "rev-parse", "HEAD").strip()

    _, after = projectchecks.run_checks(project, commands)

    assert [r.passed for r in after] == [True], after
    assert task.verify_repo(repo).ok
