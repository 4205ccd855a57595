"""GGS decisions of one round: the v0.8 table, its boundaries and the loss."""

import pytest
from pydantic import ValidationError

from roles.contracts import (
    CriterionVerdict,
    FinalResult,
    GapPoint,
    OutcomeSummary,
    PlanDirective,
    ReplanRequest,
    SubTaskOutcome,
)
from roles.ggs.solver import GGSConfig, GGSState, select_directive, step


def verdict(verdict="fail", failure_class=None, criterion="c", mode="verifiable"):
    return CriterionVerdict(
        criterion=criterion, verdict=verdict, failure_class=failure_class, mode=mode
    )


def outcome(sid="s1", status="failed", verdicts=(), **extra):
    return SubTaskOutcome(
        subtask_id=sid,
        parent_task_id="t",
        status=status,
        criteria_verdicts=list(verdicts),
        **extra,
    )


def replan(*outcomes, elapsed_ms=0, **extra):
    return ReplanRequest(
        task_id="t", outcomes=list(outcomes), elapsed_ms=elapsed_ms, **extra
    )


def failed_with(klass, fails=1, passes=0, mode="verifiable"):
    verdicts = [verdict("fail", klass, f"f{i}", mode) for i in range(fails)]
    verdicts += [verdict("pass", None, f"p{i}") for i in range(passes)]
    return outcome(verdicts=verdicts)


# --- worked examples -------------------------------------------------------


def test_first_failed_round_without_reason_changes_path():
    result = step(GGSState(), replan(outcome()))

    out = result.output
    assert type(out) is PlanDirective
    assert out.directive == result.directive == "change_path"
    assert out.prev_directive == "init"
    assert (out.loss.D, out.loss.P, out.loss.Omega, out.loss.L) == (1.0, 0.5, 0.2, 0.8)
    assert out.grad_l == 0.0
    assert out.budget_pressure == 0.2
    assert out.failure_class == "mixed"


def test_second_round_with_half_the_subtasks_failed_refines():
    first = step(GGSState(), replan(outcome()))
    second = step(first.state, replan(outcome("a"), outcome("b", status="matched")))

    out = second.output
    assert out.directive == "refine"
    assert out.loss.L == 0.55
    assert out.grad_l == -0.25
    assert out.prev_directive == "change_path"
    assert second.state.replans == 2


def test_outcome_summary_on_a_fresh_run_is_accepted():
    summary = OutcomeSummary(
        task_id="t", summary="done", merged_output="42", elapsed_ms=30_000
    )

    result = step(GGSState(), summary)

    out = result.output
    assert type(out) is FinalResult
    assert out.directive == "accept"
    assert (out.loss.D, out.loss.P, out.loss.Omega, out.loss.L) == (
        0.0,
        0.5,
        0.04,
        0.16,
    )
    assert out.replans == 0
    assert out.prev_directive == "init"
    assert out.output == "42"
    assert out.summary == "done"
    assert result.state.replans == 0


def test_accept_after_replans_keeps_the_count_and_measures_the_gradient():
    state = GGSState(l_prev=0.6, replans=2, prev_directive="refine")

    out = step(state, OutcomeSummary(task_id="t", elapsed_ms=0)).output

    assert out.replans == 2
    assert out.loss.Omega == 0.4
    assert out.loss.L == pytest.approx(0.15 * 0.6 + 0.4 * 0.4)
    assert out.grad_l == pytest.approx(0.25 - 0.6)
    assert out.prev_directive == "refine"


# --- the 24 cells ------------------------------------------------------------

CELLS = [
    # (cell, ∇L, D, P, Ω, macro-state)
    (1, "improving", "low", "env", "low", "success"),
    (2, "improving", "low", "logic", "low", "success"),
    (3, "improving", "low", "env", "high", "abandon"),
    (4, "improving", "low", "logic", "high", "abandon"),
    (5, "improving", "high", "env", "low", "refine"),
    (6, "improving", "high", "logic", "low", "change_approach"),
    (7, "improving", "high", "env", "high", "abandon"),
    (8, "improving", "high", "logic", "high", "abandon"),
    (9, "plateau", "low", "env", "low", "success"),
    (10, "plateau", "low", "logic", "low", "success"),
    (11, "plateau", "low", "env", "high", "abandon"),
    (12, "plateau", "low", "logic", "high", "abandon"),
    (13, "plateau", "high", "env", "low", "change_path"),
    (14, "plateau", "high", "logic", "low", "break_symmetry"),
    (15, "plateau", "high", "env", "high", "abandon"),
    (16, "plateau", "high", "logic", "high", "abandon"),
    (17, "worsening", "low", "env", "low", "success"),
    (18, "worsening", "low", "logic", "low", "success"),
    (19, "worsening", "low", "env", "high", "abandon"),
    (20, "worsening", "low", "logic", "high", "abandon"),
    (21, "worsening", "high", "env", "low", "refine"),
    (22, "worsening", "high", "logic", "low", "change_approach"),
    (23, "worsening", "high", "env", "high", "abandon"),
    (24, "worsening", "high", "logic", "high", "abandon"),
]
GRAD_OFFSET = {"improving": 0.2, "plateau": 0.0, "worsening": -0.2}


@pytest.mark.parametrize(("cell", "grad", "d", "p", "omega", "expected"), CELLS)
def test_every_cell_of_the_decision_table(cell, grad, d, p, omega, expected):
    klass = "logical" if p == "logic" else "environmental"
    mode = "plausible" if d == "low" else "verifiable"
    # D = 1/4 = 0.25 ≤ δ or 1/1 > δ; Ω = 0.2 < θ or 0.6 + 0.32 ≥ θ.
    message = replan(
        # A low D is a plausible shortfall: a failed fact is never success.
        failed_with(klass, passes=3 if d == "low" else 0, mode=mode),
        elapsed_ms=240_000 if omega == "high" else 0,
    )
    replans = 2 if omega == "high" else 0
    probe = step(GGSState(replans=replans), message).output.loss.L
    state = GGSState(replans=replans, l_prev=probe + GRAD_OFFSET[grad])

    out = step(state, message).output

    assert out.directive == expected, f"cell {cell}"
    assert (out.loss.D <= 0.3) == (d == "low")
    assert (out.loss.P > 0.5) == (p == "logic")
    assert (out.loss.Omega >= 0.8) == (omega == "high")
    sign = {"improving": -1, "plateau": 0, "worsening": 1}[grad]
    assert out.grad_l == pytest.approx(0.2 * sign)
    assert isinstance(
        out, FinalResult if expected in ("success", "abandon") else PlanDirective
    )


def test_select_directive_agrees_with_the_cascade_order():
    config = GGSConfig()
    assert select_directive(0.0, 0.0, 1.0, 0.8, config) == "abandon"
    assert select_directive(0.5, 0.3, 1.0, 0.79, config) == "success"


# --- boundaries ---------------------------------------------------------------


def test_omega_exactly_at_theta_abandons():
    out = step(GGSState(replans=2), replan(outcome(), elapsed_ms=150_000)).output

    assert out.loss.Omega == 0.8
    assert out.directive == "abandon"
    assert "budget exhausted" in out.summary


def test_omega_just_below_theta_does_not_abandon():
    out = step(GGSState(replans=2), replan(outcome(), elapsed_ms=149_999)).output

    assert out.loss.Omega < 0.8
    assert out.directive == "change_path"


def test_time_waiting_on_a_human_does_not_count_toward_omega():
    message = replan(outcome(), elapsed_ms=200_000)

    waited = step(GGSState(replans=2), message, human_wait_ms=60_000).output
    at_bound = step(GGSState(replans=2), message, human_wait_ms=50_000).output
    unwaited = step(GGSState(replans=2), message).output

    assert waited.directive == "change_path"
    assert waited.loss.Omega == pytest.approx(0.6 + 0.4 * 140_000 / 300_000)
    assert at_bound.loss.Omega == 0.8
    assert at_bound.directive == "abandon"
    assert unwaited.directive == "abandon"


def test_human_wait_longer_than_elapsed_counts_as_no_time():
    message = replan(outcome(), elapsed_ms=1_000)

    out = step(GGSState(), message, human_wait_ms=5_000).output

    assert out.loss.Omega == 0.2


@pytest.mark.parametrize(("fails", "total"), [(3, 10), (6, 20)])
def test_distance_exactly_at_delta_is_success(fails, total):
    message = replan(
        failed_with("environmental", fails, total - fails, mode="plausible")
    )

    out = step(GGSState(), message).output

    assert out.loss.D == 0.3
    assert out.directive == "success"


def test_distance_just_above_delta_acts():
    message = replan(failed_with("environmental", fails=4, passes=9))

    out = step(GGSState(), message).output

    assert out.loss.D > 0.3
    assert out.directive == "change_path"


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        (-0.1, "refine"),
        (0.1, "refine"),
        (-0.0999, "change_path"),
        (0.0999, "change_path"),
    ],
)
def test_gradient_magnitude_of_exactly_epsilon_is_a_signal(offset, expected):
    # L = 0.8 here, and 0.8 - 0.7000000000000001 is 0.0999… in floating point.
    state = GGSState(l_prev=0.8 + offset)

    out = step(state, replan(outcome())).output

    assert out.loss.L == 0.8
    assert out.directive == expected
    assert abs(out.grad_l) == pytest.approx(abs(offset))


def test_process_implausibility_exactly_at_rho_is_environmental():
    message = replan(
        outcome(
            verdicts=[
                verdict("fail", "logical", "a"),
                verdict("fail", "environmental", "b"),
            ]
        )
    )

    out = step(GGSState(), message).output

    assert out.loss.P == 0.5
    assert out.directive == "change_path"
    assert out.failure_class == "mixed"


def test_process_implausibility_above_rho_breaks_symmetry_on_a_plateau():
    verdicts = [
        verdict("fail", "logical", "a"),
        verdict("fail", "logical", "b"),
        verdict("fail", "environmental", "c"),
    ]

    out = step(GGSState(), replan(outcome(verdicts=verdicts))).output

    assert out.loss.P == pytest.approx(2 / 3)
    assert out.directive == "break_symmetry"
    assert out.failure_class == "logical"


# --- first round ----------------------------------------------------------------


def test_first_round_with_logical_failures_breaks_symmetry():
    result = step(GGSState(), replan(failed_with("logical")))

    assert result.output.directive == "break_symmetry"
    assert result.output.prev_directive == "init"
    assert result.output.grad_l == 0.0
    assert result.state.l_prev == result.output.loss.L


def test_first_round_with_environmental_failures_changes_path():
    out = step(GGSState(), replan(failed_with("environmental"))).output

    assert out.directive == "change_path"
    assert out.loss.P == 0.0
    assert out.failure_class == "environmental"


# --- D and P ---------------------------------------------------------------------


def test_plausible_failure_weighs_the_share_of_attempts_that_failed_it():
    trajectory = [GapPoint(attempt=1), GapPoint(attempt=2, unmet_criteria=["c"])]
    plausible = outcome(
        verdicts=[verdict("fail", "environmental", "c", "plausible"), verdict("pass")],
        gap_trajectory=trajectory,
    )
    verifiable = plausible.model_copy(
        update={
            "criteria_verdicts": [
                verdict("fail", "environmental", "c"),
                verdict("pass"),
            ]
        }
    )

    assert step(GGSState(), replan(plausible)).output.loss.D == 0.25
    assert step(GGSState(), replan(verifiable)).output.loss.D == 0.5


def test_plausible_failure_in_every_attempt_weighs_fully():
    trajectory = [GapPoint(attempt=n, unmet_criteria=["c"]) for n in (1, 2)]
    message = replan(
        outcome(verdicts=[verdict("fail", mode="plausible")], gap_trajectory=trajectory)
    )

    assert step(GGSState(), message).output.loss.D == 1.0


def test_plausible_mode_set_by_the_planner_overrides_the_verdict_copy():
    trajectory = [GapPoint(attempt=1), GapPoint(attempt=2, unmet_criteria=["c"])]
    message = replan(
        outcome(
            verdicts=[verdict("fail", criterion="c")],
            gap_trajectory=trajectory,
            success_criteria=[{"criterion": "c", "mode": "plausible"}],
        )
    )

    assert step(GGSState(), message).output.loss.D == 0.5


def test_plausible_failure_without_trajectory_weighs_fully():
    message = replan(outcome(verdicts=[verdict("fail", mode="plausible")]))

    assert step(GGSState(), message).output.loss.D == 1.0


def test_task_criteria_rejection_counts_in_distance():
    matched = outcome(status="matched", verdicts=[verdict("pass", criterion="a")])
    other = outcome("s2", status="matched", verdicts=[verdict("pass", criterion="b")])
    rejection = verdict("fail", "logical", "the report names three files")

    out = step(
        GGSState(), replan(matched, other, task_criteria_verdicts=[rejection])
    ).output

    assert out.loss.D == pytest.approx(1 / 3)
    assert out.directive == "break_symmetry"
    assert out.failed_criterion == "the report names three files"


def test_rejection_without_verdicts_is_never_read_as_success():
    message = replan(outcome(status="matched"), gap_summary="verdict unparsable")

    out = step(GGSState(), message).output

    assert out.loss.D == 0.5
    assert isinstance(out, PlanDirective)


def test_no_outcomes_is_full_distance():
    out = step(GGSState(), replan()).output

    assert out.loss.D == 1.0


@pytest.mark.parametrize(
    ("reason", "p"),
    [
        ("connection refused by host", 0.0),
        ("Permission denied", 0.0),
        ("invalid approach to parsing", 1.0),
        ("invalid path: no such file", 0.5),
        ("something odd", 0.5),
    ],
)
def test_keyword_fallback_classifies_unclassified_failures(reason, p):
    out = step(GGSState(), replan(outcome(failure_reason=reason))).output

    assert out.loss.P == p


def test_keyword_fallback_reads_unmet_criteria_of_the_trajectory():
    message = replan(
        outcome(
            gap_trajectory=[GapPoint(attempt=1, unmet_criteria=["network timeout"])]
        )
    )

    assert step(GGSState(), message).output.loss.P == 0.0


def test_failed_criterion_is_the_first_unmet_of_the_last_attempt():
    message = replan(
        outcome(
            verdicts=[verdict("fail", "environmental", "x")],
            gap_trajectory=[GapPoint(attempt=1, unmet_criteria=["first", "second"])],
        )
    )

    assert step(GGSState(), message).output.failed_criterion == "first"


# --- guards ----------------------------------------------------------------------


def test_step_refuses_a_message_it_does_not_handle():
    with pytest.raises(TypeError, match="ReplanRequest or an OutcomeSummary"):
        step(GGSState(), {"task_id": "t"})


def test_step_refuses_negative_human_wait():
    with pytest.raises(ValueError, match="human_wait_ms"):
        step(GGSState(), replan(outcome()), human_wait_ms=-1)


def test_step_refuses_a_non_numeric_human_wait():
    with pytest.raises(TypeError, match="human_wait_ms"):
        step(GGSState(), replan(outcome()), human_wait_ms="5")


def test_step_refuses_a_state_or_config_of_the_wrong_type():
    with pytest.raises(TypeError, match="GGSState"):
        step({}, replan(outcome()))
    with pytest.raises(TypeError, match="GGSConfig"):
        step(GGSState(), replan(outcome()), config={})


@pytest.mark.parametrize("field", ["alpha", "theta", "max_replans", "time_budget_ms"])
def test_config_refuses_meaningless_hyperparameters(field):
    with pytest.raises(ValueError, match=field):
        GGSConfig(**{field: -1})


def test_config_has_the_v08_defaults():
    config = GGSConfig()

    assert (config.alpha, config.beta, config.lam) == (0.6, 0.3, 0.4)
    assert (config.w1, config.w2) == (0.6, 0.4)
    assert (config.epsilon, config.delta, config.rho, config.theta) == (
        0.1,
        0.3,
        0.5,
        0.8,
    )
    assert (config.time_budget_ms, config.max_replans, config.law2_kill) == (
        300_000,
        3,
        2,
    )


def test_a_custom_config_moves_the_thresholds():
    out = step(GGSState(), replan(outcome()), GGSConfig(theta=0.2)).output

    assert out.directive == "abandon"


def test_state_round_trips_through_json_data():
    state = GGSState(
        l_prev=0.55,
        replans=2,
        worsening_count=1,
        tried_targets=["ls /a"],
        prev_directive="refine",
        last_calls=["49274bcc3143fb1c"],
    )

    data = state.to_dict()

    assert data == {
        "l_prev": 0.55,
        "replans": 2,
        "worsening_count": 1,
        "tried_targets": ["ls /a"],
        "prev_directive": "refine",
        "last_calls": ["49274bcc3143fb1c"],
    }
    assert GGSState.from_dict(data) == state
    assert GGSState.from_dict({}) == GGSState()


def test_state_from_bad_data_names_the_field():
    with pytest.raises(ValidationError, match="replans"):
        GGSState.from_dict({"replans": -1})
    with pytest.raises(ValidationError, match="prev_directive"):
        GGSState.from_dict({"prev_directive": "dance"})


def test_a_rejected_merge_is_never_success_however_small_the_gap():
    passed = [verdict("pass", criterion=c) for c in "abc"]
    matched = outcome(status="matched", verdicts=passed)
    rejection = verdict("fail", "logical", "the total is not 1144")

    out = step(GGSState(), replan(matched, task_criteria_verdicts=[rejection])).output

    assert out.loss.D == 0.25
    assert isinstance(out, PlanDirective)
    assert out.directive == "break_symmetry"


def test_a_rejection_of_matched_subtasks_is_never_success_either():
    passed = [verdict("pass", criterion=c) for c in "abc"]
    message = replan(outcome(status="matched", verdicts=passed), gap_summary="no")

    out = step(GGSState(), message).output

    assert out.loss.D == 0.25
    assert isinstance(out, PlanDirective)


def test_a_failed_fact_is_never_success_however_small_the_gap():
    message = replan(failed_with("environmental", fails=1, passes=3))

    out = step(GGSState(), message).output

    assert out.loss.D == 0.25
    assert out.directive == "change_path"


def test_a_subtask_that_gave_up_with_every_check_passing_is_no_success():
    # The executor ran out of turns; the checks it had passed say nothing of it.
    gave_up = outcome(verdicts=[verdict("pass", criterion="a")])
    others = [outcome(f"m{n}", "matched") for n in range(3)]

    out = step(GGSState(), replan(gave_up, *others)).output

    assert isinstance(out, PlanDirective)
