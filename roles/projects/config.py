"""The numbers of a project: message sizes, window sizes, intervals, budgets.

Every default is the workflow-architecture spec's; the few the spec leaves open
say so where they are defined. Token budgets are per agent invocation and are
scaled down together when the endpoint's context window is too small for them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from roles.budget import reply_reserve

AGENTS = ("scope_agent", "task_planner", "qa", "assessor")


@dataclass(frozen=True)
class ProjectConfig:
    """The spec's numbers for one project; pass a changed copy to tune one.

    Sizes are in characters, budgets in tokens. ``done_keep`` is 7 because the
    spec rolls the done list up "after ~7 detailed entries" (DESIGN §12: "past
    7"). The spec names ``max_attempts`` and ``divergence``/``escalation``
    texts without numbers: 3 attempts (a first try and two retries) matches
    GGS's ``max_replans``; the free texts get the remit's and QA feedback's
    sizes. ``max_rescopes`` stops a project whose re-scopes never converge;
    ``max_claims`` hands a milestone whose "done" claim the Assessor refused that
    many times in a row to the ScopeAgent as a divergence (a TaskPlanner that
    only repeats the claim makes no progress, and nothing else would stop it).
    ``max_skips`` skips in a row with no task run are the TaskPlanner's word that
    the milestone's work is there: the Assessor is asked, as for a "done" claim,
    and a refusal counts toward ``max_claims`` (a TaskPlanner that only skips
    would otherwise never stop). It is the review interval, so the claim takes
    the place of the periodic review the fifth skip would have called.
    ``research_calls`` caps the ``explain_code``/``ask`` calls of one ScopeAgent
    or TaskPlanner turn (the spec gives the tools, not a number): three answers
    of at most about 2,000 characters each stay small beside a 12k budget.
    """

    remit_chars: int = 1000
    milestone_chars: int = 200
    rough_item_chars: int = 100
    carry_forward_items: int = 5
    task_description_chars: int = 200
    result_summary_chars: int = 300
    done_keep: int = 7
    rollup_chars: int = 1000
    qa_feedback_chars: int = 500
    correction_hint_chars: int = 200
    divergence_chars: int = 1000
    escalation_chars: int = 500
    review_interval: int = 5
    max_attempts: int = 3
    max_rescopes: int = 3
    max_claims: int = 3
    max_skips: int = 5
    research_calls: int = 3
    scope_agent_tokens: int = 15_000
    task_planner_tokens: int = 12_000
    qa_tokens: int = 10_000
    assessor_tokens: int = 5_000

    def __post_init__(self) -> None:
        """Refuse a size, count or budget that is not a positive integer."""
        for field in fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(
                    f"ProjectConfig.{field.name} must be a positive integer, "
                    f"not {value!r}"
                )


DEFAULT_CONFIG = ProjectConfig()


def token_budgets(
    config: ProjectConfig = DEFAULT_CONFIG, context_tokens: int | None = None
) -> dict[str, int]:
    """Return each agent's input budget in tokens for an endpoint's window.

    The spec's budgets assume a 32-64k window. When the window, less the reply
    reserve ``roles.budget`` keeps free, cannot hold the largest budget, every
    budget shrinks by the same factor, so the agents keep their proportions and
    the largest exactly fits. An unknown window (None or 0) keeps the spec's.
    """
    budgets = {agent: getattr(config, f"{agent}_tokens") for agent in AGENTS}
    if not context_tokens:
        return budgets
    if context_tokens < 0:
        raise ValueError(f"context_tokens must be >= 0, not {context_tokens}")
    usable = context_tokens - reply_reserve(context_tokens)
    largest = max(budgets.values())
    if usable >= largest:
        return budgets
    return {
        agent: max(1, budget * usable // largest) for agent, budget in budgets.items()
    }
