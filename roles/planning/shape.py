r"""The plan as it will run: prompt examples dropped, linear chains joined, and the
request's paths put back where a subtask lost them.

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

A small model also lists the formats it would accept as separate checks of one
subtask: ``^\d+$`` and ``^\d+ lines$`` for a line count. Each demands that a
whole line be something else, so no output meets both and the subtask can never
pass. ``merge_line_formats`` makes such checks one check that any of the formats
meets; a check of another kind, or a pattern not anchored at both ends, is kept
as it is (the evidence rule of R4a still judges what matched).

Under a count question, checks counted out one number each ("0", "1" … "9") are
one check any of them meets (``roles.planning.counted_checks``). Under any
question whose answer is a number, an output check holding a number the request does
not state
guessed the answer: it becomes "a number a tool output shows", and under a
question for a key's value the same check with any number in its place
(``roles.planning.guessed_checks``).

A ``file_exists`` check the request cannot mean (on a path GGS blocked, one it
deletes or one it only reads) is dropped by ``roles.planning.blocked_paths``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from roles.claims.question import Question
from roles.contracts import Criterion, CriterionSpec, SubTask, normalise_criterion
from roles.patterns import undelimited
from roles.planning.blocked_paths import NAMED_PATH, drop_blocked_paths
from roles.planning.counted_checks import merge_counted_checks
from roles.planning.guessed_checks import replace_guessed_numbers

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
) -> tuple[list[SubTask], list[CriterionSpec], list[str]]:
    """Return the plan as it will run and a note on each change made to it."""
    subtasks, criteria, notes = drop_copied_examples(subtasks, task_criteria, request)
    subtasks, dropped = drop_blocked_paths(subtasks, blocked_targets, request)
    notes += dropped
    if join:
        subtasks, note = join_chain(subtasks)
        notes += [note] if note else []
    subtasks, merged = merge_line_formats(subtasks)
    notes += merged
    subtasks, counted = merge_counted_checks(subtasks, request)
    notes += counted
    subtasks, guessed = replace_guessed_numbers(subtasks, request, question)
    notes += guessed
    return [anchor_request(s, request) for s in subtasks], criteria, notes


def anchor_request(subtask: SubTask, raw_input: str) -> SubTask:
    """Return the subtask with the user's request in its context when the plan
    lost a path or file name the user gave (a small model often drops them)."""
    seen = f"{subtask.intent}\n{subtask.context}"
    named = [p for p in NAMED_PATH.findall(raw_input) if p not in seen]
    if not named:
        return subtask
    context = f"{subtask.context}\nThe user's request: {raw_input.strip()}".strip()
    return subtask.model_copy(update={"context": context})


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


def merge_line_formats(
    subtasks: Sequence[SubTask],
) -> tuple[list[SubTask], list[str]]:
    """Return the subtasks with each one's whole-line format checks as one check
    that any of them meets, and a note for each subtask changed."""
    shaped, notes = [], []
    for sub in subtasks:
        formats = [v for v in sub.success_criteria if _line_format(v) is not None]
        if len(formats) < 2:
            shaped.append(sub)
            continue
        patterns = [_line_format(v) for v in formats]
        merged = "|".join(f"(?:{p})" for p in patterns)
        check = {"type": "output_matches", "pattern": merged}
        one = Criterion(
            criterion="a line of the output has one of the formats "
            + ", ".join(f"/{p}/" for p in patterns),
            check=check,
        )
        at = sub.success_criteria.index(formats[0])
        rest = [v for v in sub.success_criteria if v not in formats]
        shaped.append(
            sub.model_copy(update={"success_criteria": [*rest[:at], one, *rest[at:]]})
        )
        notes.append(
            f"{sub.intent}: {len(formats)} checks that each demand a whole line of "
            "another format became one check any of them meets"
        )
    return shaped, notes


def _line_format(value: CriterionSpec) -> str | None:
    """Return the pattern of a whole-line ``output_matches`` check, else None."""
    check = normalise_criterion(value).check or {}
    pattern = check.get("pattern")
    if check.get("type") != "output_matches" or not isinstance(pattern, str):
        return None
    pattern, flags = undelimited(pattern)
    anchored = pattern.startswith("^") and pattern.endswith("$")
    return pattern if anchored and not flags and not pattern.endswith("\\$") else None
