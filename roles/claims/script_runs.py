"""A script a subtask is asked to run has run only when a command ran it.

"Create hello.py that prints 'hello', then run it": a small executor writes the
file (often ``echo 'hello' > hello.py``) and reports "the script was then run"
with no command that ran it, and a small validator takes the claim. When the
subtask's intent asks to run a script it names (``run``/``execute`` and a file
with a script's extension in one sentence), the result stands only when a shell
command ran that file after its last write (``python3 hello.py``, ``sh
./build.sh``, ``./hello.py``). Whether the run succeeded is the criteria's to
judge; this rule only refuses a run that never happened.

The other way round, ``script_shown`` is the evidence that such a subtask did
what the request asks when the request says what the script prints ("Create
/srv/hello.py that prints 'hi', then run it"): after the script's last write, a
command ran it with its own interpreter, exited 0 and printed those words. A
small validator otherwise quotes the executor's "the script ran successfully",
which is never evidence.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from roles.claims.evidence import (
    WRITE_TOOLS,
    ToolCall,
    parse_evidence,
    split_exit_code,
)

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
# The interpreter a script's extension names (a .py run by sh is no Python run).
OWN_RUNNERS = {
    "py": r"python3?(?:\.\d+)?",
    "sh": r"(?:sh|bash|zsh|dash|source|\.)",
    "bash": r"(?:bash|source|\.)",
    "pl": r"perl",
    "rb": r"ruby",
    "js": r"node",
    "php": r"php",
    "lua": r"lua",
}
# What the request says the script prints: "that prints 'hello from artoo'".
PRINTS = re.compile(r"""\bprints?\s+(?P<q>['"`])(?P<text>[^'"`\n]+)(?P=q)""", re.I)


def unrun_script(intent: str, tool_calls: Iterable[str]) -> str:
    """Return why the subtask's script has not run, or "" when it has (or
    the intent asks to run none)."""
    calls = [c for c in map(parse_evidence, tool_calls) if c is not None]
    for name in _asked(intent):
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


def script_shown(intent: str, request: str, tool_calls: Iterable[str]) -> str:
    """Return the evidence that the subtask ran the one script the request
    names and printed what the request says it prints; else "".

    The subtask's ``intent`` must ask to run that script; the last command that
    ran it after its last write must name the request's path when that is
    absolute, use the script's own interpreter (or run it as a program), exit
    0 and print the words; the file must still be there.
    """
    printed = PRINTS.findall(request or "")
    scripts = list(dict.fromkeys(SCRIPT.findall(request or "")))
    if len(printed) != 1 or len(scripts) != 1 or not RUN_ASKED.search(request):
        return ""
    words, script = printed[0][1].strip(), scripts[0]
    name = PurePosixPath(script).name
    if name not in _asked(intent) or not words:
        return ""
    absolute = script if script.startswith("/") else ""
    calls = [c for c in map(parse_evidence, tool_calls) if c is not None]
    written = max((i for i, c in enumerate(calls) if _writes(c, name)), default=-1)
    ran = [c for c in calls[written + 1 :] if _runs(c, name, own=True)]
    if not ran:
        return ""
    command, (code, output) = ran[-1].args["command"], split_exit_code(ran[-1].output)
    if code != 0 or words not in output or (absolute and absolute not in command):
        return ""
    if absolute and not os.path.isfile(absolute):
        return ""
    return (
        f"`{command}` ran {script} after its last write, exited 0 and printed {words!r}"
    )


def _asked(intent: str) -> list[str]:
    """Return the file names of the scripts a sentence of ``intent`` asks to run."""
    asked = [s for s in SENTENCE.split(intent) if RUN_ASKED.search(s)]
    found = [m for sentence in asked for m in SCRIPT.findall(sentence)]
    return list(dict.fromkeys(PurePosixPath(m).name for m in found))


def _runs(call: ToolCall, name: str, *, own: bool = False) -> bool:
    command = call.args.get("command") if call.tool == "shell" else None
    if not isinstance(command, str):
        return False
    file = rf"[\w./~-]*(?<![\w.-]){re.escape(name)}\b"
    runners = OWN_RUNNERS.get(name.rsplit(".", 1)[-1], RUNNERS) if own else RUNNERS
    by_interpreter = rf"(?<![\w.-]){runners}\s+(?:-\S+\s+)*['\"]?{file}"
    as_program = rf"(?:^|[;&|(]|&&|\|\|)\s*['\"]?{file}"
    return bool(re.search(by_interpreter, command) or re.search(as_program, command))


def _writes(call: ToolCall, name: str) -> bool:
    if call.tool in WRITE_TOOLS:
        path = call.args.get("path")
        return isinstance(path, str) and PurePosixPath(path).name == name
    command = call.args.get("command") if call.tool == "shell" else None
    if not isinstance(command, str):
        return False
    target = rf"[\w./~-]*(?<![\w.-]){re.escape(name)}\b"
    return bool(re.search(rf"(?:>>?|\btee\s+(?:-a\s+)?)\s*['\"]?{target}", command))
