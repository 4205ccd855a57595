"""A script a subtask is asked to run has run only when a command ran it.

"Create hello.py that prints 'hello', then run it": a small executor writes the
file (often ``echo 'hello' > hello.py``) and reports "the script was then run"
with no command that ran it, and a small validator takes the claim. When the
subtask's intent asks to run a script it names (``run``/``execute`` and a file
with a script's extension in one sentence), the result stands only when a shell
command ran that file after its last write (``python3 hello.py``, ``sh
./build.sh``, ``./hello.py``). Whether the run succeeded is the criteria's to
judge; this rule only refuses a run that never happened.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from roles.evidence import ToolCall, parse_evidence

# The scripts to run are those named in a sentence that says run or execute
# ("Step 1: Read utils.py. Step 2: Run main.py." asks to run main.py only).
SENTENCE = re.compile(r"(?<=[.!?])\s+|[;\n]")
# "run" as a verb, not the stem of a file name (run.sh) or a longer word.
RUN_ASKED = re.compile(r"\b(?:run|execute)\b(?!\.\w)", re.IGNORECASE)
SCRIPT = re.compile(r"[\w./~-]*\b[\w-]+\.(?:py|sh|bash|pl|rb|js|php|lua)\b")
# What runs a file named after it (``timeout 5 python3 x.py`` included).
RUNNERS = (
    r"(?:python3?(?:\.\d+)?|pytest|sh|bash|zsh|dash|perl|ruby|node|php|lua|"
    r"source|\.|exec)"
)


def unrun_script(intent: str, tool_calls: Iterable[str]) -> str:
    """Return why the subtask's script has not run, or "" when it has (or
    the intent asks to run none)."""
    asked = [s for s in SENTENCE.split(intent) if RUN_ASKED.search(s)]
    found = [m for sentence in asked for m in SCRIPT.findall(sentence)]
    names = dict.fromkeys(PurePosixPath(m).name for m in found)
    calls = [c for c in map(parse_evidence, tool_calls) if c is not None]
    for name in names:
        written = max(
            (i for i, call in enumerate(calls) if _writes(call, name)), default=-1
        )
        if not any(_runs(call, name) for call in calls[written + 1 :]):
            after = " after its last write" if written >= 0 else ""
            return (
                f"the subtask asks to run {name}, but no command ran it{after}; "
                f"run it (python3 {name}, sh {name} or ./{name}) and report what "
                "it printed"
            )
    return ""


def _runs(call: ToolCall, name: str) -> bool:
    command = call.args.get("command") if call.tool == "shell" else None
    if not isinstance(command, str):
        return False
    file = rf"[\w./~-]*(?<![\w.-]){re.escape(name)}\b"
    by_interpreter = rf"(?<![\w.-]){RUNNERS}\s+(?:-\S+\s+)*['\"]?{file}"
    as_program = rf"(?:^|[;&|(]|&&|\|\|)\s*['\"]?{file}"
    return bool(re.search(by_interpreter, command) or re.search(as_program, command))


def _writes(call: ToolCall, name: str) -> bool:
    if call.tool == "write_file":
        path = call.args.get("path")
        return isinstance(path, str) and PurePosixPath(path).name == name
    command = call.args.get("command") if call.tool == "shell" else None
    if not isinstance(command, str):
        return False
    target = rf"[\w./~-]*(?<![\w.-]){re.escape(name)}\b"
    return bool(re.search(rf"(?:>>?|\btee\s+(?:-a\s+)?)\s*['\"]?{target}", command))
