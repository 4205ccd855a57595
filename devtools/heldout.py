"""Held-out tasks: kinds of question and edit no rule of ``roles/`` was written for.

``devtools/tasks.py`` holds the tuning tasks, the ones a failure may be looked
at and fixed on. The tasks here were written before any fix of the claims
engine and are never tuned on: a change to ``roles/`` is reported on both
tables (``make test-model`` prints them apart), and a failure seen here is
reported, not turned into a rule. Each kind is new to the suites: names as the
answer, a distinct count, a yes/no, the newest file, a value computed by
running code, a derived maximum, a date span, a report written to a file, an
in-place edit, a rename of many files and an archive.

The data is generated from a seeded random source, so a task's answer is known
to its verifier and not to anyone reading a rule.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import tarfile
from pathlib import Path

from devtools.tasks import Task, Verdict, has_number, numbers_in, write

SEED = 20261203
USERS = "alice bruno chen dmitri elena farid greta hiro ines jonas".split()
PRODUCTS = "anchor bracket clamp dowel eyelet fitting gasket hinge".split()


def _rng(name: str) -> random.Random:
    return random.Random(f"{SEED}-{name}")


def _words(text: str) -> set[str]:
    return {w.strip(".-") for w in re.findall(r"[a-z0-9_.-]+", text.lower())}


def names_verdict(text: str, wanted: set[str], others: set[str], what: str) -> Verdict:
    """Return whether every wanted name and none of the others is in ``text``."""
    words = _words(text)
    missing = sorted(n for n in wanted if n.lower() not in words)
    extra = sorted(n for n in others if n.lower() in words)
    ok = not missing and not extra
    note = f"{what}: {', '.join(sorted(wanted))}"
    if missing:
        note += f"; missing {', '.join(missing)}"
    if extra:
        note += f"; wrongly named {', '.join(extra)}"
    return Verdict(ok, note)


# Names as the answer -----------------------------------------------------------


def _access_log(d: Path) -> dict[str, int]:
    rng = _rng("busy-users")
    counts = {u: rng.choice((1, 2, 3, 4, 5, 7)) for u in USERS}
    lines = [
        f"2026-11-{rng.randint(1, 28):02d} user={u} path=/{rng.choice(PRODUCTS)}"
        for u, n in counts.items()
        for _ in range(n)
    ]
    rng.shuffle(lines)
    write(d / "access.log", "\n".join(lines) + "\n")
    return counts


def prepare_busy_users(d: Path) -> None:
    _access_log(d)


def verify_busy_users(d: Path, text: str) -> Verdict:
    counts = _access_log_counts(d)
    wanted = {u for u, n in counts.items() if n > 3}
    return names_verdict(text, wanted, set(counts) - wanted, "users with > 3 requests")


def _access_log_counts(d: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in (d / "access.log").read_text().splitlines():
        user = re.search(r"user=(\w+)", line).group(1)
        counts[user] = counts.get(user, 0) + 1
    return counts


def prepare_empty_files(d: Path) -> None:
    rng = _rng("empty-files")
    for n in range(12):
        name = f"batch-{n:02d}.dat"
        size = 0 if n in (2, 5, 9) else rng.randint(1, 400)
        write(d / "data" / name, "x" * size)


def verify_empty_files(d: Path, text: str) -> Verdict:
    files = sorted((d / "data").iterdir())
    wanted = {p.name for p in files if p.stat().st_size == 0}
    others = {p.name for p in files} - wanted
    return names_verdict(text, wanted, others, "empty files")


# A distinct count, a yes/no, the newest file --------------------------------------


def prepare_distinct_ips(d: Path) -> None:
    rng = _rng("distinct-ips")
    pool = [f"10.{rng.randint(0, 9)}.{rng.randint(0, 255)}.{n}" for n in range(17)]
    lines = [
        f"{rng.choice(pool)} - GET /{rng.choice(PRODUCTS)} 200" for _ in range(240)
    ]
    write(d / "web.log", "\n".join(lines) + "\n")


def verify_distinct_ips(d: Path, text: str) -> Verdict:
    lines = (d / "web.log").read_text().splitlines()
    return has_number(text, len({line.split()[0] for line in lines}), "distinct IPs")


def prepare_debug_flag(d: Path) -> None:
    config = {
        "service": {"name": "billing", "debug_toolbar": True},
        "logging": {"level": "info", "debug": False},
        "features": {"debug_endpoints": ["/health"]},
    }
    write(d / "settings.json", json.dumps(config, indent=2) + "\n")


def verify_debug_flag(d: Path, text: str) -> Verdict:
    words = _words(text)
    said_no = bool(words & {"no", "false", "disabled", "not"})
    said_yes = bool(words & {"yes", "enabled"}) and not said_no
    ok = said_no and not said_yes
    return Verdict(ok, "logging.debug is false: the answer must say no")


def prepare_newest_backup(d: Path) -> None:
    rng = _rng("newest-backup")
    base = dt.datetime(2026, 10, 1, 12, 0).timestamp()
    days = rng.sample(range(1, 60), 8)
    for n, day in enumerate(days):
        path = d / "backups" / f"db-{rng.randint(1000, 9999)}-{n}.sql"
        write(path, f"-- dump {n}\n")
        stamp = base + day * 86400
        os.utime(path, (stamp, stamp))


def verify_newest_backup(d: Path, text: str) -> Verdict:
    files = sorted((d / "backups").iterdir(), key=lambda p: p.stat().st_mtime)
    newest = files[-1].name
    return names_verdict(
        text, {newest}, {p.name for p in files[:-1]}, "the newest backup"
    )


# Values computed from data or code ---------------------------------------------


def _sales(d: Path) -> list[tuple[str, int, float]]:
    rows = []
    with (d / "sales.csv").open() as handle:
        next(handle)
        for line in handle:
            product, qty, price = line.strip().split(",")
            rows.append((product, int(qty), float(price)))
    return rows


def prepare_top_revenue(d: Path) -> None:
    rng = _rng("top-revenue")
    lines = ["product,quantity,unit_price"]
    for _ in range(60):
        lines.append(
            f"{rng.choice(PRODUCTS)},{rng.randint(1, 40)},{rng.randint(2, 90)}.50"
        )
    write(d / "sales.csv", "\n".join(lines) + "\n")


def verify_top_revenue(d: Path, text: str) -> Verdict:
    totals: dict[str, float] = {}
    for product, qty, price in _sales(d):
        totals[product] = totals.get(product, 0) + qty * price
    best = max(totals, key=totals.get)
    return names_verdict(
        text, {best}, set(totals) - {best}, "the product with the highest revenue"
    )


CHECKSUM_PY = '''\
def checksum(text):
    """Return a small rolling checksum of text."""
    total = 7
    for position, char in enumerate(text, start=1):
        total = (total * 31 + ord(char) * position) % 65521
    return total
'''


def prepare_run_code(d: Path) -> None:
    write(d / "util.py", CHECKSUM_PY)


def verify_run_code(d: Path, text: str) -> Verdict:
    space: dict = {}
    exec(compile((d / "util.py").read_text(), "util.py", "exec"), space)  # noqa: S102
    return has_number(text, space["checksum"]("artoo"), "checksum('artoo')")


def prepare_date_span(d: Path) -> None:
    rng = _rng("date-span")
    start = dt.date(2026, 1, 1)
    days = sorted(rng.sample(range(0, 300), 9))
    lines = [f"{start + dt.timedelta(days=n)}  release {i}" for i, n in enumerate(days)]
    rng.shuffle(lines)
    write(d / "events.txt", "\n".join(lines) + "\n")


def verify_date_span(d: Path, text: str) -> Verdict:
    dates = [
        dt.date.fromisoformat(line.split()[0])
        for line in (d / "events.txt").read_text().splitlines()
    ]
    return has_number(text, (max(dates) - min(dates)).days, "days between")


# Effects on named files ----------------------------------------------------------


def prepare_line_report(d: Path) -> None:
    rng = _rng("line-report")
    for name in ("alpha", "beta", "gamma", "delta"):
        lines = [f"{name} note {n}" for n in range(rng.randint(3, 30))]
        write(d / "notes" / f"{name}.txt", "\n".join(lines) + "\n")


def verify_line_report(d: Path, text: str) -> Verdict:
    report = d / "report.txt"
    if not report.is_file():
        return Verdict(False, "report.txt was never written")
    content = report.read_text()
    missing = []
    for path in sorted((d / "notes").glob("*.txt")):
        count = len(path.read_text().splitlines())
        line = next((ln for ln in content.splitlines() if path.stem in ln), "")
        if count not in [int(n) for n in numbers_in(line)]:
            missing.append(f"{path.stem}={count}")
    ok = not missing
    return Verdict(
        ok,
        "report.txt lists each note's line count"
        + (f"; wrong or missing: {', '.join(missing)}" if missing else ""),
    )


APP_CONF = """\
# billing service
listen = 0.0.0.0:8080
log_level = info
workers = 4
"""


def prepare_edit_config(d: Path) -> None:
    write(d / "app.conf", APP_CONF)


def verify_edit_config(d: Path, text: str) -> Verdict:
    expected = APP_CONF.replace("log_level = info", "log_level = debug")
    got = (d / "app.conf").read_text()
    ok = got.split() == expected.split()
    return Verdict(ok, "app.conf has log_level = debug and its other lines unchanged")


def prepare_rename_photos(d: Path) -> None:
    for n in range(1, 6):
        write(d / "photos" / f"trip-{n}.jpeg", f"image {n}\n")
    write(d / "photos" / "notes.txt", "keep this name\n")


def verify_rename_photos(d: Path, text: str) -> Verdict:
    names = {p.name for p in (d / "photos").iterdir()}
    wanted = {f"trip-{n}.jpg" for n in range(1, 6)} | {"notes.txt"}
    ok = names == wanted and all(
        (d / "photos" / f"trip-{n}.jpg").read_text() == f"image {n}\n"
        for n in range(1, 6)
    )
    return Verdict(ok, f"photos holds {sorted(wanted)}; found {sorted(names)}")


def prepare_archive(d: Path) -> None:
    write(d / "site" / "index.html", "<h1>home</h1>\n")
    write(d / "site" / "css" / "main.css", "body { margin: 0 }\n")
    write(d / "site" / "img" / "logo.svg", "<svg/>\n")


def verify_archive(d: Path, text: str) -> Verdict:
    path = d / "site.tar.gz"
    try:
        with tarfile.open(path, "r:gz") as archive:
            members = {m.name.lstrip("./") for m in archive.getmembers() if m.isfile()}
    except (OSError, tarfile.TarError) as err:
        return Verdict(False, f"site.tar.gz is not a readable gzip tar: {err}")
    wanted = {"index.html", "css/main.css", "img/logo.svg"}
    found = {m.split("site/", 1)[-1] for m in members}
    return Verdict(wanted <= found, f"site.tar.gz holds {sorted(found)}")


HELDOUT = [
    Task(
        "busy-users",
        "answer",
        "Which users made more than 3 requests according to {dir}/access.log?",
        prepare_busy_users,
        verify_busy_users,
    ),
    Task(
        "empty-files",
        "answer",
        "List the empty files in {dir}/data.",
        prepare_empty_files,
        verify_empty_files,
    ),
    Task(
        "distinct-ips",
        "answer",
        "How many different client IP addresses appear in {dir}/web.log?",
        prepare_distinct_ips,
        verify_distinct_ips,
    ),
    Task(
        "debug-flag",
        "answer",
        "Is debug logging turned on in {dir}/settings.json? Answer yes or no.",
        prepare_debug_flag,
        verify_debug_flag,
    ),
    Task(
        "newest-backup",
        "answer",
        "Which file in {dir}/backups was modified most recently?",
        prepare_newest_backup,
        verify_newest_backup,
    ),
    Task(
        "top-revenue",
        "answer",
        "In {dir}/sales.csv, which product brought in the most money in total "
        "(quantity times unit price)?",
        prepare_top_revenue,
        verify_top_revenue,
    ),
    Task(
        "run-code",
        "answer",
        "What does checksum('artoo') return, using the function in {dir}/util.py?",
        prepare_run_code,
        verify_run_code,
    ),
    Task(
        "date-span",
        "answer",
        "How many days lie between the earliest and the latest date in "
        "{dir}/events.txt?",
        prepare_date_span,
        verify_date_span,
    ),
    Task(
        "line-report",
        "action",
        "Write a file {dir}/report.txt that gives, for each .txt file in "
        "{dir}/notes, its name and its number of lines, one file per line.",
        prepare_line_report,
        verify_line_report,
        writable=True,
    ),
    Task(
        "edit-config",
        "action",
        "In {dir}/app.conf, change the log level from info to debug.",
        prepare_edit_config,
        verify_edit_config,
        approvals="approve",
        writable=True,
    ),
    Task(
        "rename-photos",
        "action",
        "Rename every .jpeg file in {dir}/photos so it ends in .jpg instead.",
        prepare_rename_photos,
        verify_rename_photos,
        approvals="approve",
        writable=True,
    ),
    Task(
        "archive-site",
        "action",
        "Pack the directory {dir}/site into a gzip-compressed tar archive "
        "{dir}/site.tar.gz.",
        prepare_archive,
        verify_archive,
        writable=True,
    ),
]
