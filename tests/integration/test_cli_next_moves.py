"""The artoo command waits, bounded, for R2's next moves after an abandon."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from artoo_web.models import Run
from tests.integration.test_pipeline_llm import (
    TASK_SPEC,
    accept,
    execute,
    judge,
    plan,
)
from tests.llm_server import ScriptedLLMServer, Step

pytestmark = pytest.mark.slow

MOVES = ["Open port 8080 on the server", "Ask the owner for access"]


def next_moves_after(delay_s: float):
    """Answer R2's next-moves prompt after ``delay_s``; plan an env failure else.

    R2 writes the next moves after the FinalResult is stored, so the delay keeps
    them back until after the run has ended.
    """

    def respond(request):
        system = str(request.messages[0].get("content") or "")
        if "The task was abandoned" not in system:
            return plan("env-step again")
        reply = {"accomplished": "found the server down", "next_moves": MOVES}
        return Step(content=json.dumps(reply), delay_s=delay_s)

    return respond


@pytest.fixture
def model(monkeypatch):
    with ScriptedLLMServer() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ARTOO_LLM_RETRIES", "1")
        server.default_reply(json.dumps(TASK_SPEC), role="R1")
        server.responder(execute, role="R3")
        server.responder(judge, role="R4a")
        server.responder(accept, role="R4b")
        yield server


def artoo(*args: str) -> tuple[int, list[str]]:
    out = StringIO()
    with pytest.raises(SystemExit) as exit_:
        call_command("artoo", *args, "--timeout", "240", stdout=out)
    return exit_.value.code, out.getvalue().splitlines()


def test_after_an_abandon_the_cli_waits_for_the_next_moves_and_prints_them(
    celery_worker, user, model
):
    model.responder(next_moves_after(1.0), role="R2")

    code, lines = artoo(
        "check the server", "--user", user.username, "--next-moves-wait", "120"
    )

    assert code == 1
    final = next(i for i, line in enumerate(lines) if "FinalResult" in line)
    moves = [i for i, line in enumerate(lines) if "R2 → User NextMoves" in line]
    assert len(moves) == 1 and moves[0] > final
    assert lines[moves[0]].endswith("  found the server down")
    assert "failed: abandon" in lines
    heading = lines.index("Next moves:")
    assert lines[heading + 1 : heading + 3] == [
        f"  {n}. {move}" for n, move in enumerate(MOVES, 1)
    ]
    assert not any(line.startswith("no next moves") for line in lines)


def test_when_no_next_moves_come_in_time_the_cli_says_so_in_one_line(
    celery_worker, user, model
):
    model.responder(next_moves_after(60.0), role="R2")

    code, lines = artoo(
        "check the server", "--user", user.username, "--next-moves-wait", "0.5"
    )

    assert code == 1
    said = [line for line in lines if line.startswith("no next moves")]
    assert said == [
        "no next moves from R2 within 0.5 s: the run page shows them when they "
        "come (--next-moves-wait S waits longer)"
    ]
    assert not any("NextMoves" in line or "Next moves" in line for line in lines)
    assert "failed: abandon" in lines


@pytest.mark.parametrize(
    ("task", "code", "ending"),
    [("hello", 0, "done: direct"), ("echo hi # expect: hi", 0, "done: accept")],
)
def test_a_run_that_ends_without_an_abandon_waits_for_no_next_moves(
    celery_worker, user, task, code, ending
):
    # Far past the test's own time limit: waiting at all would fail it.
    exit_code, lines = artoo(task, "--user", user.username, "--next-moves-wait", "900")

    assert exit_code == code
    assert ending in lines
    assert not any(line.startswith("no next moves") for line in lines)


@pytest.mark.django_db
def test_a_negative_wait_is_refused_before_anything_runs(user):
    with pytest.raises(CommandError, match="0 or more seconds"):
        call_command(
            "artoo", "echo hi", "--user", user.username, "--next-moves-wait", "-1"
        )
    assert not Run.objects.exists()
