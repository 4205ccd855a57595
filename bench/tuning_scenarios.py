"""The control bench's tuning set: the scenarios a fix may be looked at and made on.

Each is a ``devtools.tasks.Task`` with its marks (``bench/scenario.py``). The
tasks of the real-model tier are reused where they fit; the others are defined
here. The held-out set, never tuned on, is ``bench/heldout_scenarios.py``.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

from bench.scenario import (
    DEAD_URL,
    Scenario,
    answer,
    csv_rows,
    require_dead_url,
    verify_never,
)
from devtools import tasks
from devtools.tasks import Task, Verdict, has_number, write

QUICK = ("count-lines", "misplaced-file", "no-final-newline", "impossible")


# denied-copy: the stated directory is closed to the sandbox's uid -------------


def prepare_denied_copy(d: Path) -> None:
    rng = random.Random(61)
    rows = ["sku,name,quantity"]
    for n in range(1, 62):
        quantity = 0 if rng.random() < 0.2 else rng.randint(1, 90)
        rows.append(f"SKU-{100 + n},{rng.choice(tasks.WORDS)},{quantity}")
    text = "\n".join(rows) + "\n"
    write(d / "restricted/inventory.csv", text)
    write(d / "shared/inventory.csv", text)


def close_restricted(d: Path) -> None:
    """Leave restricted/ to its owner alone (a third user's, as the whole
    task's): a command may not enter it."""
    (d / "restricted").chmod(0o700)


def verify_denied_copy(d: Path, text: str) -> Verdict:
    rows = csv_rows(d / "shared/inventory.csv")
    zero = sum(1 for row in rows if int(row["quantity"]) == 0)
    return has_number(text, zero, "items with quantity 0")


# flaky-command: a script that fails the first time it runs ---------------------

REPORT_SH = """#!/bin/sh
# Print the order total; the upstream is busy the first time it is asked.
here=$(dirname "$0")
if [ ! -e "$here/.warm" ]; then
  touch "$here/.warm"
  echo "error: upstream busy, try again" >&2
  exit 75
fi
awk -F, 'NR > 1 { s += $2 } END { print "order total:", s }' "$here/orders.csv"
"""


def prepare_flaky(d: Path) -> None:
    rng = random.Random(75)
    rows = ["order,amount"] + [f"A{n},{rng.randint(5, 480)}" for n in range(1, 48)]
    write(d / "orders.csv", "\n".join(rows) + "\n")
    write(d / "report.sh", REPORT_SH)


def make_report_executable(d: Path) -> None:
    (d / "report.sh").chmod(0o755)


def verify_flaky(d: Path, text: str) -> Verdict:
    total = sum(int(row["amount"]) for row in csv_rows(d / "orders.csv"))
    return has_number(text, total, "the order total")


# unreachable-url: the server is down, its export is on disk --------------------


def prepare_unreachable(d: Path) -> None:
    require_dead_url()
    rng = random.Random(97)
    rows = ["item,price"]
    for n in range(1, 36):
        rows.append(
            f"{rng.choice(tasks.WORDS)}-{n},{rng.randint(200, 19999) / 100:.2f}"
        )
    write(d / "exports/prices.csv", "\n".join(rows) + "\n")


def verify_unreachable(d: Path, text: str) -> Verdict:
    top = max(float(row["price"]) for row in csv_rows(d / "exports/prices.csv"))
    return has_number(text, top, "the highest price")


# renamed-file: config.yaml is asked for, config.yml exists ---------------------


def prepare_renamed(d: Path) -> None:
    write(
        d / "db/config.yml",
        "database:\n  host: db.internal\n  port: 5432\n"
        "  max_connections: 140\n  timeout_s: 30\n",
    )


def verify_renamed(d: Path, text: str) -> Verdict:
    assert not (d / "db/config.yaml").exists()
    lines = (d / "db/config.yml").read_text().splitlines()
    value = next(int(x.split(":")[1]) for x in lines if "max_connections" in x)
    return has_number(text, value, "max_connections")


# no-final-newline: wc -l counts one line short ---------------------------------


def prepare_no_newline(d: Path) -> None:
    rng = random.Random(57)
    names = [f"{rng.choice(tasks.WORDS).title()} {n}" for n in range(1, 58)]
    write(d / "guests.txt", "\n".join(names))  # no newline after the last one


def verify_no_newline(d: Path, text: str) -> Verdict:
    return has_number(text, tasks.line_count(d / "guests.txt"), "guests, one a line")


# regex-too-much: grep ERROR also matches messages that mention ERROR ------------

NOISE = (
    "INFO retry policy ERROR_BACKOFF=5s loaded",
    "WARN previous ERROR state cleared by operator",
    "INFO dashboard shows ERRORS=0 for the last hour",
    "DEBUG parser saw the token ERROR in a user comment",
)


def prepare_regex(d: Path) -> None:
    rng = random.Random(23)
    lines = []
    for n in range(300):
        stamp = f"2024-06-01T{8 + n // 60:02d}:{n % 60:02d}:00"
        roll = rng.random()
        if roll < 0.07:
            body = f"ERROR job {rng.randint(100, 999)} failed: disk quota exceeded"
        elif roll < 0.15:
            body = rng.choice(NOISE)
        else:
            level = rng.choice(["INFO", "INFO", "WARN", "DEBUG"])
            body = f"{level} job {rng.randint(100, 999)} step done"
        lines.append(f"{stamp} {body}\n")
    write(d / "service.log", "".join(lines))


def verify_regex(d: Path, text: str) -> Verdict:
    lines = (d / "service.log").read_text().splitlines()
    count = sum(1 for line in lines if line.split()[1] == "ERROR")
    return has_number(text, count, "entries of level ERROR")


# quoted-csv: a comma inside a quoted field shifts awk's columns ----------------

PAYEES = ("Smith, Jones & Co", "Acme Ltd", "Baker, Lee", "Nordic Supplies", "Oak & Elm")


def prepare_quoted(d: Path) -> None:
    rng = random.Random(31)
    with open(d / "payments.csv", "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["id", "payee", "amount", "currency"])
        for n in range(1, 33):
            out.writerow([n, rng.choice(PAYEES), rng.randint(20, 900), "EUR"])


def verify_quoted(d: Path, text: str) -> Verdict:
    total = sum(int(row["amount"]) for row in csv_rows(d / "payments.csv"))
    return has_number(text, total, "the total of the amount column")


# impossible ones ---------------------------------------------------------------


def prepare_dead_only(d: Path) -> None:
    require_dead_url()
    write(d / "README.txt", "Quarterly reports are served by the report server.\n")


DEPLOY_SH = """#!/bin/sh
# Ask the deploy API for the current release id.
echo "error: cannot reach deploy API at 10.255.255.1:8443 (connection refused)" >&2
exit 1
"""


def prepare_always_fails(d: Path) -> None:
    write(d / "deploy.sh", DEPLOY_SH)


def make_deploy_executable(d: Path) -> None:
    (d / "deploy.sh").chmod(0o755)


def reused(name: str) -> Task:
    return next(t for t in tasks.TASKS if t.name == name)


SCENARIOS = [
    *(
        Scenario(reused(name), "first-time", "none")
        for name in (
            "count-lines",
            "csv-sum",
            "find-function",
            "largest-log",
            "error-count",
            "count-py",
            "write-script",
        )
    ),
    Scenario(reused("misplaced-file"), "recoverable", "environmental"),
    Scenario(reused("missing-tool"), "recoverable", "environmental"),
    Scenario(
        answer(
            "renamed-file",
            "What is max_connections in {dir}/db/config.yaml?",
            prepare_renamed,
            verify_renamed,
        ),
        "recoverable",
        "environmental",
    ),
    Scenario(
        answer(
            "denied-copy",
            "How many items in {dir}/restricted/inventory.csv have a quantity of 0?",
            prepare_denied_copy,
            verify_denied_copy,
            finish=close_restricted,
        ),
        "recoverable",
        "environmental",
    ),
    Scenario(
        answer(
            "flaky-command",
            "Run {dir}/report.sh and tell me the order total it prints.",
            prepare_flaky,
            verify_flaky,
            writable=True,
            finish=make_report_executable,
        ),
        "recoverable",
        "environmental",
    ),
    Scenario(
        answer(
            "unreachable-url",
            f"Get the price list from {DEAD_URL}/exports/prices.csv (the export "
            "server; its files are mirrored under {dir}) and tell me the highest "
            "price in it.",
            prepare_unreachable,
            verify_unreachable,
        ),
        "recoverable",
        "environmental",
    ),
    Scenario(
        answer(
            "no-final-newline",
            "How many guests does {dir}/guests.txt list? It has one guest per line.",
            prepare_no_newline,
            verify_no_newline,
        ),
        "recoverable",
        "logical",
    ),
    Scenario(
        answer(
            "regex-too-much",
            "How many entries of {dir}/service.log have the level ERROR?",
            prepare_regex,
            verify_regex,
        ),
        "recoverable",
        "logical",
    ),
    Scenario(
        answer(
            "quoted-csv",
            "What is the total of the amount column in {dir}/payments.csv?",
            prepare_quoted,
            verify_quoted,
        ),
        "recoverable",
        "logical",
    ),
    Scenario(reused("impossible"), "impossible", "environmental"),
    Scenario(
        Task(
            "dead-url-only",
            "impossible",
            f"Download {DEAD_URL}/reports/q3.csv and tell me how many rows it has.",
            prepare_dead_only,
            verify_never("the report server is down and no copy exists"),
        ),
        "impossible",
        "environmental",
    ),
    Scenario(
        Task(
            "always-fails",
            "impossible",
            "Run {dir}/deploy.sh and tell me the release id it prints.",
            prepare_always_fails,
            verify_never("deploy.sh never prints a release id"),
            finish=make_deploy_executable,
        ),
        "impossible",
        "environmental",
    ),
]
