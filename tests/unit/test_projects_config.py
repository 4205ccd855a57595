"""A project's numbers: the spec's defaults and the per-agent token budgets."""

import pytest

from roles.budget import reply_reserve
from roles.projects.config import DEFAULT_CONFIG, ProjectConfig, token_budgets

SPEC_BUDGETS = {
    "scope_agent": 15000,
    "task_planner": 12000,
    "qa": 10000,
    "assessor": 5000,
}


def test_defaults_are_the_spec_numbers():
    c = DEFAULT_CONFIG
    assert (c.remit_chars, c.milestone_chars, c.rough_item_chars) == (1000, 200, 100)
    assert (c.done_keep, c.result_summary_chars, c.qa_feedback_chars) == (7, 300, 500)
    assert (c.correction_hint_chars, c.review_interval) == (200, 5)


def test_a_window_that_holds_the_budgets_keeps_them():
    assert token_budgets(DEFAULT_CONFIG, 65536) == SPEC_BUDGETS
    assert token_budgets(DEFAULT_CONFIG, 32768) == SPEC_BUDGETS


def test_an_unknown_window_keeps_the_spec_budgets():
    assert token_budgets(DEFAULT_CONFIG, None) == SPEC_BUDGETS
    assert token_budgets(DEFAULT_CONFIG, 0) == SPEC_BUDGETS


def test_a_small_window_scales_every_budget_by_the_same_factor():
    budgets = token_budgets(DEFAULT_CONFIG, 8192)
    usable = 8192 - reply_reserve(8192)
    assert budgets["scope_agent"] == usable
    assert budgets["task_planner"] == usable * 12 // 15
    assert budgets["qa"] == usable * 10 // 15
    assert budgets["assessor"] == usable * 5 // 15


def test_a_window_just_too_small_for_the_largest_budget_shrinks_all():
    budgets = token_budgets(DEFAULT_CONFIG, 16384)
    assert budgets["scope_agent"] == 16384 - 2048 < 15000
    assert all(budgets[a] < SPEC_BUDGETS[a] for a in SPEC_BUDGETS)


def test_a_tuned_config_scales_its_own_budgets():
    config = ProjectConfig(assessor_tokens=1000, scope_agent_tokens=20000)
    assert token_budgets(config, 10000)["assessor"] == 1000 * 7952 // 20000


def test_a_negative_window_is_refused():
    with pytest.raises(ValueError, match="context_tokens"):
        token_budgets(DEFAULT_CONFIG, -1)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_a_config_number_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(ValueError, match="ProjectConfig.review_interval"):
        ProjectConfig(review_interval=bad)
