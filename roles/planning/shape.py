r"""The plan as it will run: prompt examples dropped, linear chains joined, the
criteria held to what the request states, and the request leading each step.

A small model copies the examples of R2's instructions into its plan ("output
names one weekday, Monday to Sunday" as a criterion of a hello-world script);
such a criterion is about no task, and ``drop_copied_examples`` removes it unless
the request is about what the example names.

A small model splits "what is the total of the amount column?" into read the
file → sum the column → format the sum, three executors in sequence. Each later
executor sees only the earlier one's claimed output ("the file has been read
successfully"), never the file, and each step carries its own guessed checks,
so the chain fails on its weakest hand-over. One executor doing the same steps
in its own tool loop sees every tool output and is judged on the result.

``ARTOO_PLAN_CHAINS=join`` (the local model's default) runs a plan whose every
sequence holds exactly one subtask as one subtask: the steps in order as its
intent, the contexts together, and the criteria that still mean something in one
result — the last step's, plus any earlier ``file_exists`` check (an effect
lasts; an intermediate output does not exist on its own any more). A plan with
parallel subtasks is kept as written: it is not a chain. ``split`` (the
default elsewhere) keeps every plan as R2 wrote it.

The criteria that run are only those the request states, and under a
question whose answer has a form code checks, that form is code's
(``roles.planning.stated``). The user's request leads what the executor reads
(``lead_with_request``).

A ``file_exists`` check the request cannot mean (on a path GGS blocked, one it
deletes or one it only reads) is dropped by ``roles.planning.blocked_paths``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from roles.claims.question import Question, read_question
from roles.contracts import CriterionSpec, SubTask, normalise_criterion
from roles.planning.blocked_paths import drop_blocked_paths
from roles.planning.stated import is_form_check, keep_stated

# R2's example criteria (roles.planning.prompts.PLAN_SYSTEM), each with the word
# a request must contain for the example to be about it ("" : never).
PROMPT_EXAMPLES = {
    "the weekday is found": "weekday",
    "output names one weekday, Monday to Sunday": "weekday",
    "all subtasks completed successfully": "",
    "the answer states the total line count as a number": "line",
}


def shape_plan(
    subtasks: Sequence[SubTask],
    task_criteria: Sequence[CriterionSpec],
    request: str,
    *,
    join: bool,
    blocked_targets: Sequence[str] = (),
    question: Question | None = None,
    steps: bool = True,
    recalled: str = "",
) -> tuple[list[SubTask], list[CriterionSpec], list[str]]:
    """Return the plan as it will run and a note on each change made to it;
    without ``steps``, a plan of one subtask runs the request without R2's
    (``recalled``: the memory text R2 was given, which criteria may not copy)."""
    question = question or read_question(request)
    subtasks, criteria, notes = drop_copied_examples(subtasks, task_criteria, request)
    subtasks, dropped = drop_blocked_paths(subtasks, blocked_targets, request)
    notes += dropped
    if join:
        subtasks, note = join_chain(subtasks)
        notes += [note] if note else []
    subtasks, left_out = keep_stated(subtasks, request, question, recalled)
    notes += left_out
    criteria, left_out = keep_stated_task_criteria(
        criteria, request, question, recalled
    )
    notes += left_out
    return lead_with_request(subtasks, request, steps=steps), criteria, notes


def keep_stated_task_criteria(
    criteria: Sequence[CriterionSpec],
    request: str,
    question: Question,
    recalled: str = "",
) -> tuple[list[CriterionSpec], list[str]]:
    """Return R2's task criteria held to the rule of its subtasks' criteria
    (``roles.planning.stated``), without the form check: R4b's answer rules
    check the form of the whole run's answer."""
    probe = SubTask(
        subtask_id="task", parent_task_id="task", intent="task criteria",
        success_criteria=list(criteria),
    )  # fmt: skip
    (kept,), notes = keep_stated([probe], request, question, recalled)
    return [c for c in kept.success_criteria if not is_form_check(c)], notes


def lead_with_request(
    subtasks: Sequence[SubTask], request: str, *, steps: bool = True
) -> list[SubTask]:
    """Return the subtasks with the user's request where the executor reads first.

    A small planner rewords the request and loses its point ("count the lines"
    for "how many accounts use /bin/bash", "filter out the hidden files" for
    "how many hidden files"), or names its step after a directive
    ("change_path"). The request is the user's: a plan of one subtask has the
    request itself as its intent and the planner's steps in its context (none
    without ``steps``: a small planner's steps mislead as often as they help);
    every other subtask carries the request in its context.
    """
    request = request.strip()
    if not request:
        return list(subtasks)
    if len(subtasks) == 1:
        (only,) = subtasks
        if only.intent.strip() == request:
            return [only]
        planned = f"Planned steps: {only.intent.strip()}\n" if steps else ""
        context = f"{planned}{only.context}".strip()
        return [only.model_copy(update={"intent": request, "context": context})]
    led = []
    for sub in subtasks:
        if request not in f"{sub.intent}\n{sub.context}":
            context = f"{sub.context}\nThe user's request: {request}".strip()
            sub = sub.model_copy(update={"context": context})
        led.append(sub)
    return led


def drop_copied_examples(
    subtasks: Sequence[SubTask], task_criteria: Sequence[CriterionSpec], request: str
) -> tuple[list[SubTask], list[CriterionSpec], list[str]]:
    """Return the plan without criteria copied from R2's examples, and notes."""
    copied = {
        _words(example)
        for example, word in PROMPT_EXAMPLES.items()
        if not word or word not in request.lower()
    }
    bare = {_bare(c) for c in copied}
    notes: list[str] = []

    def keep(values: Sequence[CriterionSpec], where: str) -> list[CriterionSpec]:
        kept = []
        for value in values:
            criterion = normalise_criterion(value)
            text, words = criterion.criterion, _bare(_words(criterion.criterion))
            # "output_names_one_weekday": the example's first words, as a name.
            if (
                words in bare
                or (words.count(" ") >= 2 and any(c.startswith(words) for c in bare))
                or _quotes_example(criterion.check, copied)
            ):
                notes.append(f"{where}: dropped {text!r}, copied from R2's examples")
            else:
                kept.append(value)
        return kept

    kept_subtasks = [
        s.model_copy(update={"success_criteria": keep(s.success_criteria, s.intent)})
        for s in subtasks
    ]
    return kept_subtasks, keep(task_criteria, "task_criteria"), notes


def _quotes_example(check: dict | None, copied: set[str]) -> bool:
    """Return True when an output check demands three words in a row of a copied
    example ("Total line count: ([0-9]+)" from "the answer states the total
    line count as a number")."""
    if not isinstance(check, dict):
        return False
    text = check.get("pattern") if "pattern" in check else check.get("value")
    words = _words(text) if isinstance(text, str) else ""
    if check.get("type") not in ("output_matches", "output_contains") or not words:
        return False
    for example in copied:
        terms = example.split()
        runs = {" ".join(terms[i : i + 3]) for i in range(len(terms) - 2)}
        if any(f" {run} " in f" {words} " for run in runs - {"the answer states"}):
            return True
    return False


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _bare(words: str) -> str:
    """Return words without a leading article: "The output names one weekday"
    copies the example as much as "output names one weekday" does."""
    return re.sub(r"^(?:the|a|an) ", "", words)


def is_chain(subtasks: Sequence[SubTask]) -> bool:
    """Return True when there are several subtasks, one per sequence number."""
    counts = Counter(s.sequence for s in subtasks)
    return len(subtasks) > 1 and all(n == 1 for n in counts.values())


def join_chain(subtasks: Sequence[SubTask]) -> tuple[list[SubTask], str]:
    """Return a chain as one subtask and a note saying so; anything else as is."""
    if not is_chain(subtasks):
        return list(subtasks), ""
    steps = sorted(subtasks, key=lambda s: s.sequence)
    intent = " ".join(
        f"Step {n}: {s.intent.strip().rstrip('.')}." for n, s in enumerate(steps, 1)
    )
    contexts = dict.fromkeys(s.context.strip() for s in steps if s.context.strip())
    joined = steps[0].model_copy(
        update={
            "intent": intent,
            "context": "\n".join(contexts),
            "success_criteria": _lasting_criteria(steps),
            "sequence": 1,
        }
    )
    note = (
        f"a chain of {len(steps)} subtasks runs as one subtask "
        "(ARTOO_PLAN_CHAINS=join): one executor sees every step's tool output"
    )
    return [joined], note


def _lasting_criteria(steps: Sequence[SubTask]) -> list:
    kept = []
    for step in steps[:-1]:
        for value in step.success_criteria:
            check = normalise_criterion(value).check or {}
            if check.get("type") == "file_exists" and value not in kept:
                kept.append(value)
    return kept + [v for v in steps[-1].success_criteria if v not in kept]
