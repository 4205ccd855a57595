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

A replan may demand that a file exist at a path GGS blocked because a call on it
failed ("which file defines normalize_sku?": the guess ``src/normalize_sku.py``
read nothing, and the next plan checked ``file_exists`` on it). The directive
forbids the path, so the check can never be met; ``drop_blocked_paths`` removes
it. A path the request asks to make (its file name appears in a request that
writes, creates, copies …) is the request's own effect and stays; one it only
reads from ("what is max_connections in db/config.yaml?", when the file is
db/config.yml) goes, as does a check that a file the request deletes exists.
A command GGS blocked blocks the paths it names. A request that makes nothing
only reads the paths it names, so a check that one exists goes in every round:
it is met by a file that is there already, or by making one the request never
asked for (a real executor ran ``touch db/config.yaml`` to meet it).
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Sequence

from roles.contracts import Criterion, CriterionSpec, SubTask, normalise_criterion
from roles.patterns import undelimited
from roles.requested import MAKES, paths_to_delete

NAMED_PATH = re.compile(r"(?:~?/[\w.@+-]+(?:/[\w.@+-]+)*|\b[\w-]+\.[A-Za-z]\w{0,5}\b)")

# R2's example criteria (roles.planner_prompts.PLAN_SYSTEM), each with the word
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
    notes: list[str] = []

    def keep(values: Sequence[CriterionSpec], where: str) -> list[CriterionSpec]:
        kept = []
        for value in values:
            criterion = normalise_criterion(value)
            text, words = criterion.criterion, _words(criterion.criterion)
            # "output_names_one_weekday": the example's first words, as a name.
            if (
                words in copied
                or (words.count(" ") >= 2 and any(c.startswith(words) for c in copied))
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


def drop_blocked_paths(
    subtasks: Sequence[SubTask], blocked_targets: Sequence[str], request: str
) -> tuple[list[SubTask], list[str]]:
    """Return the subtasks without ``file_exists`` checks on a GGS-blocked path the
    request does not ask to make, or on a path the request asks to delete (a
    small planner checks that the file it is to delete exists, which fails once
    it is deleted), and a note for each check dropped."""
    blocked = {posixpath.normpath(t.strip()) for t in blocked_targets if t.strip()}
    blocked |= {_norm(w) for t in blocked_targets for w in t.split()[1:] if "/" in w}
    deleted = {posixpath.normpath(p) for p in paths_to_delete(request)}
    read = (
        set() if MAKES.search(request) else set(map(_norm, NAMED_PATH.findall(request)))
    )
    if not (blocked or deleted or read):
        return list(subtasks), []
    shaped, notes = [], []
    for sub in subtasks:
        kept = []
        for value in sub.success_criteria:
            why = _why_dropped(value, blocked, deleted, read, request)
            if not why:
                kept.append(value)
                continue
            notes.append(f"{sub.intent}: dropped the check that {why}")
        shaped.append(sub.model_copy(update={"success_criteria": kept}))
    return shaped, notes


def _why_dropped(
    value: CriterionSpec,
    blocked: set[str],
    deleted: set[str],
    read: set[str],
    request: str,
) -> str:
    if path := _blocked_path(value, blocked, request):
        why = "GGS blocked that path after a call on it failed, and the request "
        return f"{path} exists: {why}does not ask to make it"
    if path := _blocked_path(value, deleted, ""):
        return f"{path} exists: the request asks to delete it"
    if path := _blocked_path(value, read, ""):
        return f"{path} exists: the request only reads it, and makes nothing"
    return ""


def _norm(word: str) -> str:
    return posixpath.normpath(word.strip("'\"`;,()"))


def _blocked_path(value: CriterionSpec, blocked: set[str], request: str) -> str:
    """Return the path of a ``file_exists`` check on a blocked path the request
    does not ask to make, else ""."""
    check = normalise_criterion(value).check or {}
    path = check.get("path")
    if check.get("type") != "file_exists" or not isinstance(path, str):
        return ""
    path = posixpath.normpath(path.strip())
    hit = path in blocked or any(b.endswith(f"/{path}") for b in blocked)
    named = posixpath.basename(path) in request and MAKES.search(request) is not None
    return path if hit and not named else ""


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


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


def names_tool(text: str, tools: Sequence[str]) -> str:
    """Return the first of ``tools`` that ``text`` mentions as a word, or ""."""
    for tool in tools:
        if tool and re.search(
            rf"(?<![A-Za-z0-9_]){re.escape(tool)}(?![A-Za-z0-9_])", text, re.IGNORECASE
        ):
            return tool
    return ""


def tell_blocked(subtasks: Sequence[SubTask], blocked: Sequence[str]) -> list[SubTask]:
    """Return the subtasks, each that names a blocked tool told it is gone."""
    told = []
    for sub in subtasks:
        named = names_tool(f"{sub.intent}\n{sub.context}", blocked)
        if named:
            gone = (
                f"The tool {named!r} is blocked (it failed in an earlier round) and "
                "is not available: use another tool."
            )
            sub = sub.model_copy(update={"context": f"{sub.context}\n{gone}".strip()})
        told.append(sub)
    return told
