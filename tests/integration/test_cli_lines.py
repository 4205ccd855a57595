"""The artoo command's terminal lines: one per bus message, then the report."""

from __future__ import annotations

from io import StringIO

import pytest

from artoo_web.management.commands.artoo import Command, describe
from artoo_web.models import BusMessage, RunStatus

pytestmark = pytest.mark.django_db

LOSS = {"D": 0.5, "P": 0.25, "Omega": 0.1, "L": 0.6}


def stored(run, sender, recipient, type_, payload) -> BusMessage:
    return BusMessage.objects.create(
        run=run, sender=sender, recipient=recipient, type=type_, payload=payload
    )


def test_a_ggs_decision_prints_its_transition_and_loss(run):
    directive = {
        "task_id": "t",
        "loss": LOSS,
        "prev_directive": "init",
        "directive": "refine",
        "failure_class": "logical",
        "budget_pressure": 0.1,
        "grad_l": -0.3,
    }
    msg = stored(run, "R7", "R2", "PlanDirective", directive)

    line = describe(msg)

    assert line.endswith("init→refine  D=0.50 P=0.25 ∇L=-0.30 Ω=0.10")
    assert "R7 → R2   PlanDirective" in line


def test_other_messages_print_their_intent_status_or_question(run):
    spec = {"task_id": "t", "intent": "list the files", "raw_input": "ls"}
    result = {"subtask_id": "s1", "status": "failed"}
    question = {"question": "Which directory?"}

    lines = [
        describe(stored(run, "R1", "R2", "TaskSpec", spec)),
        describe(stored(run, "R3", "R4a", "ExecutionResult", result)),
        describe(stored(run, "R1", "User", "ClarificationRequest", question)),
    ]

    assert [line.split("  ")[-1] for line in lines] == [
        "list the files",
        "failed",
        "Which directory?",
    ]


def test_a_malformed_decision_prints_what_it_holds(run):
    msg = stored(run, "R7", "R2", "PlanDirective", {"directive": "refine"})

    assert describe(msg).endswith("None→refine  D=0.00 P=0.00 ∇L=+0.00 Ω=0.00")


def report(run) -> str:
    out = StringIO()
    Command(stdout=out).report(run)
    return out.getvalue()


def test_the_report_of_an_abandon_lists_the_next_moves(run):
    run.status = RunStatus.FAILED
    run.final_result = {
        "task_id": "t",
        "summary": "gave up",
        "output": "[exit code 1]\nboom",
        "loss": LOSS,
        "prev_directive": "refine",
        "directive": "abandon",
        "next_moves": {
            "task_id": "t",
            "accomplished": "listed files",
            "next_moves": ["check the path", "ask for access"],
        },
    }
    run.save()

    text = report(run)

    assert text.startswith(
        "\nfailed: abandon\n“echo hello”: not done, nothing was completed.\n"
        "output: [exit code 1]\nboom\n"
    )
    assert "gave up" not in text
    assert "Next moves:\n  1. check the path\n  2. ask for access\n" in text


def test_the_report_of_a_direct_answer_names_it_direct(run):
    run.status = RunStatus.DONE
    run.directive = "direct"
    run.final_result = {"summary": "Hi", "output": "Hi", "directive": "direct"}
    run.save()

    assert report(run).startswith(
        "\ndone: direct\n“echo hello”: answered directly.\noutput: Hi\n"
    )


@pytest.mark.parametrize(
    ("status", "directive", "expected"),
    [
        (RunStatus.FAILED, "abandon", True),
        (RunStatus.CANCELLED, "abandon", False),
        (RunStatus.DONE, "accept", False),
        (RunStatus.DONE, "success", False),
        (RunStatus.DONE, "direct", False),
        (RunStatus.RUNNING, "refine", False),
    ],
)
def test_only_an_abandon_that_failed_the_run_expects_next_moves(
    run, status, directive, expected
):
    run.status, run.directive = status, directive

    assert run.expects_next_moves is expected
