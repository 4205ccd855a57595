"""Fixtures for the LLM layer tests: a scripted server and recorded sleeps."""

from __future__ import annotations

import pytest

from tests.llm_server import ScriptedLLMServer


@pytest.fixture
def llm_server():
    """Yield a running ScriptedLLMServer, stopped after the test."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def sleeps() -> list[float]:
    """Return a list that an injected ``sleep`` appends its delays to."""
    return []
