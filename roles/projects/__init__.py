"""Projects: long-horizon work in milestones (the workflow-architecture spec).

The pure decision layer: ``config`` holds the spec's numbers, ``contracts``
the agents' messages, ``window`` the TaskPlanner's sliding window, ``routing``
each routing decision and QA's file pre-step, ``events`` what ``step`` reads
and returns, ``state`` the project's stored state, ``machine`` the one
``step(state, event) -> (state, actions)`` the shell calls, ``assessment``
what that step does with the Assessor's verdict (a milestone is done only when
``verification``'s commands pass at the commit) and ``stopping`` which work is
discarded (a failed or stopped attempt's) and how a project stops.
"""

from roles.projects.config import DEFAULT_CONFIG, ProjectConfig, token_budgets
from roles.projects.machine import new_project, step
from roles.projects.state import ProjectState, StepRefused

__all__ = [
    "DEFAULT_CONFIG",
    "ProjectConfig",
    "ProjectState",
    "StepRefused",
    "new_project",
    "step",
    "token_budgets",
]
