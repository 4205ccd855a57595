"""Words a user reads: role codes named, pictographs dropped.

``plain("❌ R4b could not verify")`` is ``"the result checker could not verify"``.
"""

from __future__ import annotations

import re

# Role codes as the user reads them.
ROLE_NAMES = {
    "R1": "the perceiver",
    "R2": "the planner",
    "R3": "the executor",
    "R4": "the checkers",
    "R4a": "the step checker",
    "R4b": "the result checker",
    "R5": "memory",
    "R6": "the auditor",
    "R7": "the controller",
}
ROLE_CODE = re.compile(r"\bR[1-7][ab]?\b")
# Pictographs and dingbats (✅ ❌ ⚠) are drawn only by an emoji font: elsewhere
# the reader sees a box.
PICTOGRAPH = re.compile("[\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff]")


def plain(text: str) -> str:
    """Return ``text`` with role codes named, pictographs dropped, on one line."""
    text = ROLE_CODE.sub(lambda m: ROLE_NAMES.get(m.group(0), ""), text or "")
    return " ".join(PICTOGRAPH.sub("", text).split())
