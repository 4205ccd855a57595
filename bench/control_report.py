"""The control bench's numbers and tables, worked out from recorded results.

Pure functions of ``Result`` rows (one per scenario, strategy and pass), so
the tables can be rebuilt from a stored record::

    record = build_record(meta, results)   # adds summaries, comparison, memory
    print(render(record))                  # Markdown: the tables and the runs

Definitions (the table's legend says them too):

- solved: the verifier says the request was met and the run accepted; for an
  impossible scenario, the run abandoned and R2 wrote its next moves;
- false accept: the run accepted while its verifier says it was not met;
- tokens / solved: every prompt and completion token the strategy spent on the
  suite (failed runs too) divided by the scenarios it solved; wall / solved
  the same for wall time;
- abandons: correct on an impossible scenario, premature on any other.

Each result names its suite (``bench/scenarios.py``). The record's figures
cover the whole session, and ``record["suites"]`` holds each suite's own; a
session with held-out scenarios is reported with each suite's tables apart,
so that a gain on the tuning set is never read with the held-out set mixed in.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, fields

LEGEND = (
    "solved: the verifier agrees and the run accepted (impossible: a clean "
    "abandon with next moves); tokens / solved and wall / solved: all the "
    "strategy spent on the suite divided by the scenarios it solved; abandons: "
    "correct on impossible scenarios, premature on the others."
)
GROUPS = ("first-time", "environmental", "logical", "impossible")
# The memory table's row of the scenarios a strategy could have solved in
# pass 1 and did not.
FAILED_FIRST = "failed in pass 1"
SUITE_TITLES = {"tuning": "tuning set", "held-out": "held-out set (never tuned on)"}
MEMORY_LEGEND = (
    "Each row compares a scenario's run in pass 1 with its run in the last pass, "
    f'over the scenarios run in both; "{FAILED_FIRST}": the scenarios that '
    "could be solved and that the strategy did not solve in pass 1."
)


OFF_LEGEND = (
    "The memory=off arm runs each scenario of pass 2 under a user of its own "
    "that remembers nothing; each line sets it against pass 2 over memory, on "
    "the scenarios run in both."
)


@dataclass
class Result:
    """What one run of one scenario under one strategy did, and its verdict."""

    scenario: str
    expect: str
    failure: str
    group: str
    strategy: str
    pass_no: int
    run_id: str = ""
    solved: bool = False
    false_accept: bool = False
    directive: str = ""
    status: str = ""
    path: str = ""
    rounds: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    note: str = ""
    # The machine the run ran on: a session resumed elsewhere spans several,
    # and wall times compare only within one.
    machine: str = ""
    suite: str = "tuning"
    # What memory gave R2 in the run (devtools.driver.recalled).
    recalled: list[str] = field(default_factory=list)
    # False for a run of the memory=off arm: a user of its own, nothing remembered.
    memory: bool = True

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def abandoned(self) -> bool:
        return self.directive == "abandon"

    @classmethod
    def from_dict(cls, data: dict) -> Result:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def per(total: float, count: int) -> float | None:
    return total / count if count else None


def summarise(results: list[Result], strategy: str, pass_no: int) -> dict:
    """Return one strategy's figures on one pass of the suite."""
    rows = [r for r in results if r.strategy == strategy and r.pass_no == pass_no]
    solved = [r for r in rows if r.solved]
    rec = [r for r in rows if r.expect == "recoverable"]
    rec_solved = sum(r.solved for r in rec)
    tokens = sum(r.tokens for r in rows)
    wall = sum(r.wall_s for r in rows)
    return {
        "strategy": strategy,
        "pass": pass_no,
        "scenarios": len(rows),
        "solved": len(solved),
        "recoverable": len(rec),
        "recoverable_solved": rec_solved,
        "recoverable_rate": per(rec_solved, len(rec)),
        "recoverable_tokens_per_solved": per(sum(r.tokens for r in rec), rec_solved),
        "false_accepts": sum(r.false_accept for r in rows),
        "mean_rounds": statistics.mean(r.rounds for r in rows) if rows else None,
        "tokens": tokens,
        "tokens_per_solved": per(tokens, len(solved)),
        "wall_s": wall,
        "wall_per_solved_s": per(wall, len(solved)),
        "abandons_correct": sum(r.abandoned and r.expect == "impossible" for r in rows),
        "abandons_premature": sum(
            r.abandoned and r.expect != "impossible" for r in rows
        ),
    }


def order_of(results: list[Result]) -> tuple[list[str], list[int]]:
    """Return the strategies (in first-seen order) and the passes of ``results``."""
    strategies = list(dict.fromkeys(r.strategy for r in results))
    passes = sorted({r.pass_no for r in results})
    return strategies, passes


# The baselines GGS is compared against, in the order the report names them.
BASELINES = ("retry", "warming")


def comparison(summaries: list[dict], pass_no: int = 1, baseline: str = "retry") -> str:
    """Return the GGS-against-``baseline`` line on recoverable scenarios, or ""."""
    by = {s["strategy"]: s for s in summaries if s["pass"] == pass_no}
    ggs, retry = by.get("ggs"), by.get(baseline)
    if not (ggs and retry and ggs["recoverable"] and retry["recoverable"]):
        return ""
    diff = (ggs["recoverable_rate"] - retry["recoverable_rate"]) * 100
    g_tok = ggs["recoverable_tokens_per_solved"]
    r_tok = retry["recoverable_tokens_per_solved"]
    change = f" ({(g_tok / r_tok - 1) * 100:+.0f} %)" if g_tok and r_tok else ""
    return (
        f"GGS vs {baseline} on recoverable scenarios (pass {pass_no}): solved "
        f"{fraction(ggs)} vs {fraction(retry)}, {diff:+.0f} pp; tokens per solved "
        f"task {number(g_tok)} vs {number(r_tok)}{change}; false accepts "
        f"{ggs['false_accepts']} vs {retry['false_accepts']}."
    )


def fraction(summary: dict) -> str:
    rate = summary["recoverable_rate"]
    shown = f"{rate * 100:.0f} %" if rate is not None else "n/a"
    return f"{summary['recoverable_solved']}/{summary['recoverable']} ({shown})"


def memory_rows(results: list[Result]) -> list[dict]:
    """Return, per strategy and class, pass 1 against the last pass, over the
    scenarios run in both (a session still running compares like with like);
    then, per strategy, the scenarios it did not solve in pass 1 that could be
    solved, the class the second pass over memory is meant to make cheaper."""
    strategies, passes = order_of(results)
    if len(passes) < 2:
        return []
    first, last = passes[0], passes[-1]
    rows = []
    for strategy in strategies:
        by_pass = {
            p: {
                r.scenario: r
                for r in results
                if (r.strategy, r.pass_no) == (strategy, p)
            }
            for p in (first, last)
        }
        paired = [
            (a, by_pass[last][name])
            for name, a in by_pass[first].items()
            if name in by_pass[last]
        ]
        groups = [(g, [(a, b) for a, b in paired if a.group == g]) for g in GROUPS]
        failed = [
            (a, b) for a, b in paired if a.expect != "impossible" and not a.solved
        ]
        groups.append((FAILED_FIRST, failed))
        rows += [memory_row(strategy, group, pairs) for group, pairs in groups if pairs]
    return rows


def regressions(results: list[Result]) -> list[dict]:
    """Return every scenario a strategy solved in pass 1 and failed in a later
    pass over memory, with both runs' ids and what memory gave the later run
    before it failed (its recalled items, the suspects of the regression)."""
    first = {
        (r.strategy, r.scenario): r for r in results if r.pass_no == 1 and r.solved
    }
    found = []
    for r in results:
        before = first.get((r.strategy, r.scenario))
        if r.pass_no > 1 and before is not None and not r.solved:
            found.append(
                {
                    "strategy": r.strategy,
                    "scenario": r.scenario,
                    "pass": r.pass_no,
                    "runs": [before.run_id, r.run_id],
                    "recalled": list(r.recalled),
                }
            )
    return found


def regression_lines(found: list[dict], strategies: list[str]) -> list[str]:
    """Return the regressions section's lines: per strategy, each regression
    or "none"."""
    lines = []
    for strategy in strategies:
        mine = [f for f in found if f["strategy"] == strategy]
        if not mine:
            lines.append(f"- {strategy}: none")
        for f in mine:
            recalled = "; ".join(f["recalled"]) or "nothing recalled"
            lines.append(
                f"- {strategy}: {f['scenario']} solved in pass 1 "
                f"({f['runs'][0] or '-'}), failed in pass {f['pass']} "
                f"({f['runs'][1] or '-'}); recalled before it: {recalled}"
            )
    return lines


def memory_row(strategy: str, group: str, pairs: list[tuple[Result, Result]]) -> dict:
    """Return one row of the memory table: a class's runs in both passes."""
    a = [first for first, _ in pairs]
    b = [last for _, last in pairs]
    return {
        "strategy": strategy,
        "group": group,
        "runs": len(pairs),
        "solved": [sum(r.solved for r in a), sum(r.solved for r in b)],
        "rounds": [mean(r.rounds for r in a), mean(r.rounds for r in b)],
        "tokens": [mean(r.tokens for r in a), mean(r.tokens for r in b)],
    }


def mean(values) -> float:
    values = list(values)
    return statistics.mean(values) if values else 0.0


def chart_rows(summaries: list[dict]) -> list[dict]:
    """Return what the chart draws: recoverable solve rate and tokens per solved."""
    return [
        {
            "strategy": s["strategy"],
            "pass": s["pass"],
            "solve_rate": s["recoverable_rate"],
            "tokens_per_solved": s["tokens_per_solved"],
        }
        for s in summaries
    ]


def figures(results: list[Result]) -> dict:
    """Return the summaries, comparison lines and memory rows of ``results``;
    the memory=off arm stands apart, set against pass 2 with memory."""
    arm_off = without_memory(results)
    results = [r for r in results if r.memory]
    strategies, passes = order_of(results)
    summaries = [summarise(results, s, p) for p in passes for s in strategies]
    lines = [comparison(summaries, p, b) for p in passes for b in BASELINES]
    return {
        "scenarios": len({r.scenario for r in results}),
        "summaries": summaries,
        "comparison": [line for line in lines if line],
        "memory": memory_rows(results),
        "regressions": regressions(results),
        "without_memory": arm_off,
    }


def without_memory(results: list[Result]) -> list[dict]:
    """Return, per strategy, pass 2 with memory against the memory=off arm over
    the scenarios run in both: each one's solved count, and the scenarios
    solved without memory and failed with it (worse), or the other way round."""
    off = {(r.strategy, r.scenario): r for r in results if not r.memory}
    rows: dict[str, dict] = {}
    for r in results:
        bare = off.get((r.strategy, r.scenario))
        if not r.memory or r.pass_no != 2 or bare is None:
            continue
        row = rows.setdefault(
            r.strategy,
            {
                "strategy": r.strategy,
                "runs": 0,
                "solved": [0, 0],
                "worse": [],
                "better": [],
            },
        )
        row["runs"] += 1
        row["solved"][0] += r.solved
        row["solved"][1] += bare.solved
        if r.solved != bare.solved:
            change = {
                "scenario": r.scenario,
                "runs": [bare.run_id, r.run_id],
                "recalled": list(r.recalled),
            }
            row["worse" if bare.solved else "better"].append(change)
    return list(rows.values())


def without_memory_lines(rows: list[dict]) -> list[str]:
    """Return the memory=off section's lines: per strategy, the solved counts
    and each scenario memory made worse (with what it recalled) or better."""
    lines = []
    for row in rows:
        with_m, without = row["solved"]
        lines.append(
            f"- {row['strategy']}: solved {with_m}/{row['runs']} with memory, "
            f"{without}/{row['runs']} without"
        )
        for w in row["worse"]:
            recalled = "; ".join(w["recalled"]) or "nothing recalled"
            lines.append(
                f"  - worse with memory: {w['scenario']} (without "
                f"{w['runs'][0] or '-'}, with {w['runs'][1] or '-'}); recalled: "
                f"{recalled}"
            )
        for b in row["better"]:
            lines.append(
                f"  - better with memory: {b['scenario']} (without "
                f"{b['runs'][0] or '-'}, with {b['runs'][1] or '-'})"
            )
    return lines


def suites_of(results: list[Result]) -> list[str]:
    """Return the suites of ``results``: the tuning set first, then the others."""
    present = dict.fromkeys(r.suite for r in results)
    return sorted(present, key=lambda s: (s != "tuning", s != "held-out", s))


def is_split(results: list[Result]) -> bool:
    """Return whether the report gives each suite its own tables (a session
    of the tuning set alone reads as it always did)."""
    return any(r.suite != "tuning" for r in results)


def build_record(meta: dict, results: list[Result]) -> dict:
    """Return the bench's record: ``meta``, the results and every figure, for
    the whole session and for each suite."""
    whole = figures(results)
    return {
        **meta,
        "results": [asdict(r) for r in results],
        "summaries": whole["summaries"],
        "comparison": whole["comparison"],
        "memory": whole["memory"],
        "regressions": whole["regressions"],
        "without_memory": whole["without_memory"],
        "chart": chart_rows(whole["summaries"]),
        "suites": {
            suite: figures([r for r in results if r.suite == suite])
            for suite in suites_of(results)
        },
    }


# Markdown --------------------------------------------------------------------


def number(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def change(before: float, after: float) -> str:
    if not before:
        return "n/a"
    return f"{(after / before - 1) * 100:+.0f} %"


SUMMARY_HEAD = (
    "| strategy | pass | solved | recoverable solved | false accepts "
    "| mean rounds | tokens / solved | wall s / solved "
    "| abandons correct | abandons premature |"
)


def summary_table(summaries: list[dict]) -> list[str]:
    lines = [SUMMARY_HEAD, "|" + "---|" * 10]
    for s in summaries:
        cells = (
            s["strategy"],
            str(s["pass"]),
            f"{s['solved']}/{s['scenarios']}",
            fraction(s),
            str(s["false_accepts"]),
            number(s["mean_rounds"], 2),
            number(s["tokens_per_solved"]),
            number(s["wall_per_solved_s"]),
            str(s["abandons_correct"]),
            str(s["abandons_premature"]),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return lines


RUNS_HEAD = (
    "| scenario | expect | class | solved | false accept | directive | GGS path "
    "| rounds | prompt tok | completion tok | wall s | run |"
)


def machines_lines(results: list[Result]) -> list[str]:
    """Name the machines the runs ran on, when there were more than one."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r.machine] = counts.get(r.machine, 0) + 1
    if len(counts) < 2:
        return []
    lines = [
        f"- {n} runs on {name or 'a machine the session did not record'}"
        for name, n in counts.items()
    ]
    return [*lines, "- wall times compare only between runs on one machine"]


def first_rounds(results: list[Result], signatures: dict[str, str]) -> list[str]:
    """Return, per scenario whose verdicts differ between strategies, whether
    their first rounds were alike (the executor's calls and answers), and so
    whether a control decision or the executor's own replies made the
    difference. ``signatures`` holds each run's first round, by run id."""
    strategies, passes = order_of(results)
    lines, decided, diverged = [], 0, 0
    for p in passes:
        by: dict[str, dict[str, Result]] = {}
        for r in results:
            if r.pass_no == p and r.run_id in signatures:
                by.setdefault(r.scenario, {})[r.strategy] = r
        for scenario, runs in by.items():
            if len({r.solved for r in runs.values()}) < 2:
                continue
            groups: dict[str, list[str]] = {}
            for s in strategies:
                if s in runs:
                    groups.setdefault(signatures[runs[s].run_id], []).append(s)
            alike = " = ".join(" = ".join(g) for g in groups.values() if len(g) > 1)
            solved = ", ".join(
                f"{s} {'yes' if r.solved else 'no'}" for s, r in runs.items()
            )
            if len(groups) == 1:
                decided += 1
                how = "same first round: a control decision made the difference"
            else:
                diverged += 1
                how = "first rounds differ" + (f" (alike: {alike})" if alike else "")
                how += ": the executor's replies diverged before any control decision"
            lines.append(f"- pass {p} {scenario} ({solved}): {how}")
    if not lines:
        return []
    head = (
        f"Of {decided + diverged} scenarios (per pass) whose verdicts differ "
        f"between strategies, {decided} had the same first round under each (a "
        f"control decision made the difference) and {diverged} did not."
    )
    return [head, "", *lines]


def runs_table(results: list[Result]) -> list[str]:
    lines = [RUNS_HEAD, "|" + "---|" * 12]
    for r in results:
        cells = (
            r.scenario,
            r.expect,
            r.failure,
            "yes" if r.solved else "no",
            "**YES**" if r.false_accept else "no",
            r.directive or "-",
            r.path or "-",
            str(r.rounds),
            str(r.prompt_tokens),
            str(r.completion_tokens),
            f"{r.wall_s:.0f}",
            r.run_id or "-",
        )
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def memory_table(rows: list[dict]) -> list[str]:
    lines = [
        "| strategy | class | runs | solved p1 → p2 | mean rounds p1 → p2 | Δ rounds "
        "| mean tokens p1 → p2 | Δ tokens |",
        "|" + "---|" * 8,
    ]
    for m in rows:
        (r1, r2), (t1, t2) = m["rounds"], m["tokens"]
        cells = (
            m["strategy"],
            m["group"],
            str(m["runs"]),
            f"{m['solved'][0]} → {m['solved'][1]}",
            f"{r1:.2f} → {r2:.2f}",
            change(r1, r2),
            f"{t1:,.0f} → {t2:,.0f}",
            change(t1, t2),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def split_tables(record: dict) -> list[str]:
    """Return each suite's summary table, comparison and memory table apart."""
    suites = record["suites"]
    out = []
    for suite, fig in suites.items():
        title = SUITE_TITLES.get(suite, suite).capitalize()
        out += ["", f"## {title}: {fig['scenarios']} scenarios", ""]
        out += summary_table(fig["summaries"])
        out += [""] * bool(fig["comparison"])
        out += [f"- {line}" for line in fig["comparison"]]
    out += ["", LEGEND]
    if any(fig["memory"] for fig in suites.values()):
        out += ["", "## Second pass over memory (after a Dreamer pass)", ""]
        out += [MEMORY_LEGEND]
        for suite, fig in suites.items():
            if fig["memory"]:
                title = SUITE_TITLES.get(suite, suite).capitalize()
                out += ["", f"### {title}", "", *memory_table(fig["memory"])]
    return out


def runs_sections(results: list[Result]) -> list[str]:
    """Return a runs table per strategy and pass (and suite, when split); the
    memory=off arm's after its pass."""
    strategies, passes = order_of(results)
    suites = suites_of(results) if is_split(results) else [None]
    arms = [(p, True) for p in passes]
    if any(not r.memory for r in results):
        arms.insert(passes.index(2) + 1 if 2 in passes else len(arms), (2, False))
    out = []
    for p, memory in arms:
        for s in strategies:
            for suite in suites:
                rows = [
                    r
                    for r in results
                    if (r.strategy, r.pass_no, r.memory) == (s, p, memory)
                    and suite in (None, r.suite)
                ]
                named = f", {SUITE_TITLES.get(suite, suite)}" if suite else ""
                named += "" if memory else ", memory off"
                # Unsplit, a strategy's pass not begun yet shows an empty table.
                if rows or (suite is None and memory):
                    out += ["", f"## {s}, pass {p}{named}", "", *runs_table(rows)]
    return out


def render(record: dict) -> str:
    """Return the whole report as Markdown (summary, comparison, memory, runs)."""
    results = [Result.from_dict(r) for r in record["results"]]
    out = [f"# {record.get('title', 'artoo control bench')}", ""]
    out += [
        f"- {k}: {record[k]}"
        for k in ("model", "seed", "temperature", "commit")
        if k in record
    ]
    if record.get("fresh_model"):
        out.append("- the model was restarted before every run (empty caches)")
    if record.get("operator"):
        out.append(f"- the operator: {record['operator']}")
    out.append(
        "- accounts: one per strategy, its scenarios in a row"
        if record.get("one_account")
        else "- accounts: one per (strategy, scenario)"
    )
    out += [f"- resumed at {at}" for at in record.get("resumed_at", [])]
    out += machines_lines(results)
    if record.get("complete") is False:
        out.append("- INCOMPLETE: the session stopped before every run was done")
    dreams = record.get("dreams", [])
    out += [f"- Dreamer pass before pass {n + 2}: {d}" for n, d in enumerate(dreams)]
    if is_split(results):
        out += split_tables(record)
    else:
        out += ["", *summary_table(record["summaries"]), "", LEGEND, ""]
        out += [f"- {line}" for line in record["comparison"]]
        if record["memory"]:
            out += ["", "## Second pass over memory (after a Dreamer pass)", ""]
            out += [MEMORY_LEGEND, "", *memory_table(record["memory"])]
    strategies, passes = order_of(results)
    if len(passes) > 1:
        out += ["", "## Regressions (solved in pass 1, failed in a later pass)", ""]
        out += regression_lines(record.get("regressions") or [], strategies)
    if record.get("without_memory"):
        out += ["", "## Pass 2 with memory against no memory (the memory=off arm)"]
        out += ["", OFF_LEGEND, "", *without_memory_lines(record["without_memory"])]
    out += runs_sections(results)
    remembered = [r for r in results if r.memory]
    alike = first_rounds(remembered, record.get("first_rounds", {}))
    if alike:
        out += ["", "## Were the first rounds alike?", "", *alike]
    for s, costs in record.get("role_costs", {}).items():
        out += ["", f"## {s}: model cost per role (all passes)", "", costs]
    notes = [
        f"- {r.strategy} p{r.pass_no}{'' if r.memory else ' memory off'} "
        f"{r.scenario}: {r.note}"
        for r in results
    ]
    return "\n".join(out + ["", "Verifiers:", "", *notes]) + "\n"
