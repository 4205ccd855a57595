"""Per-user limits on submitting runs: active runs and runs a minute."""

from roles.quota import ACTIVE_RUNS, RUNS_PER_MINUTE, refusal

NOW = 1_000_000.0


def test_under_both_limits_a_run_is_accepted():
    recent = [NOW - 5] * 29
    assert refusal(19, recent, NOW, max_active=20, per_minute=30) is None


def test_at_the_active_limit_the_run_is_refused_with_a_retry():
    refused = refusal(20, [], NOW, max_active=20, per_minute=30)
    assert refused.limit == ACTIVE_RUNS
    assert "active runs: 20 of 20 allowed" in refused.message
    assert refused.retry_after_s > 0


def test_at_the_minute_limit_the_retry_is_when_the_oldest_ages_out():
    recent = [NOW - 50, NOW - 40, NOW - 1]
    refused = refusal(0, recent, NOW, max_active=20, per_minute=3)
    assert refused.limit == RUNS_PER_MINUTE
    assert refused.retry_after_s == 10
    assert "in the last minute: 3 of 3 allowed" in refused.message
    assert "in 10 s" in refused.message


def test_submissions_older_than_a_minute_do_not_count():
    recent = [NOW - 61, NOW - 60, NOW - 59.5]
    assert refusal(0, recent, NOW, max_active=20, per_minute=2) is None


def test_the_retry_waits_for_enough_submissions_to_age_out():
    # Five in the window and a limit of 3: three must age out, the third at +30.
    recent = [NOW - 50, NOW - 45, NOW - 30, NOW - 2, NOW - 1]
    refused = refusal(0, recent, NOW, max_active=0, per_minute=3)
    assert refused.retry_after_s == 30


def test_the_retry_is_at_least_a_second():
    refused = refusal(0, [NOW - 59.999], NOW, max_active=0, per_minute=1)
    assert refused.retry_after_s == 1


def test_zero_turns_each_limit_off():
    assert refusal(10_000, [NOW] * 10_000, NOW, max_active=0, per_minute=0) is None
    assert refusal(10_000, [], NOW, max_active=0, per_minute=5) is None
    assert refusal(0, [NOW] * 500, NOW, max_active=5, per_minute=0) is None
