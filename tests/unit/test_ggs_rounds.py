"""GGS across rounds: Law 2, MUST NOT sets and their urgency, summaries, Megrams."""

import re
from datetime import UTC, datetime

from roles.claims.evidence import format_evidence
from roles.contracts import (
    CriterionVerdict,
    FinalResult,
    OutcomeSummary,
    PlanDirective,
    ReplanRequest,
    SubTaskOutcome,
)
from roles.ggs.solver import GGSState, step
from roles.runstate import DEADLINE_REASON


def shell(command, output=""):
    return format_evidence("shell", {"command": command}, output)


def missing(command):
    """Return the evidence of a shell call that failed on a missing path."""
    return shell(command, f"[exit code 2]\n{command}: No such file or directory")


def failed(sid, klass="environmental", calls=(), mode="verifiable", **extra):
    return SubTaskOutcome(
        subtask_id=sid,
        parent_task_id="t",
        status="failed",
        criteria_verdicts=[
            CriterionVerdict(
                criterion=f"{sid} works", verdict="fail", failure_class=klass, mode=mode
            )
        ],
        tool_calls=list(calls),
        **extra,
    )


def matched(sid, **extra):
    return SubTaskOutcome(subtask_id=sid, parent_task_id="t", status="matched", **extra)


def replan(*outcomes, **extra):
    return ReplanRequest(task_id="t", outcomes=list(outcomes), **extra)


def run(*messages, state=None):
    results = []
    state = state or GGSState()
    for message in messages:
        results.append(step(state, message))
        state = results[-1].state
    return results


# --- Law 2 and R4b's recommendation -------------------------------------------


def test_two_worsening_rounds_in_a_row_abandon_in_round_three():
    rounds = run(
        replan(failed("a"), matched("b"), matched("c")),  # D 1/3, L 0.28
        replan(failed("a"), failed("b"), matched("c")),  # D 2/3, L 0.56
        replan(failed("a"), failed("b"), failed("c")),  # D 1, L 0.84
    )

    first, second, third = (r.output for r in rounds)
    assert first.directive == "change_path"
    assert second.directive == "refine" and second.grad_l >= 0.1
    assert rounds[1].state.worsening_count == 1
    assert type(third) is FinalResult
    assert third.directive == "abandon"
    assert third.loss.Omega < 0.8
    assert third.prev_directive == "refine"
    assert "Law 2" in third.summary
    assert "Law 2" in third.rationale


def test_an_improving_round_resets_the_worsening_count():
    rounds = run(
        replan(failed("a"), matched("b"), matched("c")),
        replan(failed("a"), failed("b"), matched("c")),
        replan(failed("a"), matched("b"), matched("c")),
        state=GGSState(),
    )

    assert rounds[1].state.worsening_count == 1
    assert rounds[2].state.worsening_count == 0
    assert rounds[2].output.directive == "refine"


def test_law2_never_replaces_success():
    state = GGSState(l_prev=0.0, worsening_count=1)
    message = replan(
        failed("a", mode="plausible"), *[matched(str(n)) for n in range(4)]
    )

    out = step(state, message).output

    assert out.grad_l >= 0.1
    assert out.directive == "success"


def test_r4b_abandon_recommendation_abandons():
    out = step(
        GGSState(replans=2), replan(failed("a"), recommendation="abandon")
    ).output

    assert out.directive == "abandon"
    assert out.replans == 3
    assert "the checks still failed after 3 new plans" in out.summary
    assert "advised stopping" in out.summary


def test_r4b_abandon_recommendation_never_replaces_success():
    message = replan(
        failed("a", mode="plausible"),
        *[matched(str(n)) for n in range(4)],
        recommendation="abandon",
    )

    assert step(GGSState(), message).output.directive == "success"


def test_an_empty_plan_ends_in_abandon_with_full_distance():
    message = replan(recommendation="abandon", gap_summary="planner: no plan")

    out = step(GGSState(), message).output

    assert out.directive == "abandon"
    assert out.loss.D == 1.0
    assert "Gap: planner: no plan" in out.summary


# --- blocked targets and tools --------------------------------------------------


def test_blocked_targets_accumulate_across_rounds():
    rounds = run(
        replan(failed("a", calls=[shell("ls /a", "No such file or directory")])),
        replan(failed("a", calls=[shell("ls /b", "No such file or directory")])),
    )

    second = rounds[1].output
    assert second.directive == "change_path"
    assert second.blocked_targets == ["ls /a", "ls /b"]
    assert second.blocked_tools == []
    assert rounds[1].state.tried_targets == ["ls /a", "ls /b"]


def test_targets_tried_under_a_logical_directive_still_accumulate():
    rounds = run(
        replan(failed("a", "logical", calls=[missing("grep -r x /a")])),  # L 0.92
        replan(failed("a", calls=[shell("ls /b", "not found")])),  # L 0.76
        replan(failed("a", calls=[shell("ls /c", "not found")])),  # L 0.84
    )

    assert rounds[0].output.directive == "break_symmetry"
    assert rounds[0].output.blocked_targets == []
    assert rounds[1].state.tried_targets == ["grep -r x /a", "ls /b"]
    assert rounds[2].output.directive == "change_path"
    assert rounds[2].output.blocked_targets == ["grep -r x /a", "ls /b", "ls /c"]


def test_a_round_that_repeats_the_last_ones_calls_and_results_blocks_them():
    # The same empty glob, round after round: no exit code says it failed, but
    # the round made no move.
    empty = format_evidence("glob", {"pattern": "/srv/conf/*.ini"}, "(no matches)")
    rounds = run(
        replan(failed("a", calls=[empty])),
        replan(failed("a", calls=[empty])),
    )

    assert rounds[0].state.tried_targets == []
    assert rounds[1].state.tried_targets == ["/srv/conf/*.ini"]
    assert rounds[1].output.directive == "change_path"
    assert rounds[1].output.blocked_targets == ["/srv/conf/*.ini"]


def test_a_call_repeated_with_another_result_is_a_move():
    before = format_evidence("glob", {"pattern": "/srv/conf/*.ini"}, "(no matches)")
    after = format_evidence("glob", {"pattern": "/srv/conf/*.ini"}, "/srv/conf/a.ini")
    other = shell("ls /srv", "[exit code 0]\nconf")
    rounds = run(
        replan(failed("a", calls=[before])),
        replan(failed("a", calls=[after])),
        replan(failed("a", calls=[after, other])),
    )

    assert rounds[1].state.tried_targets == []
    # A round that also tried something new moved.
    assert rounds[2].state.tried_targets == []


def test_refine_while_improving_blocks_only_the_latest_targets():
    rounds = run(
        replan(failed("a", calls=[missing("ls /a")])),  # L 0.68
        replan(failed("a", calls=[missing("ls /b")]), matched("b")),  # L 0.46
    )

    out = rounds[1].output
    assert out.directive == "refine" and out.grad_l < 0
    assert out.blocked_targets == ["ls /b"]
    assert rounds[1].state.tried_targets == ["ls /a", "ls /b"]
    assert "latest failed targets" in out.rationale


def test_refine_while_worsening_blocks_every_tried_target():
    rounds = run(
        replan(failed("a", calls=[missing("ls /a")]), matched("b"), matched("c")),
        replan(
            failed("a", calls=[missing("ls /b")]),
            failed("b", calls=[missing("ls /c")]),
            matched("c"),
        ),
    )

    out = rounds[1].output
    assert out.directive == "refine" and out.grad_l > 0
    assert out.blocked_targets == ["ls /a", "ls /b", "ls /c"]


def test_break_symmetry_blocks_every_tool_of_failing_subtasks():
    calls = [
        format_evidence("glob", {"pattern": "*.md"}, "README.md"),
        shell("pandoc x", "error: unknown format"),
    ]

    out = step(GGSState(), replan(failed("a", "logical", calls=calls))).output

    assert out.directive == "break_symmetry"
    assert out.blocked_tools == ["glob", "shell:pandoc"]
    assert out.blocked_targets == []


def test_break_symmetry_blocks_the_programs_a_shell_call_ran_not_the_shell():
    calls = [shell("cd data && wc -l a.csv | tail -1", "[exit code 0]\n41 a.csv")]

    out = step(GGSState(), replan(failed("a", "logical", calls=calls))).output

    assert out.directive == "break_symmetry"
    assert out.blocked_tools == ["shell:wc", "shell:tail"]


def test_change_approach_while_improving_blocks_only_tools_whose_calls_failed():
    calls = [
        format_evidence("glob", {"pattern": "*.md"}, "README.md"),
        shell("pandoc x", "error: unknown format"),
    ]
    rounds = run(
        replan(failed("a", "logical", calls=calls)),  # L 0.92
        replan(failed("a", "logical", calls=calls), matched("b")),  # L 0.64
    )

    out = rounds[1].output
    assert out.directive == "change_approach" and out.grad_l < 0
    assert out.blocked_tools == ["shell:pandoc"]


def test_change_approach_without_error_output_blocks_the_last_tool_called():
    calls = [
        format_evidence("glob", {"pattern": "*.md"}, "README.md"),
        format_evidence("read_file", {"path": "README.md"}, "# Title"),
    ]
    rounds = run(
        replan(failed("a", "logical", calls=calls)),
        replan(failed("a", "logical", calls=calls), matched("b")),
    )

    assert rounds[1].output.blocked_tools == ["read_file"]


def test_change_approach_while_worsening_blocks_every_tool_of_failing_subtasks():
    calls = [
        format_evidence("glob", {"pattern": "*.md"}, "README.md"),
        shell("pandoc x", "error: unknown format"),
    ]
    rounds = run(
        replan(failed("a", "logical", calls=calls), matched("b"), matched("c")),
        replan(
            failed("a", "logical", calls=calls),
            failed("b", "logical", calls=calls),
            matched("c"),
        ),
    )

    out = rounds[1].output
    assert out.directive == "change_approach" and out.grad_l > 0
    assert out.blocked_tools == ["glob", "shell:pandoc"]
    assert out.blocked_targets == []


def test_unparsable_evidence_blocks_nothing():
    message = replan(failed("a", calls=["shell:ls /x → nothing"]))

    result = step(GGSState(), message)

    assert result.output.blocked_targets == []
    assert result.megrams == []


# --- summaries and outputs -----------------------------------------------------


def test_success_lists_completed_and_failed_subtasks_and_delivers_outputs():
    message = replan(
        failed("a", mode="plausible", intent="fetch the mirror"),
        *[matched(str(n), intent=f"step {n}", output=f"out {n}") for n in range(4)],
        gap_summary="mirror down",
    )

    out = step(GGSState(), message).output

    assert out.directive == "success"
    assert out.loss.D == 0.2
    assert "Completed: step 0; step 1; step 2; step 3." in out.summary
    assert "Failed but within threshold: fetch the mirror." in out.summary
    assert out.output == ["out 0", "out 1", "out 2", "out 3"]


def test_success_with_one_output_delivers_it_alone():
    message = replan(
        failed("a", mode="plausible"),
        matched("b", output="only"),
        *[matched(str(n)) for n in range(3)],
    )

    assert step(GGSState(), message).output.output == "only"


def test_abandon_lists_what_was_completed_what_failed_and_the_gap():
    message = replan(
        failed("a", intent="download the data"),
        matched("b", intent="create the folder", output="ok"),
        gap_summary="network unreachable",
    )

    out = step(GGSState(replans=3), message).output

    assert out.directive == "abandon"
    assert out.output is None
    assert "Completed: create the folder → ok." in out.summary
    assert "Failed: download the data." in out.summary
    assert "Gap: network unreachable" in out.summary
    assert "budget exhausted (Ω=0.80 ≥ θ=0.8)" in out.summary


def test_abandon_after_a_law1_refusal_says_so_first():
    refusal = shell("rm -rf build", "[LAW1] rm deletes files permanently — denied")

    out = step(GGSState(replans=3), replan(failed("a", calls=[refusal]))).output

    assert out.summary.startswith("[LAW1] ")


def test_abandon_with_nothing_completed_says_so():
    out = step(GGSState(replans=3), replan(failed("a"))).output

    assert "Completed: nothing." in out.summary


def test_directive_rationale_carries_the_numbers_and_the_gap():
    out = step(GGSState(), replan(failed("a"), gap_summary="disk full")).output

    assert "D=1.00" in out.rationale
    assert "Ω=0.20" in out.rationale
    assert "L=0.680" in out.rationale
    assert out.rationale.endswith("Gap: disk full")


# --- Megrams -----------------------------------------------------------------


def test_action_state_writes_one_megram_per_distinct_failing_call():
    calls = [missing("ls /a"), missing("ls /a"), shell("cat /b", "[exit code 0]\nb")]
    other = format_evidence("fetch_url", {"url": "http://x"}, "ERROR: timed out")
    message = replan(
        failed("a", calls=calls, intent="list a", failure_reason="missing"),
        failed("b", calls=[other], intent="fetch x"),
    )

    megrams = step(GGSState(), message).megrams

    assert [(m.space, m.entity) for m in megrams] == [
        ("tool:shell", "target:ls /a"),
        ("tool:fetch_url", "target:http://x"),
    ]
    # Why the call failed, never what the task was about ("list a").
    assert megrams[0].content == "exit 2: ls /a: No such file or directory"
    assert megrams[1].content == "ERROR: timed out"
    assert megrams[0].state == "change_path"
    assert (megrams[0].f, megrams[0].sigma, megrams[0].k) == (0.30, 0.0, 0.2)
    assert megrams[0].id == "" and megrams[0].created_at is None


def test_success_writes_one_terminal_megram_with_the_tools_used():
    ok = matched("b", tool_calls=[shell("make", "built")])
    message = replan(
        failed("a", mode="plausible"), ok, *[matched(str(n)) for n in range(3)]
    )

    megrams = step(GGSState(), message).megrams

    assert len(megrams) == 1
    megram = megrams[0]
    assert (megram.space, megram.entity, megram.state) == (
        "intent:t",
        "env:local",
        "success",
    )
    assert (megram.f, megram.sigma, megram.k) == (0.80, 1.0, 0.05)
    assert megram.content.startswith("Succeeded. Worked: shell:make")
    assert "Task completed" not in megram.content


def test_abandon_megram_records_the_tools_tried_and_the_gap():
    message = replan(
        failed("a", calls=[shell("curl x", "connection refused")]),
        gap_summary="offline",
    )

    megram = step(GGSState(replans=3), message).megrams[0]

    assert megram.state == "abandon"
    assert (megram.f, megram.sigma) == (0.95, -1.0)
    assert megram.content == "Failed. Tools tried: shell:curl x. Gap: offline"


def test_abandon_megram_without_tools_or_gap_is_terse():
    megram = step(GGSState(replans=3), replan(failed("a"))).megrams[0]

    assert megram.content == "Failed."


def test_an_abandon_the_machinery_caused_writes_no_megram():
    # The fan-in deadline and a model endpoint that failed tried no approach:
    # memory must not recall "this approach failed" for the next run.
    outcomes = (
        failed("a", failure_reason=DEADLINE_REASON),
        failed("b", failure_reason="infrastructure error: LLM timed out"),
    )

    result = step(GGSState(replans=3), replan(*outcomes, gap_summary="deadline"))

    assert result.output.directive == "abandon"
    assert result.megrams == []


def test_an_abandon_with_one_judged_failure_still_writes_its_megram():
    outcomes = (
        failed("a", failure_reason=DEADLINE_REASON),
        failed("b", calls=[shell("curl x", "connection refused")]),
    )

    result = step(GGSState(replans=3), replan(*outcomes))

    assert [m.state for m in result.megrams] == ["abandon"]
    assert "curl x" in result.megrams[0].content


def test_accept_megram_names_the_tools_of_matched_subtasks():
    summary = OutcomeSummary(
        task_id="t",
        summary="all good",
        outcomes=[
            matched("a", tool_calls=[format_evidence("search", {"query": "q"}, "r")])
        ],
    )

    megram = step(GGSState(), summary).megrams[0]

    # What worked and the shape of what it printed; no summary sentence.
    assert megram.content == "Succeeded. Worked: search:q → r."
    assert (megram.state, megram.f, megram.sigma) == ("accept", 0.90, 1.0)


def test_injected_clock_and_ids_stamp_the_megrams():
    now = datetime(2026, 1, 2, tzinfo=UTC)
    ids = iter(["m1", "m2"])

    megrams = step(
        GGSState(),
        replan(failed("a", calls=[missing("ls /a"), missing("ls /b")])),
        now=now,
        id_factory=lambda: next(ids),
    ).megrams

    assert [m.id for m in megrams] == ["m1", "m2"]
    assert all(m.created_at == now for m in megrams)


def test_step_is_deterministic_and_leaves_its_input_state_alone():
    state = GGSState(tried_targets=["ls /z"])
    message = replan(failed("a", calls=[shell("ls /a")]))

    first, second = step(state, message), step(state, message)

    assert first.output == second.output
    assert first.megrams == second.megrams
    assert state.tried_targets == ["ls /z"]
    assert isinstance(first.output, PlanDirective)


def test_forced_abandon_keeps_the_last_loss_and_the_run_s_state():
    from roles.contracts import Loss
    from roles.ggs.solver import GGSState, forced_abandon

    state = GGSState(replans=2, prev_directive="refine")
    last = Loss(D=0.5, P=0.0, Omega=0.4, L=0.46)
    final = forced_abandon(state, "deploy", "Cancelled.", "cancelled", last)
    assert (final.directive, final.prev_directive, final.replans) == (
        "abandon",
        "refine",
        2,
    )
    assert final.loss == last and final.summary == "Cancelled."


def test_forced_abandon_before_any_round_reports_nothing_verified():
    from roles.ggs.solver import GGSState, forced_abandon

    final = forced_abandon(GGSState(), "deploy", "Expired.", "deadline")
    assert (final.loss.D, final.loss.P, final.loss.Omega, final.loss.L) == (
        1.0,
        0.5,
        0.0,
        0.75,
    )
    assert final.prev_directive == "init"


def test_summaries_need_no_emoji_font():
    # ✅ and ❌ showed as a missing-glyph box on a system without an emoji font.
    pictograph = re.compile("[\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff]")
    accept = OutcomeSummary(task_id="t", summary="Printed.", outcomes=[matched("a")])
    success = replan(
        failed("a", mode="plausible"), *[matched(str(n)) for n in range(4)]
    )
    abandon = replan(failed("a", mode="plausible"), recommendation="abandon")

    summaries = [step(GGSState(), m).output.summary for m in (accept, success)]
    summaries.append(step(GGSState(replans=2), abandon).output.summary)

    assert [pictograph.search(s) for s in summaries] == [None, None, None]
