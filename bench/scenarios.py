"""The control bench's two suites and the choice of scenarios to run.

    tuning    ``SCENARIOS`` (``bench/tuning_scenarios.py``): a failure seen
              here may be looked at and fixed
    held-out  ``HELDOUT`` (``bench/heldout_scenarios.py``): written before any
              fix and never tuned on; a failure seen here is reported, not
              turned into a rule

A session runs both by default, and its report gives each its own tables, so
that a gain on the tuning set is read beside what it does on scenarios no fix
was made for. What a scenario's marks mean is in ``bench/scenario.py``.
"""

from __future__ import annotations

from bench.heldout_scenarios import HELDOUT, HELDOUT_QUICK
from bench.scenario import SUITES, Scenario
from bench.tuning_scenarios import QUICK, SCENARIOS

__all__ = ["HELDOUT", "QUICK", "SCENARIOS", "SUITE_CHOICES", "Scenario", "select"]

SUITE_CHOICES = (*SUITES, "all")
BY_SUITE = {"tuning": (SCENARIOS, QUICK), "held-out": (HELDOUT, HELDOUT_QUICK)}


def suite_of(suite: str) -> tuple[list[Scenario], list[str]]:
    """Return the scenarios of ``suite`` (a name of SUITE_CHOICES) and its quick set.

    Raise ValueError on another name.
    """
    if suite not in SUITE_CHOICES:
        raise ValueError(f"unknown suite {suite!r}; known: {', '.join(SUITE_CHOICES)}")
    chosen = SUITES if suite == "all" else (suite,)
    scenarios = [s for name in chosen for s in BY_SUITE[name][0]]
    quick = [n for name in chosen for n in BY_SUITE[name][1]]
    return scenarios, quick


def select(only: str = "", quick: bool = False, suite: str = "all") -> list[Scenario]:
    """Return the scenarios of ``suite`` named in ``only`` (comma-separated), or
    its quick set, or all of it.

    Raise ValueError naming an unknown suite or the scenarios it does not hold.
    """
    pool, quick_names = suite_of(suite)
    names = [n.strip() for n in only.split(",") if n.strip()]
    if quick and not names:
        names = quick_names
    if not names:
        return pool
    known = {s.name: s for s in pool}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            f"unknown scenario(s) {', '.join(unknown)} in suite {suite}; "
            f"known: {', '.join(known)}"
        )
    return [known[n] for n in dict.fromkeys(names)]
