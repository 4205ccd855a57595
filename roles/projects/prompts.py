"""The project agents' prompts, each within its input token budget.

Every agent gets a fixed system prompt in the spec's structure (ROLE, PRIMARY
OBJECTIVE, PROCESS, OUTPUT FORMAT, CONSTRAINTS) and one user message of titled
sections (``## CURRENT MILESTONE`` …). When the messages would exceed the
agent's budget (``roles.projects.config.token_budgets``), the longest section
is cut in the middle, again until they fit; the system prompt stays whole so a
server's prompt cache keeps reusing it. The model answers in JSON, validated
by the contract named in each prompt (``roles.projects.contracts``).
"""

from __future__ import annotations

from collections.abc import Sequence

from roles.budget import CHARS_PER_TOKEN, estimate_tokens
from roles.projects.contracts import DoneEntry, Milestone
from roles.projects.events import (
    AskAssessor,
    AskQA,
    AskScopeAgent,
    AskTaskPlanner,
    DispatchTask,
)
from roles.projects.window import PlannerView

Section = tuple[str, str]
Messages = list[dict[str, str]]
CUT = "\n…[cut to fit the budget]…\n"
MIN_SECTION_CHARS = 80
TASK_INPUT_CHARS = 8000

SCOPE_SYSTEM = """\
## ROLE
You are the ScopeAgent of a project that changes a code repository.

## PRIMARY OBJECTIVE
Turn the user's request into a remit and an ordered list of milestones.

## PROCESS
1. Interpret the request for its explicit and implied needs.
2. Compare it with the repository's files to find what is missing.
3. Define milestones as user-testable outcomes ("user can …"), not steps.
4. Sketch each milestone's rough areas of work (themes, not tasks).
5. Give each milestone the shell commands that show it done ("verify"): the
   repository's tests or a script, run in its directory, exit 0 when done.
On a re-scope you get the completed work and the Assessor's analysis: keep what
is done, and write only the remaining milestones.

## OUTPUT FORMAT
JSON: {"remit": "...", "milestones": [{"description": "...", "areas": ["..."],
"verify": ["sh tests/check.sh"], "protected": ["tests/"]}]}

## CONSTRAINTS
The remit is at most 1000 characters, each milestone at most 200. Milestones
are sequential, each builds on the previous, and together they satisfy the remit.
Few milestones are better than many: a small request is one milestone.
A milestone is done only when its verify commands (at most 5, one line each)
pass at the last commit; one without any can never be done. The files they name,
and the protected paths, are tests: once committed no task may change them."""

PLANNER_SYSTEM = """\
## ROLE
You are the TaskPlanner of a project: you plan the next bite-sized task of the
current milestone.

## PRIMARY OBJECTIVE
Choose one action and, for "implement", write the detailed plan of the one task
to execute now.

## PROCESS
1. Review the milestone, the completed work and the carry-forward.
2. Update the carry-forward: a few rough next tasks (about 100 characters each).
3. Pick the next task and write its plan: the files to create or change and
   what each must contain, and how to check the result.
4. On a retry, read the QA feedback and fix what it names.
The task runs as an agent with tools, not a person: it reads files
(read_file_lines), changes them (apply_edit: one exact old text replaced by
new; create_file for a new file) and runs commands without a terminal, so no
editor. The project commits each task's work itself: plan no commit or push.

## OUTPUT FORMAT
JSON: {"action": "implement" | "skip" | "abort" | "milestone_done",
"task_description": "...", "implementation_plan": "...",
"carry_forward": ["..."], "escalation_context": "..."}

## CONSTRAINTS
implement: task_description and implementation_plan are required.
skip: the work is already there (task_description says which).
abort: the task is impossible as the milestone stands (escalation_context says
why). milestone_done: the milestone's user outcome is achieved; nothing to do.
Plan only the task executed now in detail; never plan the whole milestone."""

QA_SYSTEM = """\
## ROLE
You are QA for a project: you check one task's implementation.

## PRIMARY OBJECTIVE
Decide whether the files now meet the task's plan.

## PROCESS
1. Read the plan and the task's result summary.
2. Read the files' contents given below.
3. Decide whether the plan's requirements are functionally met.

## OUTPUT FORMAT
JSON: {"passed": true | false, "feedback": "...", "issues": ["..."]}

## CONSTRAINTS
Feedback is at most 500 characters; a failure must say what is wrong so the
task can be planned again. Judge the files, not the summary's claims."""

ASSESSOR_SYSTEM = """\
## ROLE
You are the Assessor of a project: you check alignment, not code.

## PRIMARY OBJECTIVE
Answer: given what was done, is the work making progress toward this milestone
in a way consistent with the remit?

## PROCESS
1. Read the remit, the milestone, the completed work and the carry-forward.
2. Read why you are asked now (periodic review, a milestone_done claim, an
   abort, or a task that failed all its attempts).
3. Give one verdict.

## OUTPUT FORMAT
JSON: {"verdict": "aligned" | "minor_drift" | "major_divergence" |
"milestone_complete", "correction_hint": "...", "divergence_analysis": "..."}

## CONSTRAINTS
minor_drift needs a correction_hint (at most 200 characters) for the
TaskPlanner; major_divergence needs a divergence_analysis (at most 1000
characters) for the ScopeAgent; milestone_complete only when the milestone's
user outcome is achieved by the completed work."""


def fit(system: str, sections: Sequence[Section], tokens: int) -> Messages:
    """Return the system prompt and the sections as messages within ``tokens``.

    The longest section is cut in the middle until the messages fit; a section
    is never cut below ``MIN_SECTION_CHARS``, so a budget too small for the
    system prompt itself leaves the sections short, not gone.
    """
    texts = [[title, body] for title, body in sections if body.strip()]
    while True:
        messages = _messages(system, texts)
        excess = estimate_tokens(messages) - tokens
        if excess <= 0:
            return messages
        longest = max(texts, key=lambda t: len(t[1]), default=None)
        if longest is None or len(longest[1]) <= MIN_SECTION_CHARS + len(CUT):
            return messages
        keep = max(MIN_SECTION_CHARS, len(longest[1]) - int(excess * CHARS_PER_TOKEN))
        longest[1] = _cut(longest[1], keep)


def _messages(system: str, texts: list[list[str]]) -> Messages:
    body = "\n\n".join(f"## {title}\n{text.strip()}" for title, text in texts)
    return [{"role": "system", "content": system}, {"role": "user", "content": body}]


def _cut(text: str, keep: int) -> str:
    head = max(1, (keep - len(CUT)) // 2)
    tail = max(1, keep - len(CUT) - head)
    return text[:head] + CUT + text[-tail:]


def milestone_text(milestone: Milestone) -> str:
    """Return a milestone with its sketch of areas and the commands that show
    it done."""
    areas = ", ".join(milestone.areas)
    text = milestone.description + (f"\nAreas of work: {areas}" if areas else "")
    if milestone.verify:
        listed = "; ".join(f"`{c}`" for c in milestone.verify)
        text += f"\nDone when these pass at the last commit: {listed}"
    return text


def done_text(summary: str, done: Sequence[DoneEntry]) -> str:
    """Return the done list: the rolled-up paragraph, then the full entries."""
    lines = [summary] if summary else []
    lines += [f"- {e.task_id} {e.description}: {e.result_summary}" for e in done]
    return "\n".join(lines) or "(nothing yet)"


def bullets(items: Sequence[str]) -> str:
    """Return items as a bullet list."""
    return "\n".join(f"- {item}" for item in items)


def scope_messages(ask: AskScopeAgent, files: str, tokens: int) -> Messages:
    """Return the ScopeAgent's prompt: the request, the files, any re-scope input."""
    sections = [
        ("USER REQUEST", ask.user_request),
        ("REPOSITORY FILES", files or "(the repository is empty)"),
        ("COMPLETED WORK (keep it)", ask.prior_work),
        ("DIVERGENCE ANALYSIS", ask.divergence_analysis),
    ]
    return fit(SCOPE_SYSTEM, sections, tokens)


def planner_messages(ask: AskTaskPlanner, files: str, tokens: int) -> Messages:
    """Return the TaskPlanner's prompt: its window and nothing beyond it."""
    view: PlannerView = ask.view
    retry = (
        f"Attempt {view.attempt}. The last attempt's work was discarded: the "
        f"repository is back at the last commit. QA said: {view.qa_feedback}"
        if view.qa_feedback
        else ""
    )
    sections = [
        ("CURRENT MILESTONE", milestone_text(view.milestone)),
        ("COMPLETED WORK", done_text(view.done_summary, view.done)),
        ("CARRY-FORWARD", bullets(view.carry_forward)),
        ("LAST QA FEEDBACK", retry),
        ("CORRECTION HINT", view.correction_hint),
        ("REPOSITORY FILES", files),
    ]
    return fit(PLANNER_SYSTEM, sections, tokens)


def qa_messages(
    ask: AskQA, excerpts: Sequence[tuple[str, str]], tokens: int
) -> Messages:
    """Return QA's prompt: the plan, the result, and the files' first lines."""
    files = "\n\n".join(f"### {name}\n{text}" for name, text in excerpts)
    sections = [
        ("TASK PLAN", ask.implementation_plan),
        ("RESULT SUMMARY", ask.result.result_summary),
        ("FILES", files),
    ]
    return fit(QA_SYSTEM, sections, tokens)


TRIGGERS = {
    "periodic": "Periodic review after several completed tasks.",
    "milestone_done": "The TaskPlanner claims the milestone is done.",
    "abort": "The TaskPlanner aborted a task.",
    "max_attempts": "A task failed every attempt.",
}


def assessor_messages(ask: AskAssessor, tokens: int) -> Messages:
    """Return the Assessor's deliberately compressed prompt."""
    view = ask.view
    why = TRIGGERS[view.trigger] + (f"\n{view.context}" if view.context else "")
    sections = [
        ("WHY YOU ARE ASKED", why),
        ("REMIT", view.remit),
        ("CURRENT MILESTONE", milestone_text(view.milestone)),
        ("COMPLETED WORK", done_text(view.done_summary, view.done)),
        ("CARRY-FORWARD", bullets(view.carry_forward)),
    ]
    return fit(ASSESSOR_SYSTEM, sections, tokens)


def task_input(dispatch: DispatchTask) -> str:
    """Return the input of a task's Run: its description and plan (the PRP)."""
    text = (
        f"{dispatch.description}\n\n"
        "Work in the current directory (a project's repository): change its "
        "files with the file tools (read_file_lines, apply_edit, create_file), "
        f"not an editor. Plan:\n{dispatch.implementation_plan}"
    )
    return text[:TASK_INPUT_CHARS]
