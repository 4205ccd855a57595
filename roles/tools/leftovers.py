"""Files a failed command left behind: not the data a task asks for.

``curl -s http://dead/q3.csv > q3.csv`` exits 7 and leaves an empty ``q3.csv``
(the shell makes the file before curl runs). ``wc -l q3.csv`` then prints 0, a
count of the leftover, not of the report: taken as evidence, a run answers "0
rows" for data it never had. So a file that a sandboxed command created or
rewrote and then failed is spoiled, until a command that succeeds (or
``write_file``) writes it again, or something deletes it. Reading it is
refused with what left it: ``read_file`` at once, and a shell command that
names it and leaves it as it was after it ran (its output is never shown, so
no answer rests on it). A command that writes it again, like the download
tried once more, or that fails, is shown as any other::

    spoiled = Spoiled(workspace)
    spoiled.record("curl -s URL > q3.csv", done.effect, "[exit code 7]\\n")
    spoiled.refused("wc -l q3.csv", set(), "[exit code 0]\n0 q3.csv\n")
    # "q3.csv is what `curl -s URL > q3.csv` left when it failed (exit code 7) …"

Only the sandbox reports what a command changed: an unconfined shell
(``ARTOO_SANDBOX=off``) spoils nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from roles.tools.effect import Effect
from roles.tools.shell import parse_shell_output

__all__ = ["Spoiled"]

# Kinds of change that put new content at a path (roles.tools.effect).
WRITES = frozenset({"created", "truncated", "overwritten", "replaced"})
COMMAND_CAP = 160
REASON = (
    "{path} is what `{command}` left when it failed (exit code {code}): it is "
    "not the data the task names, so nothing read from it counts. Get the data "
    "another way (another source, a copy on disk), or report failed if it "
    "cannot be had"
)


class Spoiled:
    """The files of one subtask's toolbox that a failed command left."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = Path(workspace)
        # path -> (command, exit code) of the failed command that wrote it
        self.left: dict[str, tuple[str, int]] = {}

    def record(self, command: str, effect: Effect, output: str) -> None:
        """Take what a command that ran changed, and how it ended."""
        code = parse_shell_output(output)[0]
        for change in effect.changes:
            path = change.path
            if path.endswith("/") or change.kind not in WRITES | {"deleted"}:
                continue
            if code and change.kind in WRITES:
                self.left[path] = (command, code)
            else:
                self.left.pop(path, None)

    def wrote(self, path: str | Path) -> None:
        """Forget ``path``: something wrote it whole again."""
        self.left.pop(str(path), None)

    def reason(self, path: str) -> str:
        """Return why reading ``path`` is refused."""
        command, code = self.left[path]
        if len(command) > COMMAND_CAP:
            command = command[: COMMAND_CAP - 1] + "…"
        return REASON.format(path=path, command=command, code=code)

    def refused_read(self, path: str | Path) -> str:
        """Return why reading ``path`` is refused, or "" when it may be read."""
        return self.reason(str(path)) if str(path) in self.left else ""

    def refused(self, command: str, changed: Iterable[str], output: str) -> str:
        """Return why the ``output`` of ``command``, which ran and changed
        ``changed``, is refused: it succeeded on a spoiled file it names and
        left as it was. A command that failed shows its failure, as always."""
        if parse_shell_output(output)[0] != 0:
            return ""
        changed = set(changed)
        for path in self.left:
            if path not in changed and self._names(command, path):
                return self.reason(path)
        return ""

    def _names(self, command: str, path: str) -> bool:
        spellings = [path]
        try:
            spellings.append(str(Path(path).relative_to(self.workspace)))
        except ValueError:
            pass
        return any(
            re.search(rf"(?<![\w/.-])(?:\./)?{re.escape(s)}(?![\w.-])", command)
            for s in spellings
        )
