"""Each role's fixed prompt in the local model's own tokens, section by section.

A role's fixed prompt is what it sends before any task's words: its system
prompt and, for R3, the tools' JSON schemas. llama-server renders the chat
template (``/apply-template``, with ``tools`` as R3 sends them) and counts the
tokens (``/tokenize``), so the figures are the model's own, template included.
A section is a paragraph of the system prompt (text between blank lines),
counted alone; their sum differs a little from the whole, whose template and
joins count too.

    python bench/prompttokens.py              # starts the local model (make model)
    python bench/prompttokens.py --url http://127.0.0.1:8080   # a running server

Measures only: which sections the model uses is an ablation on the tuning set.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from roles import (  # noqa: E402
    agent_validator_prompts,
    executor_prompts,
    meta_validator,
    perceiver,
)
from roles.contracts import SubTask  # noqa: E402
from roles.planner import DEFAULT_TOOLS  # noqa: E402
from roles.planning.prompts import PLAN_SYSTEM  # noqa: E402
from roles.projects import prompts as project_prompts  # noqa: E402
from roles.tools import Toolbox  # noqa: E402

SECTION_CHARS = 60
TIMEOUT_S = 60


@dataclass(frozen=True)
class Fixed:
    """One role's fixed prompt: its system text and the tools it sends."""

    role: str
    system: str
    tools: tuple[dict[str, Any], ...] = ()


def fixed_prompts(workspace: Path) -> list[Fixed]:
    """Return every role's fixed prompt as it would be sent today."""
    box = Toolbox(workspace)
    subtask = SubTask(subtask_id="s", parent_task_id="t", intent="-")
    executor = executor_prompts.build_messages(subtask, box, None, "", 1, 10)
    return [
        Fixed("R1 perceiver", perceiver.TASK_SYSTEM),
        Fixed("R2 planner", PLAN_SYSTEM.format(tools=", ".join(DEFAULT_TOOLS))),
        Fixed(
            "R3 executor",
            executor[0]["content"],
            tuple(spec.as_openai() for spec in box.specs()),
        ),
        Fixed("R4a agent-validator", agent_validator_prompts.SYSTEM_PROMPT),
        Fixed("R4b meta-validator", meta_validator.SYSTEM),
        Fixed("project scope", project_prompts.SCOPE_SYSTEM),
        Fixed("project planner", project_prompts.PLANNER_SYSTEM),
        Fixed("project QA", project_prompts.QA_SYSTEM),
        Fixed("project assessor", project_prompts.ASSESSOR_SYSTEM),
    ]


def sections(text: str) -> list[str]:
    """Return ``text``'s paragraphs: the parts between blank lines."""
    return [part.strip() for part in text.split("\n\n") if part.strip()]


class Server:
    """A llama-server's template and tokenizer, over HTTP."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return json.load(response)

    def count(self, text: str) -> int:
        """Return the number of tokens of ``text``, special tokens read as such."""
        reply = self.post("/tokenize", {"content": text, "parse_special": True})
        return len(reply["tokens"])

    def rendered(self, system: str, tools: Sequence[dict[str, Any]]) -> str:
        """Return the prompt the chat template makes of ``system``, an empty
        user turn and ``tools``."""
        body: dict[str, Any] = {
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": ""},
            ]
        }
        if tools:
            body["tools"] = list(tools)
        return self.post("/apply-template", body)["prompt"]


@dataclass(frozen=True)
class Measured:
    """One role's fixed prompt in tokens: the whole, without tools, and each
    section of its system prompt."""

    role: str
    whole: int
    system: int
    sections: list[tuple[int, str]]


def measure(
    fixed: Sequence[Fixed],
    count: Callable[[str], int],
    render: Callable[[str, Sequence[dict[str, Any]]], str],
) -> list[Measured]:
    """Return each role's tokens: ``render(system, tools)`` gives the templated
    prompt, ``count(text)`` its tokens."""
    return [
        Measured(
            f.role,
            count(render(f.system, f.tools)),
            count(render(f.system, ())),
            [(count(part), part) for part in sections(f.system)],
        )
        for f in fixed
    ]


def report(measured: Sequence[Measured]) -> str:
    """Return the table of roles, then each role's sections, largest first."""
    lines = [
        "| role | fixed prompt (tokens) | system prompt | tool schemas |",
        "|---|---|---|---|",
    ]
    for m in measured:
        tools = m.whole - m.system
        lines.append(f"| {m.role} | {m.whole} | {m.system} | {tools or ''} |")
    for m in measured:
        lines += ["", f"{m.role}, sections by tokens:"]
        for tokens, part in sorted(m.sections, key=lambda s: -s[0]):
            head = " ".join(part.split())[:SECTION_CHARS]
            lines.append(f"  {tokens:5d}  {head}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running llama-server (default: start one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        fixed = fixed_prompts(Path(scratch))
        local = None
        url = args.url
        if not url:
            from devtools.localmodel import LocalModel, LocalModelMissing

            local = LocalModel(Path(scratch) / "model")
            try:
                local.start()
            except LocalModelMissing as missing:
                print(f"prompttokens: {missing}", file=sys.stderr)
                return 2
            url = local.base_url.removesuffix("/v1")
        try:
            server = Server(url)
            print(report(measure(fixed, server.count, server.rendered)))
        except OSError as error:
            print(f"prompttokens: {url} did not answer: {error}", file=sys.stderr)
            return 2
        finally:
            if local is not None:
                local.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
