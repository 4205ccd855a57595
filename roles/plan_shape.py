"""A linear chain of subtasks joined into one, for models that hand results badly.

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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from roles.contracts import SubTask, normalise_criterion


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
