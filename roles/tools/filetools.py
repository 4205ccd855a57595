"""The file tools as a toolbox runs them: ``glob``, ``read_file``,
``read_file_lines`` and the path checks of the writing ones (``roles.tools.edits``).

A path is confined to the workspace and the allowed paths
(``files.resolve_confined``), a hidden path outside the workspace is refused,
and a path the sandbox's uid may not read, list or write is refused as the
shell would refuse it (``roles.tools.access``). A refused or missing file's
error names files of its name that may be read instead, and so does a shell
command's "Permission denied" on a path the sandbox's uid may not read, or its
"No such file or directory" on an absolute path that has a namesake nearby, and
a lone ``find DIR -name NAME`` that found nothing where DIR holds NAME's stem
with another extension. A protected file (a project milestone's tests,
``roles.projects.verification``) is outside the write set: a write to it, by a
file tool or a command's effect, is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from roles.claims.evidence import READ_TOOLS, WRITE_TOOLS
from roles.tools import files, lines, shell_hints
from roles.tools.access import READ, SEARCH, WRITE, Access
from roles.tools.errors import ToolError

# A path in a shell error line: "wc: /srv/x/a.csv: Permission denied",
# "find: ‘/srv/x’: Permission denied", "bash: line 1: x/a.csv: Permission denied".
_ERROR_PATH = re.compile(r"[\w.~-]*/[^\s:'‘’`\"]+")
DENIED_HINTS = 3


class FileTools:
    """Resolve, check and run the file tools of one toolbox."""

    def __init__(
        self,
        workspace: Path,
        roots: Sequence[Path],
        hidden: Sequence[Path],
        access: Access,
        protected: Sequence[Path] = (),
    ):
        self.workspace = workspace
        self.roots = tuple(roots)
        self.hidden = tuple(hidden)
        self.access = access
        self.protected = tuple(protected)

    def path(self, path: str) -> Path:
        """Return ``path`` resolved, or raise ToolError when it is not allowed."""
        resolved = files.resolve_confined(path, self.workspace, self.roots)
        for hidden in self.hidden:
            if resolved.is_relative_to(hidden) and not resolved.is_relative_to(
                self.workspace
            ):
                raise ToolError(
                    f"path {path!r} is hidden from runs (it holds the "
                    "application's own data); use a path in the workspace"
                )
        return resolved

    def check(self, name: str, args: dict) -> None:
        """Refuse a read or write the sandbox's uid could not make (an edit
        needs both)."""
        if name not in (*READ_TOOLS, *WRITE_TOOLS):
            return
        path = self.path(args["path"])
        if name in WRITE_TOOLS:
            self.check_protected([path])
            self.access.check(path, WRITE)
            if name != "apply_edit":
                return
        try:
            self.access.check(path, READ)
        except ToolError as err:
            raise ToolError(f"{err}{self._readable_elsewhere(path)}") from None

    def check_protected(self, paths: Iterable[Path | str]) -> None:
        """Refuse a change to a protected file, or to a directory holding one."""
        for changed in paths:
            changed = Path(changed)
            hit = next((p for p in self.protected if p.is_relative_to(changed)), None)
            if hit is not None:
                shown = files.shown(hit, self.workspace)
                raise ToolError(
                    f"{shown} is protected: the milestone's verification runs it "
                    "as its test, so a task may not change it (unless the task is "
                    "to write it, before it is committed); change the code it "
                    "tests instead"
                )

    def glob(self, args: dict) -> str:
        root = args.get("root") or "."
        if not isinstance(root, str):
            raise ToolError("glob root must be a string")
        self.path(root)
        return files.glob_files(
            args["pattern"],
            root,
            workspace=self.workspace,
            roots=self.roots,
            hidden=self.hidden,
            access=self.access,
        )

    def read(self, args: dict, limit: int = files.READ_LIMIT) -> str:
        path = self.path(args["path"])
        if not path.exists():
            raise ToolError(self._not_found(path))
        return files.read_text(path, limit=limit, roots=self.roots)

    def read_lines(self, args: dict) -> str:
        """Run ``read_file_lines``: the numbered lines of the asked span."""
        start, end = lines.span(args)
        path = self.path(args["path"])
        if not path.exists():
            raise ToolError(self._not_found(path))
        shown = files.shown(path, self.workspace)
        return lines.read_lines(path, shown, start, end, self.roots)

    def missing(self, path: Path) -> str:
        """Return the error of a missing file, naming files to use instead."""
        return self._not_found(path)

    def elsewhere(self, name: str, args: Any) -> str:
        """Return "; files named … under …" when a refused read names a missing
        file or one the run's user may not read: a blocked path may have a copy
        elsewhere that the run can read."""
        path = args.get("path") if isinstance(args, dict) else None
        if name not in READ_TOOLS or not isinstance(path, str):
            return ""
        try:
            resolved = self.path(path)
        except ToolError:
            return ""
        if self.access.closed(resolved, READ) is not None:
            return self._readable_elsewhere(resolved)
        if resolved.exists():
            return ""
        return self._not_found(resolved).removeprefix(f"no such file: {resolved}")

    def _not_found(self, path: Path) -> str:
        return files.not_found(
            path,
            workspace=self.workspace,
            roots=self.roots,
            hidden=self.hidden,
            access=self.access,
        )

    def _readable_elsewhere(self, path: Path) -> str:
        """Return "; files named … under …: …" that the sandbox's uid may read,
        searched from the directory above the closed one."""
        blocked = self.access.closed(path, READ) or path
        base = blocked.parent if blocked != path else path.parent
        if not any(base.is_relative_to(r) for r in self.roots):
            return ""
        if self.access.closed(base, READ | SEARCH) is not None:
            return ""
        found, _ = files.namesakes(
            path.name,
            base,
            workspace=self.workspace,
            hidden=self.hidden,
            access=self.access,
        )
        found = [f for f in found if self.access.closed(f, READ) is None]
        if not found:
            return ""
        named = ", ".join(files.shown(f, self.workspace) for f in found)
        return f"; files named {path.name!r} under {base} it may read: {named}"

    def hinted(
        self,
        output: str,
        command: str,
        tools: Mapping[str, Sequence[str]] | None = None,
    ) -> str:
        """Return a shell result with its hints (``shell_hints.with_hint``, which
        knows the ``tools`` offered), the readable copies of what it was denied
        and the namesakes of what it did not find."""
        output = shell_hints.with_hint(output, command, tools)
        more = self.denied_copies(output) + self.missing_namesakes(output)
        more += self.found_nothing(output, command)
        return output.rstrip("\n") + more if more else output

    def found_nothing(self, output: str, command: str) -> str:
        """Return "[find found no file named 'config.yaml' under DIR; files of
        the same name with another extension: db/config.yml]" for a lone ``find
        DIR -name NAME`` that exited 0 and printed nothing, when DIR (an
        absolute path inside the roots the sandbox's uid may list) holds such
        files, else ""."""
        start, name = shell_hints.find_name(command)
        code, text = shell_hints.parse_shell_output(output)
        if code != 0 or text.strip() or not start.startswith("/"):
            return ""
        try:
            base = self.path(start)
        except ToolError:
            return ""
        if not base.is_dir() or self.access.closed(base, READ | SEARCH) is not None:
            return ""
        found, alike = files.namesakes(
            name, base, workspace=self.workspace, hidden=self.hidden, access=self.access
        )
        if found or not alike:
            return ""
        named = ", ".join(
            files.shown(f, self.workspace) for f in alike[: files.NEAR_LIMIT]
        )
        return (
            f"\n[find found no file named {name!r} under {base}; files of the "
            f"same name with another extension: {named}]"
        )

    def missing_namesakes(self, output: str) -> str:
        """Return a hint for each absolute path of a "No such file or directory"
        line of a shell result that is missing and has files of its name (or
        stem) nearby, as ``read_file`` names them: "[no such file: PATH (…
        files of the same name with another extension: db/config.yml)]"."""
        return _line_hints(
            output,
            "No such file or directory",
            lambda raw: self._namesakes_of(raw) if raw.startswith("/") else "",
        )

    def _namesakes_of(self, raw: str) -> str:
        try:
            path = self.path(raw)
        except ToolError:
            return ""
        if path.exists() or path.is_symlink():
            return ""
        said = files.not_found(
            path,
            workspace=self.workspace,
            roots=self.roots,
            hidden=self.hidden,
            access=self.access,
            guess=False,
        )
        return "" if said == f"no such file: {path}" else f"[{said}]"

    def denied_copies(self, output: str) -> str:
        """Return a hint for each path of a "Permission denied" line of a shell
        result that the sandbox's uid may not read and that has a copy it may
        read: "[PATH: the run's user may not read it; files named … it may
        read: …]", one per line."""
        return _line_hints(output, "Permission denied", self._denied_copy)

    def _denied_copy(self, raw: str) -> str:
        try:
            path = self.path(raw)
        except ToolError:
            return ""
        if self.access.closed(path, READ) is None:
            return ""
        copies = self._readable_elsewhere(path)
        return f"[{raw}: the run's user may not read it{copies}]" if copies else ""


def _line_hints(output: str, error: str, hint_of: Callable[[str], str]) -> str:
    """Return the distinct hints ``hint_of`` gives for the paths of the lines of
    ``output`` that say ``error``, at most ``DENIED_HINTS``, one per line."""
    hints: list[str] = []
    for line in output.splitlines():
        if error not in line:
            continue
        for raw in _ERROR_PATH.findall(line):
            hint = hint_of(raw)
            if hint and hint not in hints:
                hints.append(hint)
    return "".join(f"\n{hint}" for hint in hints[:DENIED_HINTS])
