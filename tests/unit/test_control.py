"""Control strategies: GGS unchanged, a plain retry, a single round."""

from datetime import UTC, date, datetime
from typing import get_args

import pytest

from roles.claims.evidence import format_evidence
from roles.contracts import (
    Control,
    CriterionVerdict,
    FinalResult,
    OutcomeSummary,
    PlanDirective,
    ReplanRequest,
    SubTaskOutcome,
    TaskSpec,
)
from roles.ggs import control
from roles.ggs import solver as ggs
from roles.ggs.solver import GGSConfig, GGSState
from roles.planning.prompts import plan_messages
from roles.runstate import DEADLINE_REASON

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
GAP = "the file /srv/app.log was not found"


def missing(command):
    output = f"[exit code 2]\n{command}: No such file or directory"
    return format_evidence("shell", {"command": command}, output)


def failed(sid, klass="environmental", mode="verifiable", calls=(), **extra):
    return SubTaskOutcome(
        subtask_id=sid,
        parent_task_id="t",
        intent=f"step {sid}",
        status="failed",
        criteria_verdicts=[
            CriterionVerdict(
                criterion=f"{sid} works", verdict="fail", failure_class=klass, mode=mode
            )
        ],
        tool_calls=list(calls),
        **extra,
    )


def matched(sid, output="done"):
    return SubTaskOutcome(
        subtask_id=sid,
        parent_task_id="t",
        intent=f"step {sid}",
        status="matched",
        output=output,
    )


def replan(*outcomes, **extra):
    return ReplanRequest(task_id="t", outcomes=list(outcomes), gap_summary=GAP, **extra)


def ask(name, state, message, config=GGSConfig()):  # noqa: B008 - frozen
    return control.step(name, state, message, config, now=NOW, id_factory=lambda: "m1")


def rounds(name, *messages, state=None, config=GGSConfig()):  # noqa: B008 - frozen
    results, state = [], state or GGSState()
    for message in messages:
        results.append(ask(name, state, message, config))
        state = results[-1].state
    return results


FAILED_TARGET = failed("a", calls=[missing("cat /srv/app.log")])
WORSENING = (
    replan(failed("a"), matched("b"), matched("c")),
    replan(failed("a"), failed("b"), matched("c")),
    replan(failed("a"), failed("b"), failed("c")),
)
# One plausible shortfall among matches: GGS's δ calls it good enough.
GOOD_ENOUGH = replan(
    failed("a", mode="plausible"), *[matched(str(n)) for n in range(4)]
)


# --- the table -------------------------------------------------------------


def test_the_table_has_a_row_for_every_strategy_the_contracts_name():
    assert set(control.STRATEGIES) == set(get_args(Control)) == set(control.NAMES)
    assert control.DEFAULT == "ggs"
    assert [s.name for s in control.STRATEGIES.values()] == list(control.NAMES)


def test_an_unknown_strategy_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="unknown control strategy 'gss'.*ggs, retry"):
        ask("gss", GGSState(), replan(failed("a")))


# --- ggs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "messages",
    [
        (replan(FAILED_TARGET),),
        WORSENING,
        (GOOD_ENOUGH,),
        (replan(failed("a"), recommendation="abandon"),),
        (replan(failed("a", "logical")), OutcomeSummary(task_id="t", summary="ok")),
        (replan(failed("a"), elapsed_ms=300_000),),
    ],
    ids=["change_path", "law2", "success", "advised", "accept", "budget"],
)
def test_ggs_is_exactly_the_goal_gradient_solvers_step(messages):
    state = GGSState()
    for message in messages:
        expected = ggs.step(state, message, now=NOW, id_factory=lambda: "m1")
        got = ask("ggs", state, message)
        assert got == expected
        assert got.output.control == "ggs"
        state = got.state


# --- retry -------------------------------------------------------------------


def test_retry_tells_r2_only_that_it_failed_and_the_gap():
    plain = ggs.step(GGSState(), replan(FAILED_TARGET)).output
    result = ask("retry", GGSState(), replan(FAILED_TARGET))

    out = result.output
    assert plain.blocked_targets == ["cat /srv/app.log"]  # what GGS would block
    assert type(out) is PlanDirective
    assert out.directive == result.directive == "retry"
    assert out.rationale == f"The previous attempt failed: {GAP}. Try again."
    assert out.blocked_tools == [] and out.blocked_targets == []
    assert out.failed_criterion == ""
    assert out.budget_pressure == 0.0
    assert out.control == "retry"
    assert out.loss == plain.loss  # measured as GGS measures it, for the record
    assert result.megrams == []
    assert result.state.prev_directive == "retry"
    assert result.state.replans == 1


def test_warming_is_a_retry_whose_planner_and_executor_warm_by_round():
    result = ask("warming", GGSState(), replan(FAILED_TARGET))
    out = result.output
    assert out.directive == "retry" and out.control == "warming"
    assert out.blocked_tools == [] and out.blocked_targets == []
    assert [control.temperature("warming", "R2", n) for n in range(5)] == [
        0.0, 0.167, 0.333, 0.5, 0.5,
    ]  # fmt: skip
    assert control.temperature("warming", "R3", 3) == 0.5
    # The validators judge every strategy alike, and the others keep theirs.
    assert control.temperature("warming", "R4a", 3) is None
    assert control.temperature("retry", "R2", 3) is None
    assert control.temperature("ggs", "R3", 2) is None


def test_retry_keeps_retrying_where_ggs_would_stop_early():
    law2 = rounds("retry", *WORSENING)
    good_enough = ask("retry", GGSState(), GOOD_ENOUGH)

    assert [r.directive for r in law2] == ["retry"] * 3
    assert [r.output.prev_directive for r in law2] == ["init", "retry", "retry"]
    assert good_enough.directive == "retry"  # only R4b's accept is success


@pytest.mark.parametrize("name", ["ggs", "retry", "warming"])
def test_r4bs_advice_to_stop_gives_every_replanning_strategy_the_same_rounds(name):
    # R4b advises to stop on a run's third ReplanRequest: the initial plan and
    # two new ones, under either strategy.
    requests = [
        replan(failed(sid), matched("b"), recommendation=advice)
        for sid, advice in (("a", "replan"), ("c", "replan"), ("d", "abandon"))
    ]
    results = rounds(name, *requests)

    assert [type(r.output) for r in results] == [PlanDirective] * 2 + [FinalResult]
    out = results[-1].output
    assert out.directive == "abandon" and out.control == name
    assert out.loss.Omega < GGSConfig().theta  # not the budget
    assert "the result checker advised stopping" in out.summary
    assert out.reason.startswith("The checks still failed after")
    assert [m.state for m in results[-1].megrams][-1] == "abandon"


def test_retry_abandons_when_the_budget_is_spent():
    result = ask("retry", GGSState(replans=3), replan(failed("a"), matched("b")))

    out = result.output
    assert type(out) is FinalResult
    assert out.directive == "abandon" and out.control == "retry"
    assert out.loss.Omega >= 0.8
    assert out.prev_directive == "init"
    assert "budget exhausted" in out.summary
    assert "Completed: step b → done." in out.summary
    assert [m.state for m in result.megrams] == ["abandon"]
    assert result.megrams[0].space == "intent:t"
    assert result.state.prev_directive == "abandon"


@pytest.mark.parametrize("name", ["retry", "single"])
def test_an_abandon_only_the_machinery_caused_writes_no_megram(name):
    late = failed("a", failure_reason=DEADLINE_REASON)

    result = ask(name, GGSState(replans=3), replan(late, matched("b")))

    assert result.output.directive == "abandon"
    assert result.megrams == []


def test_retry_abandons_when_the_rounds_run_out_before_the_budget():
    # A small w1 keeps Ω under θ however many rounds: max_replans still ends it.
    config = GGSConfig(w1=0.1)
    results = rounds("retry", *[replan(failed("a"))] * 4, config=config)

    assert [r.directive for r in results] == ["retry"] * 3 + ["abandon"]
    out = results[-1].output
    assert out.loss.Omega < config.theta
    assert "no rounds left (at most 3 new plans)" in out.summary
    assert out.reason.startswith("It used up its rounds (3 new plans)")


def test_retry_accepts_what_r4b_accepts():
    summary = OutcomeSummary(task_id="t", summary="all done", merged_output="42")
    state = GGSState(replans=1, prev_directive="retry", l_prev=0.8)

    result = ask("retry", state, summary)

    expected = ggs.step(state, summary, now=NOW, id_factory=lambda: "m1")
    assert result.output.directive == "accept"
    assert result.output.prev_directive == "retry"
    assert result.output.control == "retry"
    assert result.output.model_copy(update={"control": "ggs"}) == expected.output
    assert result.megrams == expected.megrams


# --- single ------------------------------------------------------------------


def test_single_abandons_after_one_failed_round_with_what_it_did():
    result = ask("single", GGSState(), replan(FAILED_TARGET, matched("b", "42")))

    out = result.output
    assert type(out) is FinalResult
    assert out.directive == "abandon" and out.control == "single"
    assert out.replans == 1 and out.prev_directive == "init"
    assert "Completed: step b → 42." in out.summary
    assert "Failed: step a." in out.summary
    assert "one round the control strategy allows" in out.rationale
    assert out.reason.startswith("It was set to run one round only")
    assert [m.state for m in result.megrams] == ["abandon"]


@pytest.mark.parametrize(
    "message",
    [GOOD_ENOUGH, WORSENING[0], replan(failed("a", "logical"))],
    ids=["good_enough", "refine", "logical"],
)
def test_single_abandons_on_anything_but_r4bs_accept(message):
    assert ask("single", GGSState(), message).directive == "abandon"


def test_single_accepts_what_r4b_accepts():
    summary = OutcomeSummary(task_id="t", summary="all done", merged_output="42")

    out = ask("single", GGSState(), summary).output

    assert (out.directive, out.output, out.control) == ("accept", "42", "single")


# --- what R2 hears -----------------------------------------------------------

SPEC = TaskSpec(task_id="t", intent="read the log", raw_input="read the log")


def user_prompt(directive, outcomes=()):
    messages = plan_messages(
        SPEC,
        today=date(2026, 1, 2),
        constraints="",
        tools=["shell"],
        directive=directive,
        previous_outcomes=outcomes,
    )
    return messages[1]["content"]


def test_r2_hears_a_retry_as_its_one_sentence():
    directive = ask("retry", GGSState(), replan(FAILED_TARGET)).output

    text = user_prompt(directive, [FAILED_TARGET])

    assert f"The previous attempt failed: {GAP}. Try again." in text
    for absent in ("PlanDirective", "Directive semantics", "blocked", "budget"):
        assert absent not in text
    assert "Outcomes of the previous round" not in text
    assert "cat /srv/app.log" not in text


def test_r2_hears_ggs_directive_as_before_without_the_strategy():
    directive = ask("ggs", GGSState(), replan(FAILED_TARGET)).output

    text = user_prompt(directive, [FAILED_TARGET])

    assert "PlanDirective" in text and "Directive semantics" in text
    assert '"blocked_targets": [\n    "cat /srv/app.log"' in text
    assert "Outcomes of the previous round" in text
    assert '"control"' not in text


def test_the_retry_sentence_reads_well_without_a_gap_or_with_a_full_stop():
    assert control.retry_text("") == "The previous attempt failed. Try again."
    assert control.retry_text("no output.\n") == (
        "The previous attempt failed: no output. Try again."
    )
