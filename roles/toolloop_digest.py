"""Earlier tool results, shortened once the model has used them (R3).

A result stays whole in the request right after its call: the model reads it
there. From the request after that one (``AGE_TURNS`` model turns after its
call) a long result is shown as a one-line digest, then its head and tail::

    [earlier result of shell ls: exit 0, 120 lines, 3,981 bytes; head and tail kept]
    a.csv
    ...
    z.csv

It is shortened exactly once and never changes again, so the requests after it
share one prefix in the server's prompt cache; the system prompts are never
touched, and neither are short results or errors. Only the conversation is
shortened: the toolbox's records keep the whole output and its evidence
entries are made from it, for R4a; the loop's calls keep what the model was
first shown, for the executor's review and repeat guard.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableSequence
from typing import Any

from roles.tools.shell import parse_shell_output

# A result is shortened from the request two model turns after its call: the
# model has then answered once with it in view.
AGE_TURNS = 2
# Results up to this long are never touched: the shortened form (digest, head
# and tail) is some 700 characters, and a result of 1,500 characters or less
# would save too little to be worth losing its middle; the toolbox caps what
# the model sees at 4,000 (``roles.tools.records.MODEL_OUTPUT_LIMIT``).
WHOLE_CHARS = 1500
HEAD_LINES, HEAD_CHARS = 5, 300
TAIL_LINES, TAIL_CHARS = 5, 300
ARGS_CHARS = 60


def is_worth_shortening(output: str, error: bool = False) -> bool:
    """Return True when a result is long enough to shorten once it is used."""
    return not error and len(output) > WHOLE_CHARS


def shorten_result(name: str, args: Mapping[str, Any], output: str) -> str:
    """Return the digest line of a result, then its head and tail."""
    code, body = parse_shell_output(output) if name == "shell" else (None, output)
    lines = body.splitlines()
    exit_part = "" if code is None else f"exit {code}, "
    digest = (
        f"[earlier result of {name}{_short_args(args)}: {exit_part}"
        f"{len(lines)} line{'' if len(lines) == 1 else 's'}, "
        f"{len(output.encode()):,} bytes; head and tail kept]"
    )
    return f"{digest}\n{_head(body)}\n...\n{_tail(body)}"


def _short_args(args: Mapping[str, Any]) -> str:
    """Return the call's arguments in one short line, led by a space."""
    if not args:
        return ""
    if len(args) == 1:
        value = next(iter(args.values()))
        text = value if isinstance(value, str) else json.dumps(value)
    else:
        text = json.dumps(dict(args), ensure_ascii=False)
    text = " ".join(text.split())
    if len(text) > ARGS_CHARS:
        text = text[: ARGS_CHARS - 1] + "…"
    return f" {text}"


def _head(text: str) -> str:
    head = text[:HEAD_CHARS]
    if "\n" in head:
        head = head[: head.rindex("\n")]
    return "\n".join(head.split("\n")[:HEAD_LINES])


def _tail(text: str) -> str:
    tail = text.rstrip("\n")[-TAIL_CHARS:]
    if "\n" in tail:
        tail = tail[tail.index("\n") + 1 :]
    return "\n".join(tail.split("\n")[-TAIL_LINES:])


class Earlier:
    """The long results of a conversation that are still whole.

    Each entry is plain data (it travels in a paused loop's state): the index
    of the result's message in the conversation, the model turn whose call it
    answers, the tool and its arguments, and what leads the message's content
    before the output (the text protocols' ``Tool <name> result:``).
    """

    def __init__(self, entries: list[dict[str, Any]] | None = None):
        self.entries = [dict(e) for e in entries or ()]

    def note(self, index: int, turn: int, name: str, args: Any, lead: str) -> None:
        """Note a long result told at ``index`` after model turn ``turn``."""
        self.entries.append(
            {"index": index, "turn": turn, "name": name, "args": args, "lead": lead}
        )

    def shift(self, by: int) -> None:
        """Move every entry ``by`` messages on (a prompt went in before them)."""
        for entry in self.entries:
            entry["index"] += by

    def settle(self, convo: MutableSequence[dict[str, Any]], turn: int) -> None:
        """Shorten, before model turn ``turn``, the results the model has used."""
        kept = []
        for entry in self.entries:
            if entry["turn"] > turn - AGE_TURNS:
                kept.append(entry)
                continue
            message = convo[entry["index"]]
            lead = entry["lead"]
            output = message["content"][len(lead) :]
            short = shorten_result(entry["name"], entry["args"], output)
            convo[entry["index"]] = {**message, "content": lead + short}
        self.entries = kept

    def state(self) -> list[dict[str, Any]]:
        """Return the entries as plain data."""
        return [dict(e) for e in self.entries]
