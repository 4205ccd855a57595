"""Checks a small planner counted out: one check per number, merged into one.

Asked "how many items have a quantity of 0?", a small model can run on and write
ten checks, ``output_matches`` "0", "1", "2" … "9" (or "0,.*" … "15,.*"), every
one of them required. The answer to a count question is one number, so no
answer meets them all: "10" fails /2/, and GGS then reads a logical failure and
blocks the tool that computed the 10. Under a count question, three or more
output checks of one subtask that are the same text but for one number counting
up by one are such a run: ``merge_counted_checks`` makes them one check that any
of them meets. The evidence rules of R4a still judge the number itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from roles.claims.question_words import asks_for_count
from roles.contracts import Criterion, CriterionSpec, SubTask, normalise_criterion

RUN_AT_LEAST = 3
NUMBER = re.compile(r"\d+")
PARAMETER = {"output_matches": "pattern", "output_contains": "value"}


def merge_counted_checks(
    subtasks: Sequence[SubTask], request: str
) -> tuple[list[SubTask], list[str]]:
    """Return the subtasks with each counted-out run of checks as one check any
    of them meets, and a note for each run merged; unchanged unless ``request``
    asks how many."""
    if not asks_for_count(request):
        return list(subtasks), []
    shaped, notes = [], []
    for sub in subtasks:
        run = counted_run(sub.success_criteria)
        if not run:
            shaped.append(sub)
            continue
        patterns = [_as_pattern(v) for v in run]
        one = Criterion(
            criterion="the output meets one of the counted-out checks "
            + ", ".join(f"/{p}/" for p in patterns),
            check={"type": "output_matches", "pattern": "|".join(patterns)},
        )
        at = sub.success_criteria.index(run[0])
        rest = [v for v in sub.success_criteria if v not in run]
        criteria = [*rest[:at], one, *rest[at:]]
        shaped.append(sub.model_copy(update={"success_criteria": criteria}))
        first, last = _number(run[0]), _number(run[-1])
        notes.append(
            f"{sub.intent}: {len(run)} checks counting {first} to {last} (one "
            "number answers a count question) became one check any of them meets"
        )
    return shaped, notes


def counted_run(criteria: Sequence[CriterionSpec]) -> list[CriterionSpec]:
    """Return the longest run of output checks that differ only in one number
    counting up by one (at least ``RUN_AT_LEAST``), in plan order; else []."""
    groups: dict[tuple[str, str], list[CriterionSpec]] = {}
    for value in criteria:
        key = _template(value)
        if key is not None:
            groups.setdefault(key, []).append(value)
    best: list[CriterionSpec] = []
    for members in groups.values():
        numbers = sorted(_number(v) for v in members)
        counts_up = numbers == list(range(numbers[0], numbers[0] + len(numbers)))
        if counts_up and len(members) >= max(RUN_AT_LEAST, len(best) + 1):
            best = members
    return best


def _parameter(value: CriterionSpec) -> tuple[str, str] | None:
    check = normalise_criterion(value).check or {}
    kind = check.get("type")
    text = check.get(PARAMETER.get(kind, ""))
    return (kind, text) if isinstance(text, str) else None


def _template(value: CriterionSpec) -> tuple[str, str] | None:
    found = _parameter(value)
    if found is None or len(NUMBER.findall(found[1])) != 1:
        return None
    return found[0], NUMBER.sub("#", found[1])


def _number(value: CriterionSpec) -> int:
    return int(NUMBER.search(_parameter(value)[1]).group(0))


def _as_pattern(value: CriterionSpec) -> str:
    kind, text = _parameter(value)
    return f"(?:{text})" if kind == "output_matches" else re.escape(text)
