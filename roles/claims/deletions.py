"""What a request names as its effect, checked in code before any accept.

A request to delete named paths is met only when those paths are gone, whatever
criteria R2 wrote: a small planner can write a check of the opposite
(``file_exists`` on the file to delete), every subtask then matches, and the
run would accept while nothing was deleted. The direct objects of a deleting
verb are read from the request::

    "Delete /srv/app/old.log"                 -> ["/srv/app/old.log"]
    "remove the files /tmp/a.txt and /tmp/b"  -> ["/tmp/a.txt", "/tmp/b"]
    "Delete all .log files in /var/log/app"   -> []   (not the directory)
    "Do not delete /etc/hosts"                -> []

Only absolute paths without wildcards count; anything else is left to the
criteria, as before.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from roles.claims.evidence import parse_evidence, split_exit_code
from roles.contracts import CriterionVerdict

__all__ = [
    "MAKES",
    "denied_effect",
    "deletions_done",
    "deletions_shown",
    "only_deletes",
    "paths_to_delete",
    "subtask_deletions",
    "unmet_deletions",
]

# A request that makes something (a file, a script): a file it names may be its
# effect, and a total it mentions may be what the thing it makes prints.
MAKES = re.compile(
    r"\b(?:write|writes|create|creates|save|make|generate|produce|touch|copy|move"
    r"|rename|store|put|append|build|output|dump|export)\b",
    re.IGNORECASE,
)

VERB = re.compile(r"\b(?:delete|remove|erase|unlink|rm(?:\s+-[a-zA-Z]+)*)\s+", re.I)
NEGATED = re.compile(r"(?:\bnot|n't|\bnever|\bwithout)\s+(?:\w+\s+)?$", re.I)
NOUN = r"(?:the\s+)?(?:(?:files?|director(?:y|ies)|folders?|dirs?)\s+)?"
OBJECT = re.compile(
    NOUN + r"""(?:(?P<q>['"`])(?P<quoted>/[^'"`\n]+)(?P=q)|(?P<bare>/[^\s'"`,;()]+))"""
)
# A path ends at a space, a line end or closing punctuation: "old.log's" is not one.
PATH_END = re.compile(r"""[.,;:!?)]*(?:\s|$)""")
JOIN = re.compile(r"\s*(?:,\s*and|,|and)\s+", re.I)
# A command that deletes files: rm, unlink, shred -u, find … -delete.
DELETING = re.compile(r"(?<![\w.-])(?:rm|unlink|shred)(?![\w.-])|\s-delete\b")
# A sentence ends at ".", "!", ";" or "?" before a blank, or at a line end.
SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
# What may stand around a plain deletion besides its verb and paths.
POLITE = re.compile(r"[\s.!]*(?:(?:please|now)[\s.!,]*)*", re.IGNORECASE)
WILDCARD = re.compile(r"[*?\[\]{}$]")
INTENT_WORDS = re.compile(r"""[\s'"`/,;:()]+""")


def paths_to_delete(request: str) -> list[str]:
    """Return the absolute paths ``request`` asks to delete, in order, once each."""
    found: list[str] = []
    for verb in VERB.finditer(request or ""):
        if NEGATED.search(request[max(0, verb.start() - 24) : verb.start()]):
            continue
        for path in _objects(request, verb.end()):
            if path not in found:
                found.append(path)
    return found


def denied_effect(paths: Sequence[str], tool_calls: Sequence[str]) -> str:
    """Return the operator's Law 1 denial of a call on one of ``paths`` (the
    request's own effect: what it deletes, writes or changes), as the tool
    result says it, else "".

    The operator refused the effect, not a spelling of it: another command
    for the same effect would only ask again, so nothing is left to try."""
    for entry in tool_calls:
        call = parse_evidence(entry)
        if call is None or not call.output.lstrip().startswith("[LAW1]"):
            continue
        said = f"{call.args}\n{call.output}"
        if any(path.rstrip("/") and path.rstrip("/") in said for path in paths):
            return call.output.strip().splitlines()[0]
    return ""


def unmet_deletions(request: str) -> list[CriterionVerdict]:
    """Return a failing verdict for each path the request deletes that still exists."""
    return [
        _unmet(path, f"the request asks to delete {path}, and it still exists")
        for path in _still_there(request)
    ]


def subtask_deletions(intent: str, request: str) -> list[CriterionVerdict]:
    """Return a failing verdict for each path the request deletes that still
    exists, when the subtask's ``intent`` is to delete something.

    A small planner gives the deleting subtask a check of the opposite
    (``file_exists``) and the executor stops after reading the file: the
    subtask must not match while what it was to delete is still there.
    """
    if not _deletes(intent):
        return []
    return [
        _unmet(
            path,
            f"the request asks to delete {path}, and it still exists: delete it "
            f"(rm {path}; the operator approves it before it runs)",
        )
        for path in _own(intent, _still_there(request), request)
    ]


def deletions_shown(intent: str, request: str, tool_calls: Sequence[str]) -> str:
    """Return the evidence that a subtask whose ``intent`` is to delete did what
    the request asks (``_gone``); else "".

    An executor reports "The file has been deleted"; a validator model then
    quotes that claim as its evidence, which is never accepted. The command that
    ran and the file that is gone are the evidence. A subtask that also makes
    something is left to its criteria.
    """
    if not _deletes(intent) or MAKES.search(intent):
        return ""
    return _gone(_own(intent, paths_to_delete(request), request), tool_calls)


def deletions_done(request: str, tool_calls: Sequence[str]) -> str:
    """Return the evidence that a request which only deletes named paths is met
    (``_gone``); else "".

    Such a request has no other effect and asks nothing, so R2's criteria (a
    small planner copies a failure or the executor's claim into an output
    check) cannot ask more of it than that the paths are gone.
    """
    if not only_deletes(request):
        return ""
    return _gone(paths_to_delete(request), tool_calls)


def _gone(paths: Sequence[str], tool_calls: Sequence[str]) -> str:
    """Return how each of ``paths`` is shown deleted: it is gone, and a
    deleting shell command of ``tool_calls`` that names the path (or its file
    name) exited 0; "" when there are none or one is not shown."""
    if not paths or any(_exists(path) for path in paths):
        return ""
    shown = []
    for path in paths:
        command = deleting_command(path, tool_calls)
        if not command:
            return ""
        shown.append(f"`{command}` exited 0 and {path} no longer exists")
    return "; ".join(shown)


def only_deletes(request: str) -> bool:
    """Return True when every sentence of ``request`` is a plain deletion of
    named paths ("Delete /srv/old.log.", "Please remove /a and /b now")."""
    sentences = [s for s in SENTENCE.split(request or "") if s.strip()]
    return bool(sentences) and all(_plain_deletion(s) for s in sentences)


def _plain_deletion(sentence: str) -> bool:
    verb = VERB.search(sentence)
    if verb is None or not POLITE.fullmatch(sentence[: verb.start()]):
        return False
    paths, end = _object_list(sentence, verb.end())
    return bool(paths) and POLITE.fullmatch(sentence[end:]) is not None


def deleting_command(path: str, tool_calls: Sequence[str]) -> str:
    """Return the last deleting shell command that names ``path`` and exited 0,
    or ""."""
    for entry in reversed(tool_calls):
        call = parse_evidence(entry)
        if call is None or call.tool != "shell":
            continue
        command = str(call.args.get("command") or "")
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        named = path in words or Path(path).name in words
        deleting = DELETING.search(command) is not None
        if named and deleting and split_exit_code(call.output)[0] == 0:
            return command
    return ""


def _unmet(path: str, evidence: str) -> CriterionVerdict:
    return CriterionVerdict(
        criterion=f"{path} is deleted",
        mode="verifiable",
        verdict="fail",
        failure_class="logical",
        evidence=evidence,
        rule="deletion-undone",
    )


def _still_there(request: str) -> list[str]:
    return [path for path in paths_to_delete(request) if _exists(path)]


def _exists(path: str) -> bool:
    return Path(path).exists() or Path(path).is_symlink()


def _own(intent: str, paths: Sequence[str], request: str) -> list[str]:
    """Return those of ``paths`` a deleting subtask's ``intent`` names (by
    path or file name), or all of them when it names none of the request's.

    Parallel subtasks that each delete one file are each judged on their own:
    the other's file may still wait on the operator's approval.
    """
    words = set(INTENT_WORDS.split(intent or ""))
    named = [
        p for p in paths_to_delete(request) if p in intent or Path(p).name in words
    ]
    if not named:
        return list(paths)
    return [p for p in paths if p in named]


def _deletes(text: str) -> bool:
    return any(
        not NEGATED.search(text[max(0, verb.start() - 24) : verb.start()])
        for verb in VERB.finditer(text or "")
    )


def _objects(text: str, at: int) -> list[str]:
    return _object_list(text, at)[0]


def _object_list(text: str, at: int) -> tuple[list[str], int]:
    """Return the paths of the object list that starts at ``at``, and its end."""
    paths, end = [], at
    while match := OBJECT.match(text, at):
        path = match["quoted"] or match["bare"].rstrip(".,:;!?")
        stop = match.end("quoted") + 1 if match["quoted"] else match.end("bare")
        if not match["quoted"] and not PATH_END.match(text, stop):
            break
        if not WILDCARD.search(path):
            paths.append(path)
        end = stop if match["quoted"] else match.start("bare") + len(path)
        joined = JOIN.match(text, match.end())
        if joined is None:
            break
        at = joined.end()
    return paths, end
