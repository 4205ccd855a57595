"""Benchmark records: check and store what ``bench/control.py`` wrote; show it.

A record is the bench's JSON (``bench/control_report.build_record``). It is
checked before anything is stored: a file that is not such a record is refused
with a message naming what is wrong, and nothing changes.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from django.urls import reverse

from artoo_web import charts, inputs
from artoo_web.models import Benchmark

MAX_BYTES = 5 * 1024 * 1024
NUMBER = (int, float)
RESULT_FIELDS = {
    "scenario": str,
    "strategy": str,
    "pass_no": int,
    "run_id": str,
    "solved": bool,
    "false_accept": bool,
    "rounds": int,
    "prompt_tokens": int,
    "completion_tokens": int,
    "wall_s": NUMBER,
}
SUMMARY_FIELDS = {
    "strategy": str,
    "pass": int,
    "scenarios": int,
    "solved": int,
    "recoverable": int,
    "recoverable_solved": int,
    "false_accepts": int,
    "abandons_correct": int,
    "abandons_premature": int,
}
SUMMARY_NUMBERS = (
    "recoverable_rate",
    "mean_rounds",
    "tokens_per_solved",
    "wall_per_solved_s",
)
CHART_FIELDS = {"strategy": str, "pass": int}


class BadRecord(ValueError):
    """The file is not a benchmark record; the message says why."""


def read_record(path: Path) -> dict:
    """Return the record in the file at ``path``, checked; raise BadRecord."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise BadRecord(f"{path} is {size:,} bytes; a record is at most 5 MiB.")
        raw = path.read_bytes()
    except OSError as exc:
        raise BadRecord(f"cannot read {path}: {exc.strerror or exc}") from None
    if not raw.strip():
        raise BadRecord(f"{path} is empty.")
    try:
        data = inputs.parse_json(raw)
    except inputs.InputError as exc:
        raise BadRecord(str(exc).replace("The body", "The file")) from None
    return check_record(data)


def check_record(data) -> dict:
    """Return ``data`` when it is a benchmark record; raise BadRecord naming why."""
    if not isinstance(data, dict):
        raise BadRecord("A record is a JSON object.")
    check_strings(data, "record")
    for key, limit in (("name", 40), ("session", 80)):
        value = data.get(key)
        if not isinstance(value, str) or not value.strip() or len(value) > limit:
            raise BadRecord(f"'{key}' must be text of 1 to {limit} characters.")
    if not isinstance(data.get("model", ""), str) or len(data.get("model", "")) > 300:
        raise BadRecord("'model' must be text of at most 300 characters.")
    check_rows(data, "results", RESULT_FIELDS)
    check_rows(data, "summaries", SUMMARY_FIELDS, SUMMARY_NUMBERS)
    check_rows(data, "chart", CHART_FIELDS, ("solve_rate", "tokens_per_solved"))
    for key in ("comparison", "memory"):
        if not isinstance(data.get(key, []), list):
            raise BadRecord(f"'{key}' must be a list.")
    if not all(isinstance(line, str) for line in data.get("comparison", [])):
        raise BadRecord("'comparison' must be a list of lines of text.")
    if not isinstance(data.get("report", ""), str):
        raise BadRecord("'report' must be text.")
    return data


def check_rows(data: dict, key: str, fields: dict, numbers: tuple = ()) -> None:
    rows = data.get(key)
    if not isinstance(rows, list):
        raise BadRecord(f"'{key}' must be a list.")
    for n, row in enumerate(rows):
        where = f"{key}[{n}]"
        if not isinstance(row, dict):
            raise BadRecord(f"{where} must be an object.")
        for name, kind in fields.items():
            value = row.get(name)
            # bool is an int to Python; a count must not be true or false.
            if not isinstance(value, kind) or (
                kind is not bool and isinstance(value, bool)
            ):
                raise BadRecord(f"{where}.{name} is missing or of the wrong type.")
        for name in numbers:
            value = row.get(name)
            if value is not None and (
                not isinstance(value, NUMBER) or isinstance(value, bool)
            ):
                raise BadRecord(f"{where}.{name} must be a number or null.")


def check_strings(value, where: str) -> None:
    """Refuse text the database cannot store (NUL, lone surrogates), anywhere."""
    if isinstance(value, str):
        if "\x00" in value:
            raise BadRecord(f"{where} holds a NUL character.")
        try:
            inputs.check_text(where, value)
        except inputs.InputError as exc:
            raise BadRecord(str(exc)) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            check_strings(key, where)
            check_strings(item, f"{where}.{key}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            check_strings(item, f"{where}[{n}]")


def store(record: dict) -> Benchmark:
    """Store a checked record as the latest benchmark of its name."""
    return Benchmark.objects.create(
        name=record["name"],
        session=record["session"],
        model=record.get("model", ""),
        record=record,
        report=record.get("report", ""),
    )


# The page ----------------------------------------------------------------------


def shown(value, digits: int = 0, suffix: str = "") -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}{suffix}"


def run_link(run_id: str) -> str:
    """Return the run page of ``run_id``, or "" when it is no run id."""
    try:
        uuid.UUID(run_id)
    except (TypeError, ValueError):
        return ""
    return reverse("run-detail", args=[run_id])


def summary_rows(record: dict) -> list[dict]:
    return [
        {
            "strategy": s["strategy"],
            "pass": s["pass"],
            "solved": f"{s['solved']}/{s['scenarios']}",
            "recoverable": f"{s['recoverable_solved']}/{s['recoverable']}",
            "rate": shown(
                None if s["recoverable_rate"] is None else s["recoverable_rate"] * 100,
                suffix=" %",
            ),
            "false_accepts": s["false_accepts"],
            "mean_rounds": shown(s["mean_rounds"], 2),
            "tokens_per_solved": shown(s["tokens_per_solved"]),
            "wall_per_solved": shown(s["wall_per_solved_s"], suffix=" s"),
            "abandons_correct": s["abandons_correct"],
            "abandons_premature": s["abandons_premature"],
        }
        for s in record["summaries"]
    ]


def result_rows(record: dict) -> list[dict]:
    return [
        {
            **r,
            "tokens": r["prompt_tokens"] + r["completion_tokens"],
            "link": run_link(r["run_id"]),
        }
        for r in record["results"]
    ]


def memory_rows(record: dict) -> list[dict]:
    rows = []
    for m in record.get("memory", []):
        try:
            (r1, r2), (t1, t2) = m["rounds"], m["tokens"]
            rows.append(
                {
                    "strategy": str(m["strategy"]),
                    "group": str(m["group"]),
                    "rounds": f"{float(r1):.2f} → {float(r2):.2f}",
                    "tokens": f"{float(t1):,.0f} → {float(t2):,.0f}",
                }
            )
        except (KeyError, TypeError, ValueError):
            continue
    return rows


def page_context(bench: Benchmark | None) -> dict:
    """Return what the Benchmarks page shows of ``bench`` (None: nothing yet)."""
    recent = list(Benchmark.objects.only("id", "name", "session", "created_at")[:20])
    if bench is None:
        return {"bench": None, "recent": recent}
    record = bench.record
    return {
        "bench": bench,
        "recent": recent,
        "summaries": summary_rows(record),
        "comparison": record.get("comparison", []),
        "memory": memory_rows(record),
        "results": result_rows(record),
        "chart": charts.benchmark_chart(record["chart"]),
    }
