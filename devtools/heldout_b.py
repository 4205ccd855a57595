"""A second held-out set: answers, written without reading the rules they measure.

Like ``devtools/heldout.py`` these tasks are never tuned on; unlike it, they
were written without opening ``roles/``, so that they measure whether the
answer-checking rules of ``roles/claims/`` generalise rather than whether they
fit the cases they were written from. Each is a question with one right
answer, of six kinds: a word count of a file chosen by its age, a setting
present and switched off, the entity with the largest total over many rows, a
count of the records of a file with a header and comments, a span worked out
from two timestamps, and a yes that needs a sum.

Every verifier works its answer out from the generated files and refuses a
final text that also states a plausible wrong answer (another unit, another
name, the other side of a yes/no).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import random
import re
from pathlib import Path

from devtools.heldout import names_verdict
from devtools.tasks import Task, Verdict, numbers_in, write

SEED = 20261219
PROSE = (
    "ledger orchard signal ferry basalt tundra saffron violet quarry beacon "
    "mosaic cobalt lagoon parsley harvest compass trellis marble gravel shore"
).split()
DRAFTS = ("appendix", "budget-notes", "intro", "methods", "risks", "timeline")
SUPPLIERS = "Halvorsen Kolmar Mistral Quimby Tessaro Ulvik".split()
DIGEST_KEY = "NOTIFY_EMAIL_DIGEST"
TRUTHY = {"1", "true", "yes", "on"}
NO_WORDS = {"no", "not", "never", "disabled"} | {
    f"{verb}n't" for verb in ("is", "are", "was", "were", "do", "does", "did")
}
BUDGET_EUR = 4500


def _rng(name: str) -> random.Random:
    return random.Random(f"{SEED}-{name}")


def sole_number(text: str, expected: float, wrong: set[float], what: str) -> Verdict:
    """Return whether ``text`` states ``expected`` and none of the ``wrong`` ones."""
    found = numbers_in(text)

    def is_stated(value: float) -> bool:
        return any(abs(n - value) < 1e-6 for n in found)

    stray = sorted(w for w in wrong if w != expected and is_stated(w))
    ok = is_stated(expected) and not stray
    note = f"{what} is {expected:g}"
    if stray:
        note += f"; also stated {', '.join(f'{w:g}' for w in stray)}"
    shown = ", ".join(f"{n:g}" for n in found[:8]) or "none"
    return Verdict(ok, f"{note}; numbers in the answer: {shown}")


def yes_no_verdict(
    text: str, expected: bool, what: str, affirm: frozenset[str] = frozenset()
) -> Verdict:
    """Return whether ``text`` gives the ``expected`` yes/no and not the other."""
    words = set(re.findall(r"[a-z]+(?:'[a-z]+)?", text.lower().replace("\u2019", "'")))
    said_no = bool(words & NO_WORDS)
    if expected:
        ok = bool(words & ({"yes"} | affirm)) and not said_no
    else:
        ok = said_no and "yes" not in words
    return Verdict(ok, f"{what}: the answer must say {'yes' if expected else 'no'}")


# A word count of the oldest file -------------------------------------------------


def _prose(rng: random.Random) -> str:
    lines = [
        " ".join(rng.choice(PROSE) for _ in range(rng.randint(8, 14)))
        for _ in range(rng.randint(60, 90))
    ]
    return "\n".join(lines) + "\n"


def prepare_oldest_draft(d: Path) -> None:
    rng = _rng("oldest-draft-words")
    texts = {name: _prose(rng) for name in DRAFTS}
    by_size = sorted(DRAFTS, key=lambda n: len(texts[n]))
    # Neither the first name nor the smallest or largest file is the oldest,
    # so listing by name or by size does not find it.
    oldest = rng.choice([n for n in by_size[1:-1] if n != DRAFTS[0]])
    rest = rng.sample([n for n in DRAFTS if n != oldest], len(DRAFTS) - 1)
    days = sorted(rng.sample(range(200), len(DRAFTS)))
    base = dt.datetime(2025, 6, 2, 9, 0).timestamp()
    for name, day in zip([oldest, *rest], days, strict=True):
        path = d / "drafts" / f"{name}.md"
        write(path, texts[name])
        stamp = base + day * 86400 + rng.randint(0, 86399)
        os.utime(path, (stamp, stamp))


def verify_oldest_draft(d: Path, text: str) -> Verdict:
    files = sorted((d / "drafts").iterdir(), key=lambda p: p.stat().st_mtime)
    body = files[0].read_text()
    words = len(body.split())
    wrong = {len(body.encode()), len(body.splitlines())}
    wrong |= {len(p.read_text().split()) for p in files[1:]}
    verdict = sole_number(text, words, wrong, f"words in {files[0].name}")
    return Verdict(verdict.ok, f"the oldest is {files[0].name}; {verdict.note}")


# A setting present and switched off ----------------------------------------------


def prepare_digest_flag(d: Path) -> None:
    rng = _rng("digest-flag")
    flags = [
        f"{DIGEST_KEY}=0",
        "NOTIFY_EMAIL_ALERTS=1",
        "NOTIFY_EMAIL_RECEIPTS=1",
        "NOTIFY_SMS_ALERTS=1",
        "NOTIFY_PUSH_DIGEST=1",
    ]
    rng.shuffle(flags)
    lines = [
        "# staging: read by the web and worker containers",
        "APP_ENV=staging",
        f"DATABASE_URL=postgres://app@db-staging:5432/shop_{rng.randint(2, 9)}",
        f"REDIS_URL=redis://cache-staging:6379/{rng.randint(0, 7)}",
        "LOG_LEVEL=info",
        f"SESSION_TTL_S={rng.choice((900, 1800, 3600))}",
        "",
        "# notifications",
        *flags,
    ]
    write(d / "deploy" / "staging.env", "\n".join(lines) + "\n")


def _env(path: Path) -> dict[str, str]:
    pairs = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip()
    return pairs


def verify_digest_flag(d: Path, text: str) -> Verdict:
    value = _env(d / "deploy" / "staging.env")[DIGEST_KEY]
    on = value.lower() in TRUTHY
    return yes_no_verdict(text, on, f"{DIGEST_KEY}={value}")


# The largest total over many rows ------------------------------------------------


def prepare_top_supplier(d: Path) -> None:
    rng = _rng("top-supplier")
    winner, spike = rng.sample(SUPPLIERS, 2)
    # The winner's ten rows add to 6000 kg at least, any other's to 5950 at
    # most; the spike's one heavy row outweighs every row of the winner's.
    rows = [(winner, rng.randint(600, 950)) for _ in range(10)]
    rows += [(spike, rng.randint(200, 850)) for _ in range(2)]
    rows.append((spike, rng.randint(1400, 1800)))
    for name in SUPPLIERS:
        if name not in (winner, spike):
            rows += [(name, rng.randint(200, 850)) for _ in range(rng.randint(3, 7))]
    rng.shuffle(rows)
    lines = ["date;supplier;pallets;weight_kg"]
    for n, (name, kg) in enumerate(rows):
        day = dt.date(2026, 4, 1) + dt.timedelta(days=n // 2)
        lines.append(f"{day};{name};{rng.randint(1, 6)};{kg}")
    write(d / "inbound" / "deliveries.csv", "\n".join(lines) + "\n")


def _deliveries(d: Path) -> list[dict[str, str]]:
    with open(d / "inbound" / "deliveries.csv", newline="") as handle:
        return list(csv.DictReader(handle, delimiter=";"))


def verify_top_supplier(d: Path, text: str) -> Verdict:
    totals: dict[str, int] = {}
    for row in _deliveries(d):
        totals[row["supplier"]] = totals.get(row["supplier"], 0) + int(row["weight_kg"])
    best = max(totals, key=totals.get)
    return names_verdict(
        text, {best}, set(totals) - {best}, "the supplier with the most kg in total"
    )


# Records of a file with a header and comments ------------------------------------


def prepare_rainfall_entries(d: Path) -> None:
    rng = _rng("rainfall-entries")
    lines = [
        "# rain gauge export, northern network",
        f"# generated 2026-10-02 06:{rng.randint(10, 59)} UTC; amounts in mm",
        "station\tdate\train_mm",
    ]
    day = dt.date(2026, 9, 1)
    for block in range(rng.randint(3, 4)):
        if block:
            lines += ["", f"# gauge R{rng.randint(1, 9)} serviced, readings resume"]
        for _ in range(rng.randint(9, 18)):
            station = f"R{rng.randint(1, 9)}"
            lines.append(f"{station}\t{day}\t{rng.randint(0, 420) / 10:.1f}")
            day += dt.timedelta(days=rng.choice((0, 1)))
    write(d / "weather" / "rainfall.tsv", "\n".join(lines) + "\n")


def verify_rainfall_entries(d: Path, text: str) -> Verdict:
    lines = (d / "weather" / "rainfall.tsv").read_text().splitlines()
    filled = [ln for ln in lines if ln.strip()]
    data = [ln for ln in filled if not ln.lstrip().startswith("#")]
    records = len(data) - 1  # the first uncommented line is the header
    wrong = {len(lines), len(lines) - 1, len(filled), len(filled) - 1, len(data)}
    return sole_number(text, records, wrong, "records below the header")


# A span between two timestamps ----------------------------------------------------

STEPS = (
    "dump database shop",
    "dump database billing",
    "compress dumps",
    "sync photos bucket",
    "sync invoices bucket",
    "verify checksums",
    "prune snapshots older than 30 days",
    "upload to archive",
)


def prepare_backup_minutes(d: Path) -> None:
    rng = _rng("backup-minutes")
    # Starting after 23:00 with eight steps of nine minutes or more, the job
    # always ends on the next day.
    at = dt.datetime(2026, 3, 7, 23, rng.randint(0, 50))
    lines = [f"{at:%Y-%m-%d %H:%M} backup: start (host vault-{rng.randint(2, 8)})"]
    for step in rng.sample(STEPS, len(STEPS)):
        at += dt.timedelta(minutes=rng.randint(9, 25))
        lines.append(f"{at:%Y-%m-%d %H:%M} {step}: ok, {rng.randint(40, 2400)} MB")
    at += dt.timedelta(minutes=rng.randint(1, 4))
    lines.append(f"{at:%Y-%m-%d %H:%M} backup: finished")
    write(d / "nightly" / "backup.log", "\n".join(lines) + "\n")


def verify_backup_minutes(d: Path, text: str) -> Verdict:
    lines = (d / "nightly" / "backup.log").read_text().splitlines()
    first, last = (
        dt.datetime.strptime(line[:16], "%Y-%m-%d %H:%M")
        for line in (lines[0], lines[-1])
    )
    minutes = (last - first).total_seconds() / 60
    # Read without the date, the clock times give the span the other way round.
    same_day = abs(last.hour * 60 + last.minute - first.hour * 60 - first.minute)
    return sole_number(text, minutes, {same_day}, "minutes from first to last line")


# A yes that needs a sum ----------------------------------------------------------

ITEMS = (
    "coach hire",
    "venue deposit",
    "venue balance",
    "team lunch",
    "dinner",
    "coffee and snacks",
    "train tickets",
    "hotel rooms",
    "taxi",
    "printing",
    "museum tickets",
    "workshop materials",
)


def _expense_cents(rng: random.Random) -> list[int]:
    # Drawn again until the last item can bring the total a little over budget.
    while True:
        cents = [rng.randint(4000, 52000) for _ in range(15)]
        last = BUDGET_EUR * 100 + rng.randint(900, 3900) - sum(cents)
        if 2000 <= last <= 60000:
            return [*cents, last]


def prepare_offsite_budget(d: Path) -> None:
    rng = _rng("offsite-budget")
    cents = _expense_cents(rng)
    rng.shuffle(cents)
    rows = [
        {
            "day": f"2026-09-{rng.randint(14, 18)}",
            "item": rng.choice(ITEMS),
            "eur": c / 100,
            "paid_by": rng.choice(("ana", "lukas", "mei", "tomas")),
        }
        for c in cents
    ]
    rows.sort(key=lambda r: r["day"])
    lines = [json.dumps(r) for r in rows]
    write(d / "offsite" / "expenses.jsonl", "\n".join(lines) + "\n")


def verify_offsite_budget(d: Path, text: str) -> Verdict:
    rows = (d / "offsite" / "expenses.jsonl").read_text().splitlines()
    cents = sum(round(json.loads(r)["eur"] * 100) for r in rows)
    over = cents > BUDGET_EUR * 100
    verdict = yes_no_verdict(
        text, over, "spent more than the budget", frozenset({"exceeded", "exceeds"})
    )
    return Verdict(
        verdict.ok, f"total {cents / 100:.2f} EUR against {BUDGET_EUR}; {verdict.note}"
    )


HELDOUT_B = [
    Task(
        "oldest-draft-words",
        "answer",
        "One of the files in {dir}/drafts hasn't been touched in ages, the one "
        "modified longest ago. How many words are in it?",
        prepare_oldest_draft,
        verify_oldest_draft,
    ),
    Task(
        "digest-flag",
        "answer",
        "Quick check: are email digests switched on in our staging settings "
        "({dir}/deploy/staging.env)?",
        prepare_digest_flag,
        verify_digest_flag,
    ),
    Task(
        "top-supplier",
        "answer",
        "Going by {dir}/inbound/deliveries.csv, which supplier has shipped us "
        "the most kilograms overall?",
        prepare_top_supplier,
        verify_top_supplier,
    ),
    Task(
        "rainfall-entries",
        "answer",
        "I need the number of measurements recorded in {dir}/weather/rainfall.tsv. "
        "How many entries does it have?",
        prepare_rainfall_entries,
        verify_rainfall_entries,
    ),
    Task(
        "backup-minutes",
        "answer",
        "How long did last night's backup take, in minutes? The log is "
        "{dir}/nightly/backup.log.",
        prepare_backup_minutes,
        verify_backup_minutes,
    ),
    Task(
        "offsite-budget",
        "answer",
        f"We had {BUDGET_EUR:,} euros for the team offsite. Did the spending in "
        "{dir}/offsite/expenses.jsonl go over that?",
        prepare_offsite_budget,
        verify_offsite_budget,
    ),
]
