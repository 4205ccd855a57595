"""A tool output as display text, and the exit code it starts with."""

from __future__ import annotations

import json

from roles.claims.evidence import split_exit_code


def output_text(output: object) -> str:
    """Return an output as display text, without the leading exit-code line."""
    if output is None:
        return ""
    if not isinstance(output, str):
        return json.dumps(output, ensure_ascii=False, indent=2, default=str)
    return split_exit_code(output)[1]


def exit_code(output: object) -> int | None:
    return split_exit_code(output)[0] if isinstance(output, str) else None
