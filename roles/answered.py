"""A question that asks for a number is answered by one, checked before any accept.

"What is the total of the amount column?" or "How many entries have the level
ERROR?" is answered only by a number. A small executor sometimes reports what
it did instead ("The 'amount' column is the third column", "the file was read
successfully"); a check that any tool output meets (the 0 an awk over the wrong
column printed, ``.*``) then matches it, and the run would accept an answer
that states no number at all. Before R4b accepts such a question, some
subtask's output must state a number; the evidence rule of R4a has already
judged every number a subtask states.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from roles.aggregate import NUMBER
from roles.asked import asks_for_aggregate
from roles.contracts import CriterionVerdict, SubTaskOutcome
from roles.facts import output_text
from roles.requested import MAKES

__all__ = ["ANSWERED", "asks_for_a_number", "unanswered"]

ANSWERED = "the answer states the number the question asks for"
# A question, not a request to make something that prints a total.
QUESTION = re.compile(
    r"\?\s*$|^\s*(?:how many|what(?: is|'s)|count|sum|compute|calculate)\b",
    re.IGNORECASE | re.MULTILINE,
)


def asks_for_a_number(request: str) -> bool:
    """Return True when ``request`` is a question whose answer is a count, a
    total or an average (and not a request to make a file or a script)."""
    text = request or ""
    return (
        asks_for_aggregate(text)
        and QUESTION.search(text) is not None
        and MAKES.search(text) is None
    )


def unanswered(
    request: str, outcomes: Sequence[SubTaskOutcome]
) -> list[CriterionVerdict]:
    """Return a failing verdict when ``request`` asks for a number and no
    subtask's output states one, else []."""
    if not asks_for_a_number(request):
        return []
    outputs = [output_text(o.output) for o in outcomes]
    if any(NUMBER.search(text) for text in outputs):
        return []
    said = " / ".join(t.strip()[:120] for t in outputs if t.strip()) or "(nothing)"
    return [
        CriterionVerdict(
            criterion=ANSWERED,
            mode="verifiable",
            verdict="fail",
            failure_class="logical",
            evidence=(
                "the request asks for a count or a total, and no subtask's output "
                f"states a number (they said: {said}); the answer is the number a "
                "command computes: run it and state what it printed"
            ),
        )
    ]
