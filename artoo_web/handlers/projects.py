"""A project's roles on the bus: its state machine, its agents, its Implementor.

``advance`` is the Project: it loads the stored state, calls
``roles.projects.step`` with the reply, stores the new state and carries out
the actions, all in the message's delivery transaction, so a worker killed at
any point leaves either nothing or everything of a step. The agents (Scope,
TaskPlan, QA, Assessor) ask the model outside any transaction and send their
reply with its request id; a stale reply is refused by ``step`` and ignored.
QA's file pre-step runs before any model call. With a real model the
ScopeAgent and the TaskPlanner may research the repository first
(``roles.projects.research``); the index lives in the data directory. The
Implementor starts a task's Run under its dispatch id (``runs.submit_task``),
so no task runs twice. QA runs a milestone's verification commands at the last
commit (``projectchecks``) when the Assessor judges it complete, and refuses a
task's work that changed a file those commands protect or broke one of them
that passed at the last commit, before any model is asked.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from itertools import islice
from pathlib import Path

from django.conf import settings

from artoo_web import bus, projectchecks, projects, runs
from artoo_web.models import BusMessage, Project
from roles.llm import client as llm
from roles.projects import DEFAULT_CONFIG, StepRefused, prompts, step, token_budgets
from roles.projects.contracts import AssessorVerdict, QAVerdict, Scope, TaskPlan
from roles.projects.events import (
    AskAssessor,
    AskQA,
    AskScopeAgent,
    AskTaskPlanner,
    DispatchTask,
    StopTask,
    VerifyMilestone,
)
from roles.projects.research import reply_with_research
from roles.projects.routing import prestep_verdict, regression_verdict
from roles.projects.verification import grounded_scope
from roles.research import ResearchTools, research_tools

log = logging.getLogger(__name__)

LISTED_FILES = 300
QA_FILES = 10
QA_LINES = 50
QA_LINE_CHARS = 300


def advance(msg: BusMessage) -> None:
    """(Project, any reply or Cancel): step the state machine once."""
    project = Project.objects.select_for_update().filter(id=msg.project_id).first()
    if project is None:
        return
    try:
        state, actions = step(project.load_state(), projects.event_of(msg))
    except StepRefused as refused:
        log.info("project %s: %s %s ignored: %s", project.id, msg.type, msg.id, refused)
        return
    project.keep_state(state)
    project.save()
    projects.carry_out(project, actions)


def dispatch(msg: BusMessage) -> None:
    """(Impl, DispatchTask): start the task's Run under its dispatch id."""
    task = DispatchTask.model_validate(msg.payload)
    project = Project.objects.get(id=msg.project_id)
    runs.submit_task(project, task.request_id, prompts.task_input(task))


def stop(msg: BusMessage) -> None:
    """(Impl, StopTask): cancel the task's Run if it is still going."""
    order = StopTask.model_validate(msg.payload)
    run = projects.task_run(Project.objects.get(id=msg.project_id), order.request_id)
    if run is not None and not run.is_terminal:
        try:
            runs.cancel(run)
        except runs.Conflict:
            pass


def verify(msg: BusMessage) -> None:
    """(QA, VerifyMilestone): run the milestone's commands at the last commit."""
    ask = VerifyMilestone.model_validate(msg.payload)
    project = Project.objects.get(id=msg.project_id)
    if project.is_terminal:
        commit, results = "", []
    else:
        commit, results = projectchecks.run_checks(project, ask.commands)
    with bus.delivering(msg) as fresh:
        if fresh and not project.is_terminal:
            payload = {
                "request_id": ask.request_id,
                "commit": commit,
                "results": results,
            }
            projects.send(project, "QA", "Project", "VerifyReply", payload)


Ask = Callable[[llm.LLMClient, Project, object], tuple[object, object]]


def answer(role: str, agent: str, reply: str, key: str, ask_type, ask: Ask):
    """Return the handler of one agent: ask the model, then send the reply."""

    def handle(msg: BusMessage) -> None:
        request = ask_type.model_validate(msg.payload)
        project = Project.objects.get(id=msg.project_id)
        result, usage = None, None
        if not project.is_terminal:
            with llm.client_for(role, os.environ, run_id=str(project.id)) as model:
                result, usage = ask(model, project, request)
        with bus.delivering(msg) as fresh:
            if not fresh or result is None:
                return
            projects.record_usage(project.id, agent, usage)
            payload = {"request_id": request.request_id, key: result}
            projects.send(project, role, "Project", reply, payload)

    handle.__name__ = f"answer_{agent}"
    return handle


def budget(model: llm.LLMClient, agent: str) -> int:
    """Return the agent's input budget for the model's context window."""
    return token_budgets(DEFAULT_CONFIG, model.caps.context_tokens)[agent]


def listing(project: Project) -> str:
    """Return the repository's file names, a few hundred at most."""
    root = Path(project.directory)
    names = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    )
    more = len(names) - LISTED_FILES
    return "\n".join(names[:LISTED_FILES]) + (f"\n… {more} more" if more > 0 else "")


def research_for(model, project: Project) -> ResearchTools | None:
    """Return the research tools over the project's repository for a real model."""
    if not isinstance(model, llm.LLMClient):
        return None
    try:
        return research_tools(
            Path(project.directory), settings.DATA_DIR / "research", model
        )
    except ValueError as error:
        log.warning("project %s: no research tools: %s", project.id, error)
        return None


def researched(model, project: Project, messages, reply_cls):
    """Return the agent's reply, after research when the model can do it."""
    research = research_for(model, project)
    if research is None:
        return model.complete_json(messages, reply_cls)
    cap = DEFAULT_CONFIG.research_calls
    return reply_with_research(model, messages, reply_cls, research, cap)


def ask_scope(model, project: Project, request: AskScopeAgent):
    """Ask the ScopeAgent; drop the commands and paths it guessed."""
    messages = prompts.scope_messages(
        request, listing(project), budget(model, "scope_agent")
    )
    scope, usage = researched(model, project, messages, Scope)
    if scope is None:
        return scope, usage
    scope, dropped = grounded_scope(scope, present(project), request.user_request)
    if dropped:
        log.info("project %s: guessed by the ScopeAgent: %s", project.id, dropped)
    return scope, usage


def present(project: Project) -> set[str]:
    """Return the repository's files and directories, relative to it."""
    root = Path(project.directory)
    names = set()
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        here = Path(top).relative_to(root)
        names.update(str(here / name) for name in [*dirs, *files])
    return names


def ask_planner(model, project: Project, request: AskTaskPlanner):
    messages = prompts.planner_messages(
        request, listing(project), budget(model, "task_planner")
    )
    return researched(model, project, messages, TaskPlan)


def ask_qa(model, project: Project, request: AskQA):
    """Judge a task: the file pre-step, then the verification commands that
    passed at the last commit, and the model only when both passed."""
    root = Path(project.directory)
    protected = projectchecks.protected_changes(project)
    failed = prestep_verdict(root, request.result, DEFAULT_CONFIG, protected)
    if failed is not None:
        return failed, None
    broken = regression_verdict(projectchecks.broken_by_work(project))
    if broken is not None:
        return broken, None
    excerpts = [(name, head(root / name)) for name in request.result.files[:QA_FILES]]
    messages = prompts.qa_messages(request, excerpts, budget(model, "qa"))
    return model.complete_json(messages, QAVerdict)


def head(path: Path) -> str:
    """Return a file's first lines, each cut to a readable length."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        lines = [line.rstrip("\n")[:QA_LINE_CHARS] for line in islice(handle, QA_LINES)]
    return "\n".join(lines)


def ask_assessor(model, project: Project, request: AskAssessor):
    messages = prompts.assessor_messages(request, budget(model, "assessor"))
    return model.complete_json(messages, AssessorVerdict)


scope = answer("Scope", "scope_agent", "ScopeReply", "scope", AskScopeAgent, ask_scope)
plan = answer(
    "TaskPlan", "task_planner", "PlanReply", "plan", AskTaskPlanner, ask_planner
)
qa = answer("QA", "qa", "QAReply", "verdict", AskQA, ask_qa)
assess = answer(
    "Assessor", "assessor", "AssessorReply", "verdict", AskAssessor, ask_assessor
)
