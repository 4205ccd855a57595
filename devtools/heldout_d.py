"""A fourth held-out set: extremes, written without reading the rules they measure.

Like ``devtools/heldout_b.py`` and ``devtools/heldout_c.py`` these tasks are
never tuned on and were written without opening ``roles/`` or ``memory/``.
Each asks for the one item of a listing that comes first by an ordering key,
and the answer is that item by name: the file of a directory modified longest
ago, the biggest file of a tree in bytes, the log with the most lines, the
smallest file that is not empty, the report edited last, and the host with
the most memory.

The plausible wrong answers are in the data: the first item by every other
key is another one. The file modified longest ago is neither the smallest,
the first by name nor the one whose name carries the earliest date; the
biggest file of the tree has not the most lines, is not the newest and is
not at the top level; the log with the most lines is not the largest in
bytes; the smallest non-empty file is not the first by name, the oldest or
the one of fewest lines, and empty files are smaller; the report edited last
is neither the largest nor the one whose name carries the latest month; the
host with the most memory is not the first by its memory read as text or as
a number without its unit, nor the one of the largest or the newest file. The
last item by name (the one ``ls`` lists last) is never the answer. Every
verifier works out the item from the generated files and refuses an answer
that names any other item of the listing.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import re
from pathlib import Path

from devtools.heldout import names_verdict
from devtools.tasks import Task, Verdict, line_count, write

SEED = 20270115
WORDS = (
    "harbour ledger copper basin willow signal quarry meadow lantern cobalt "
    "thistle orchard ember falcon granite saffron tundra beacon marble juniper"
).split()
DAY = 86_400


def _rng(name: str) -> random.Random:
    return random.Random(f"{SEED}-{name}")


def _one(items: set[str], best: str, text: str, what: str) -> Verdict:
    """Return whether ``text`` names ``best`` and no other item of the listing."""
    return names_verdict(text, {best}, items - {best}, what)


def _line(rng: random.Random, width: int) -> str:
    words: list[str] = []
    while len(" ".join(words)) < width:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:width]


def _lines(rng: random.Random, count: int, width: int) -> str:
    """Return ``count`` lines of ``width`` characters each, with their newlines."""
    return "".join(_line(rng, width) + "\n" for _ in range(count))


def _stamp(path: Path, when: float) -> None:
    os.utime(path, (when, when))


def _noon(day: dt.date) -> float:
    return dt.datetime(day.year, day.month, day.day, 12, 0).timestamp()


# The file modified longest ago --------------------------------------------------

SCANS = {
    "bank-statement": dt.date(2026, 1, 20),
    "contract": dt.date(2026, 2, 11),
    "invoice": dt.date(2025, 12, 3),
    "lease": dt.date(2026, 3, 2),
    "payslip": dt.date(2026, 1, 31),
    "receipt": dt.date(2025, 10, 30),
    "tax-return": dt.date(2026, 4, 9),
    "warranty": dt.date(2025, 11, 18),
}


def _scan_name(kind: str) -> str:
    return f"{kind}-{SCANS[kind]}.txt"


def prepare_stale_scan(d: Path) -> None:
    rng = _rng("stale-scan")
    # Neither the first nor the last by name, nor the earliest date in a name.
    stale, smallest = rng.sample(["contract", "invoice", "lease", "payslip"], 2)
    first = _noon(SCANS[stale]) + rng.randint(1, 5) * DAY + rng.randint(0, 3600)
    for kind, day in SCANS.items():
        path = d / "scans" / _scan_name(kind)
        count = rng.randint(6, 10) if kind == smallest else rng.randint(25, 150)
        write(path, f"scanned: {kind}\n" + _lines(rng, count, 60))
        # Scanned after the date in its name, and after the stale one.
        later = max(_noon(day), first) + rng.randint(3, 60) * DAY
        _stamp(path, first if kind == stale else later + rng.randint(0, DAY))


def verify_stale_scan(d: Path, text: str) -> Verdict:
    files = {p.name: p.stat().st_mtime for p in (d / "scans").iterdir()}
    stale = min(files, key=files.get)
    return _one(set(files), stale, text, "the file modified longest ago")


# The biggest file of a tree ---------------------------------------------------------

# Each file's place under uploads/, and its lines and their width: few long
# lines for the biggest, many short ones for the file of most lines (width 0:
# the click table's rows, a dozen bytes each).
UPLOADS = {
    "catalogue.json": ((800, 1100), 80),
    "readme.txt": ((10, 20), 60),
    "video/raw/interview-take3.mov": ((34, 44), 7999),
    "video/trailer-cut.mp4": ((20, 30), 7999),
    "images/wallpaper-4k.png": ((22, 30), 7999),
    "images/logo.svg": ((15, 25), 70),
    "exports/clicks.tsv": ((9000, 12000), 0),
    "docs/annual-report.pdf": ((150, 200), 399),
    "thumbs/t-0193.jpg": ((4, 8), 999),
    "thumbs/t-0194.jpg": ((4, 8), 999),
}
NEWEST_UPLOAD = "thumbs/t-0194.jpg"


def _clicks(rng: random.Random, count: int) -> str:
    return "".join(
        f"{rng.randint(100_000, 999_999)}\t{rng.randint(0, 99)}\n" for _ in range(count)
    )


def prepare_disk_hog(d: Path) -> None:
    rng = _rng("disk-hog")
    stamps = sorted(rng.sample(range(1, 90), len(UPLOADS)))
    newest = stamps.pop()
    rng.shuffle(stamps)
    base = dt.datetime(2026, 8, 3, 9, 0).timestamp()
    for place, ((low, high), width) in UPLOADS.items():
        path = d / "uploads" / place
        count = rng.randint(low, high)
        write(path, _lines(rng, count, width) if width else _clicks(rng, count))
        day = newest if place == NEWEST_UPLOAD else stamps.pop()
        _stamp(path, base + day * DAY + rng.randint(0, DAY - 1))


def verify_disk_hog(d: Path, text: str) -> Verdict:
    files = {
        p.name: p.stat().st_size for p in (d / "uploads").rglob("*") if p.is_file()
    }
    biggest = max(files, key=files.get)
    return _one(set(files), biggest, text, "the biggest file in bytes")


# The log with the most lines -------------------------------------------------------

LOGS = (
    "api.log",
    "auth.log",
    "billing.log",
    "cron.log",
    "mailer.log",
    "queue.log",
    "search.log",
    "worker.log",
)
LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")


def _log(rng: random.Random, name: str, count: int, width: tuple[int, int]) -> str:
    at = dt.datetime(2026, 11, 20, 0, 0, 0)
    lines = []
    for _ in range(count):
        at += dt.timedelta(seconds=rng.randint(1, 30))
        head = f"{at:%Y-%m-%dT%H:%M:%SZ} {rng.choice(LEVELS)} {name[:-4]}: "
        lines.append(head + _line(rng, rng.randint(*width) - len(head)))
    return "\n".join(lines) + "\n"


def prepare_chattiest_log(d: Path) -> None:
    rng = _rng("chattiest-log")
    # Not the last by name; the largest in bytes has fewer, longer lines.
    most, heaviest, newest = rng.sample(LOGS[:-1], 3)
    stamps = sorted(rng.sample(range(0, 6 * 3600), len(LOGS)))
    last = stamps.pop()
    rng.shuffle(stamps)
    base = dt.datetime(2026, 11, 21, 0, 0).timestamp()
    for name in LOGS:
        if name == most:
            count, width = rng.randint(2400, 2800), (36, 48)
        elif name == heaviest:
            count, width = rng.randint(700, 900), (400, 520)
        else:
            count, width = rng.randint(300, 2000), (40, 90)
        path = d / "logs" / name
        write(path, _log(rng, name, count, width))
        _stamp(path, base + (last if name == newest else stamps.pop()))


def verify_chattiest_log(d: Path, text: str) -> Verdict:
    lines = {p.name: line_count(p) for p in (d / "logs").glob("*.log")}
    most = max(lines, key=lines.get)
    return _one(set(lines), most, text, "the log with the most lines")


# The smallest file that is not empty -----------------------------------------------

ADDRESSES = ("ana@example.org", "ops@example.org", "mei@example.net", "li@example.com")


def _message(rng: random.Random, n: int) -> str:
    headers = [
        "From: billing@example.com",
        f"To: {rng.choice(ADDRESSES)}",
        f"Subject: {_line(rng, rng.randint(12, 30))}",
        f"Date: Tue, {rng.randint(1, 28)} Oct 2026 0{rng.randint(1, 9)}:15:00 +0000",
        f"Message-ID: <{n}.{rng.randint(10_000, 99_999)}@mx.example.com>",
    ]
    return "\n".join(headers) + "\n\n" + _lines(rng, rng.randint(3, 20), 60)


def prepare_tiniest_message(d: Path) -> None:
    rng = _rng("tiniest-message")
    ids = sorted(rng.sample(range(1000, 9999), 12))
    # The first by name is empty, and two more are; the last is not.
    empty = {ids[0], *rng.sample(ids[2:-1], 2)}
    full = [n for n in ids if n not in empty]
    # Neither the first nor the last by name of the files that are not empty.
    tiniest, one_line, oldest = rng.sample(full[1:-1], 3)
    stamps = sorted(rng.sample(range(0, 40 * 24), len(ids)))
    first = stamps.pop(0)
    rng.shuffle(stamps)
    base = dt.datetime(2026, 10, 1, 0, 0).timestamp()
    for n in ids:
        if n in empty:
            body = ""
        elif n == tiniest:
            body = f"To: {rng.choice(ADDRESSES)}\nSubject: ok\n"
        elif n == one_line:
            body = "Subject: " + _line(rng, rng.randint(120, 170)) + "\n"
        else:
            body = _message(rng, n)
        path = d / "spool" / "outgoing" / f"msg-{n}.eml"
        write(path, body)
        hour = first if n == oldest else stamps.pop()
        _stamp(path, base + hour * 3600 + rng.randint(0, 3599))


def verify_tiniest_message(d: Path, text: str) -> Verdict:
    files = {p.name: p.stat().st_size for p in (d / "spool" / "outgoing").iterdir()}
    full = {name: size for name, size in files.items() if size}
    tiniest = min(full, key=full.get)
    return _one(set(files), tiniest, text, "the smallest non-empty file")


# The report edited last --------------------------------------------------------------

REPORTS = {
    "board-pack": dt.date(2026, 3, 1),
    "finance": dt.date(2026, 2, 1),
    "hiring-plan": dt.date(2026, 6, 1),
    "incidents": dt.date(2026, 4, 1),
    "marketing": dt.date(2026, 1, 1),
    "roadmap": dt.date(2026, 5, 1),
    "sales": dt.date(2026, 3, 1),
    "weekly-ops": dt.date(2026, 4, 1),
}


def _report_name(topic: str) -> str:
    return f"{topic}-{REPORTS[topic]:%Y-%m}.md"


def prepare_last_edited_report(d: Path) -> None:
    rng = _rng("last-edited-report")
    # Neither the last by name nor the latest month in a name.
    picks = [t for t in REPORTS if t not in ("hiring-plan", "weekly-ops")]
    edited, largest = rng.sample(picks, 2)
    # Each written in the month after the one it is for; one corrected later.
    stamps = {
        topic: _noon(month) + rng.randint(31, 60) * DAY + rng.randint(0, DAY - 1)
        for topic, month in REPORTS.items()
    }
    stamps[edited] = max(stamps.values()) + rng.randint(1, 6) * DAY + 3600
    for topic in REPORTS:
        count = rng.randint(260, 320) if topic == largest else rng.randint(40, 200)
        title = topic.replace("-", " ").title()
        path = d / "reports" / _report_name(topic)
        write(path, f"# {title}, {REPORTS[topic]:%B %Y}\n\n" + _lines(rng, count, 70))
        _stamp(path, stamps[topic])


def verify_last_edited_report(d: Path, text: str) -> Verdict:
    files = {p.name: p.stat().st_mtime for p in (d / "reports").iterdir()}
    edited = max(files, key=files.get)
    return _one(set(files), edited, text, "the report edited last")


# The host with the most memory -------------------------------------------------------

HOSTS = (
    "batch-01",
    "cache-01",
    "ci-runner-01",
    "db-01",
    "db-02",
    "search-01",
    "web-01",
    "web-02",
    "web-03",
)
# The most, then the first as text ("8 GiB"), then the largest number read
# without its unit (48 GiB), then the rest.
MOST_MEMORY, TEXT_FIRST, NUMBER_FIRST = "64 GiB", "8 GiB", "49152 MiB"
OTHER_MEMORY = ("32 GiB", "16 GiB", "12288 MiB", "4 GiB", "2048 MiB", "512 MiB")
MEMORY = re.compile(r"^memory:\s*(\d+)\s*(MiB|GiB)\s*$", re.M)
CPUS = (
    "AMD EPYC 7313",
    "Intel Xeon Silver 4314",
    "AMD EPYC 9124",
    "Intel Xeon E-2388G",
)


def _hardware(rng: random.Random, host: str, memory: str, disks: int) -> str:
    lines = [
        f"# {host}: collected by facts-sync",
        f"hostname: {host}",
        "cpu:",
        f"  model: {rng.choice(CPUS)}",
        f"  cores: {rng.choice((4, 8, 16, 24, 32))}",
        f"memory: {memory}",
        "disks:",
    ]
    for n in range(disks):
        lines += [
            f"  - device: /dev/sd{chr(ord('a') + n)}",
            f"    size: {rng.choice((480, 960, 1920, 3840))} GB",
        ]
    return "\n".join(lines) + "\n"


def prepare_roomiest_host(d: Path) -> None:
    rng = _rng("roomiest-host")
    # None of them the last by name, each a different host.
    most, text_first, number_first, biggest, newest = rng.sample(HOSTS[:-1], 5)
    rest = list(OTHER_MEMORY)
    rng.shuffle(rest)
    memory = {most: MOST_MEMORY, text_first: TEXT_FIRST, number_first: NUMBER_FIRST}
    memory |= {h: rest.pop() for h in HOSTS if h not in memory}
    stamps = sorted(rng.sample(range(1, 120), len(HOSTS)))
    last = stamps.pop()
    rng.shuffle(stamps)
    base = dt.datetime(2026, 7, 1, 6, 0).timestamp()
    for host in HOSTS:
        disks = rng.randint(14, 18) if host == biggest else rng.randint(1, 3)
        path = d / "inventory" / host / "hardware.yaml"
        write(path, _hardware(rng, host, memory[host], disks))
        when = base + (last if host == newest else stamps.pop()) * DAY
        _stamp(path, when)
        _stamp(path.parent, when)


def verify_roomiest_host(d: Path, text: str) -> Verdict:
    mib = {}
    for path in (d / "inventory").glob("*/hardware.yaml"):
        amount, unit = MEMORY.search(path.read_text()).groups()
        mib[path.parent.name] = int(amount) * (1024 if unit == "GiB" else 1)
    most = max(mib, key=mib.get)
    return _one(set(mib), most, text, "the host with the most memory")


HELDOUT_D = [
    Task(
        "stale-scan",
        "answer",
        "Of the files in {dir}/scans, which one has gone the longest without "
        "being modified?",
        prepare_stale_scan,
        verify_stale_scan,
    ),
    Task(
        "disk-hog",
        "answer",
        "Something under {dir}/uploads is eating the disk. Which single file in "
        "that tree, subfolders included, is the biggest in bytes?",
        prepare_disk_hog,
        verify_disk_hog,
    ),
    Task(
        "chattiest-log",
        "answer",
        "Among the .log files in {dir}/logs, which one has the most lines?",
        prepare_chattiest_log,
        verify_chattiest_log,
    ),
    Task(
        "tiniest-message",
        "answer",
        "Ignoring the empty ones, which file in {dir}/spool/outgoing is the smallest?",
        prepare_tiniest_message,
        verify_tiniest_message,
    ),
    Task(
        "last-edited-report",
        "answer",
        "Which of the reports in {dir}/reports did someone edit last?",
        prepare_last_edited_report,
        verify_last_edited_report,
    ),
    Task(
        "roomiest-host",
        "answer",
        "Which host in {dir}/inventory has the most memory? Each host has a "
        "folder there with a hardware.yaml whose memory line is in MiB or GiB "
        "(1 GiB = 1024 MiB).",
        prepare_roomiest_host,
        verify_roomiest_host,
    ),
]
