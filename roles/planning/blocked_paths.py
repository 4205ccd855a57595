"""A plan against what GGS blocked: tools its subtasks name, paths they check.

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

A subtask whose intent or context names a blocked tool (``names_tool``) is
rejected by R2's plan validator; one still naming it after the regenerations is
told the tool is gone (``tell_blocked``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from roles.claims.deletions import MAKES, paths_to_delete
from roles.contracts import CriterionSpec, SubTask, normalise_criterion

# An absolute path, or a file name with an extension, as a user writes them.
NAMED_PATH = re.compile(r"(?:~?/[\w.@+-]+(?:/[\w.@+-]+)*|\b[\w-]+\.[A-Za-z]\w{0,5}\b)")


def drop_blocked_paths(
    subtasks: Sequence[SubTask], blocked_targets: Sequence[str], request: str
) -> tuple[list[SubTask], list[str]]:
    """Return the subtasks without ``file_exists`` checks on a GGS-blocked path
    (or one a blocked command names) the request does not ask to make, on a path
    the request asks to delete (a small planner checks that the file it is to
    delete exists, which fails once it is deleted), or on a path a request that
    makes nothing names, and a note for each check dropped."""
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
