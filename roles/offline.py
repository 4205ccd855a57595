"""The offline model: deterministic stand-in for an LLM, honest about it.

Each non-empty line of a task is a shell command and becomes one subtask (a line
starting with ``& `` runs in parallel with the previous one); ``# expect: <regex>``
at the end of a line asks that the output match. Roles receive an
``OfflineModel`` instead of an ``LLMClient`` when no LLM is configured and take
their deterministic path.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class OfflineModel:
    """Marker for the offline path, with an optional simulated latency per call."""

    latency_ms: int = 0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def pause(self) -> None:
        """Simulate one model call's latency."""
        if self.latency_ms > 0:
            self.sleep(self.latency_ms / 1000)
