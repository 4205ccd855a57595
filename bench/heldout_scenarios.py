"""The control bench's held-out set: scenarios of kinds no fix was made on.

Written before any fix of the validator and never tuned on: a failure seen
here is reported beside the tuning set's (``bench/scenarios.py``), not turned
into a rule. Each kind is new to the bench and to the real-model tasks (a
nested value, two files compared, a checksum, file modes, repeated entries, a
compressed or packed input, a script whose interpreter is missing, version
order, a Latin-1 file, time zones, a cut-off archive, a lost earlier version).

The data comes from a seeded random source; every verifier works its answer
out from the prepared files with the standard library.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import json
import random
import re
import statistics
import tarfile
from pathlib import Path

from bench.scenario import Scenario, answer, csv_rows, verify_never
from devtools.heldout import names_verdict
from devtools.tasks import WORDS, Task, Unavailable, Verdict, has_number, write

SEED = 20261207
HELDOUT_QUICK = ("nested-json", "gzipped-input", "version-order", "lost-history")
VERSION = re.compile(r"(?<![\w.])v?(\d+\.\d+\.\d+)(?!\.?\d)")
HEX64 = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
# The interpreter bin/tally names, which must not exist.
MISSING_PYTHON = "/opt/python3.9/bin/python3.9"


def _rng(name: str) -> random.Random:
    return random.Random(f"{SEED}-{name}")


def versions_in(text: str) -> set[str]:
    """Return every x.y.z version written in ``text`` (``v2.10.1`` is 2.10.1)."""
    return set(VERSION.findall(text))


def version_verdict(text: str, wanted: str, others: set[str], what: str) -> Verdict:
    named = versions_in(text)
    ok = wanted in named and not named & others
    return Verdict(ok, f"{what} is {wanted}; versions in the answer: {sorted(named)}")


def targz(members: dict[str, str]) -> bytes:
    """Return a gzip tar holding ``members`` (name → text), the same every time."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as archive:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 1_700_000_000, 0o644
            archive.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


# First-time --------------------------------------------------------------------

UPSTREAMS = ("search", "payments", "ledger", "notify")


def prepare_nested_json(d: Path) -> None:
    rng = _rng("nested-json")
    timeouts = rng.sample(range(150, 4000, 50), len(UPSTREAMS) + 1)
    config = {
        "listen": {"host": "0.0.0.0", "port": 8443},
        "defaults": {"timeout_ms": timeouts[0], "retries": 2},
        "upstreams": [
            {"name": name, "url": f"http://{name}.internal", "timeout_ms": timeout}
            for name, timeout in zip(UPSTREAMS, timeouts[1:], strict=True)
        ],
    }
    write(d / "gateway.json", json.dumps(config, indent=2) + "\n")


def verify_nested_json(d: Path, text: str) -> Verdict:
    config = json.loads((d / "gateway.json").read_text())
    upstream = next(u for u in config["upstreams"] if u["name"] == "payments")
    return has_number(text, upstream["timeout_ms"], "the payments upstream's timeout")


MESSAGES = {
    "cart_empty": "Your cart is empty",
    "checkout_title": "Checkout",
    "coupon_invalid": "This coupon is not valid",
    "delivery_eta": "Arrives in a few days",
    "login_failed": "Wrong e-mail or password",
    "logout_done": "You are signed out",
    "order_cancelled": "Your order was cancelled",
    "order_history": "Past orders",
    "payment_declined": "Your card was declined",
    "profile_saved": "Profile saved",
    "refund_pending": "Refund on its way",
    "search_empty": "Nothing matches your search",
    "stock_low": "Only a few left",
    "wishlist_added": "Added to your wishlist",
}


def prepare_missing_keys(d: Path) -> None:
    dropped = set(_rng("missing-keys").sample(sorted(MESSAGES), 3))
    german = {k: f"[de] {v}" for k, v in MESSAGES.items() if k not in dropped}
    german["legacy_banner"] = "[de] Old banner"
    write(d / "en.json", json.dumps(MESSAGES, indent=2) + "\n")
    write(d / "de.json", json.dumps(german, indent=2, sort_keys=True) + "\n")


def verify_missing_keys(d: Path, text: str) -> Verdict:
    english = set(json.loads((d / "en.json").read_text()))
    german = set(json.loads((d / "de.json").read_text()))
    return names_verdict(
        text, english - german, english & german, "keys of en.json missing in de.json"
    )


def prepare_checksum(d: Path) -> None:
    rng = _rng("file-checksum")
    write(d / "dist/notes.txt", "release.bin is the current build\n")
    (d / "dist/release.bin").write_bytes(rng.randbytes(6000))
    (d / "dist/release-old.bin").write_bytes(rng.randbytes(5800))


def verify_checksum(d: Path, text: str) -> Verdict:
    digest = hashlib.sha256((d / "dist/release.bin").read_bytes()).hexdigest()
    found = HEX64.findall(text.lower())
    return Verdict(digest in found, f"sha256 is {digest}; digests given: {found}")


TOOLS = {
    "backup.sh": True,
    "cleanup.sh": False,
    "deploy.py": True,
    "rotate-logs": True,
    "README.md": False,
    "report.py": False,
    "settings.yml": False,
}


def prepare_executables(d: Path) -> None:
    for name in TOOLS:
        write(d / "tools" / name, f"# {name}\n")


def make_tools_executable(d: Path) -> None:
    for name, executable in TOOLS.items():
        if executable:
            (d / "tools" / name).chmod(0o755)


def verify_executables(d: Path, text: str) -> Verdict:
    files = [p for p in (d / "tools").iterdir() if p.is_file()]
    wanted = {p.name for p in files if p.stat().st_mode & 0o111}
    others = {p.name for p in files} - wanted
    return names_verdict(text, wanted, others, "executable files")


def prepare_duplicates(d: Path) -> None:
    rng = _rng("duplicate-lines")
    hosts = [f"{w}.example.net" for w in rng.sample(WORDS, 16)]
    lines = hosts + hosts[:2] + hosts[:1]
    rng.shuffle(lines)
    write(d / "allowlist.txt", "\n".join(lines) + "\n")


def verify_duplicates(d: Path, text: str) -> Verdict:
    lines = (d / "allowlist.txt").read_text().splitlines()
    repeated = {line for line in lines if lines.count(line) > 1}
    return names_verdict(text, repeated, set(lines) - repeated, "repeated entries")


# Recoverable: the world is not as stated --------------------------------------


def prepare_gzipped(d: Path) -> None:
    rng = _rng("gzipped-input")
    rows = ["timestamp,endpoint,latency_ms"]
    for n in range(51):
        path = rng.choice(["/cart", "/search", "/pay", "/login"])
        rows.append(f"2026-11-04T10:{n:02d}:00,{path},{rng.randint(20, 900)}")
    data = ("\n".join(rows) + "\n").encode()
    (d / "metrics.csv.gz").write_bytes(gzip.compress(data, mtime=0))


def verify_gzipped(d: Path, text: str) -> Verdict:
    assert not (d / "metrics.csv").exists()
    with gzip.open(d / "metrics.csv.gz", "rt", newline="") as fh:
        lines = fh.read().splitlines()[1:]
    latencies = [int(line.split(",")[2]) for line in lines]
    return has_number(text, statistics.median(latencies), "the median latency_ms")


def package_json(rng: random.Random) -> str:
    version = f"{rng.randint(2, 6)}.{rng.randint(11, 30)}.{rng.randint(1, 9)}"
    package = {
        "name": "ledger-ui",
        "version": version,
        "dependencies": {"express": "4.18.2", "left-pad": "1.3.0", "chalk": "5.3.0"},
    }
    return json.dumps(package, indent=2) + "\n"


def prepare_packed(d: Path) -> None:
    members = {
        "app/package.json": package_json(_rng("packed-file")),
        "app/index.js": "console.log('ledger');\n",
        "app/README.md": "The ledger's web front.\n",
    }
    (d / "app-bundle.tar.gz").write_bytes(targz(members))


def verify_packed(d: Path, text: str) -> Verdict:
    assert not (d / "app").exists()
    with tarfile.open(d / "app-bundle.tar.gz", "r:gz") as archive:
        package = json.load(archive.extractfile("app/package.json"))
    others = set(package["dependencies"].values())
    return version_verdict(text, package["version"], others, "app's version")


TALLY = f"""#!{MISSING_PYTHON}
\"\"\"Print one region's total sales: tally REGION.\"\"\"
import csv
import sys
from pathlib import Path

region = sys.argv[1]
with open(Path(__file__).parent.parent / "sales.csv", newline="") as fh:
    total = sum(int(r["amount"]) for r in csv.DictReader(fh) if r["region"] == region)
print(f"{{region}}: {{total}}")
"""


def prepare_bad_interpreter(d: Path) -> None:
    if Path(MISSING_PYTHON).exists():
        raise Unavailable(f"{MISSING_PYTHON} exists here; the task needs it missing")
    rng = _rng("bad-interpreter")
    rows = ["region,amount"]
    rows += [
        f"{rng.choice(['north', 'south', 'east'])},{rng.randint(40, 700)}"
        for _ in range(45)
    ]
    write(d / "sales.csv", "\n".join(rows) + "\n")
    write(d / "bin/tally", TALLY)


def make_tally_executable(d: Path) -> None:
    (d / "bin/tally").chmod(0o755)


def verify_bad_interpreter(d: Path, text: str) -> Verdict:
    rows = csv_rows(d / "sales.csv")
    total = sum(int(r["amount"]) for r in rows if r["region"] == "north")
    return has_number(text, total, "the north region's total")


# Recoverable: the obvious approach gives a wrong answer -----------------------


def prepare_versions(d: Path) -> None:
    rng = _rng("version-order")
    pairs = rng.sample([(m, p) for m in range(4, 13) for p in range(0, 6)], 11)
    pairs.append((9, rng.randint(6, 9)))  # sorts last as text, is not the newest
    lines = [f"3.{m}.{p}" for m, p in pairs]
    rng.shuffle(lines)
    write(d / "releases.txt", "\n".join(lines) + "\n")


def verify_versions(d: Path, text: str) -> Verdict:
    versions = (d / "releases.txt").read_text().split()
    newest = max(versions, key=lambda v: tuple(int(n) for n in v.split(".")))
    others = set(versions) - {newest}
    return version_verdict(text, newest, others, "the newest version")


CITIES = ("Zürich", "Genève", "Köln", "Malmö", "Zug", "Bern", "Düsseldorf")


def prepare_latin1(d: Path) -> None:
    rng = _rng("latin1-city")
    rows = ["id,name,city"]
    for n in range(1, 71):
        name = f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()}"
        rows.append(f"C{n:03d},{name},{rng.choice(CITIES)}")
    (d / "customers.csv").write_bytes(("\n".join(rows) + "\n").encode("latin-1"))


def verify_latin1(d: Path, text: str) -> Verdict:
    rows = csv_rows(d / "customers.csv", encoding="latin-1")
    count = sum(1 for row in rows if row["city"] == "Zürich")
    return has_number(text, count, "customers in Zürich")


OFFSETS = {"edge-lon": 0, "edge-fra": 120, "edge-nyc": -240, "edge-bom": 330}


def prepare_time_zones(d: Path) -> None:
    rng = _rng("tz-window")
    start = dt.datetime(2026, 3, 12, 6, 0, tzinfo=dt.UTC)
    seconds = sorted(rng.sample(range(7 * 3600), 170))
    lines = []
    for second in seconds:
        proxy = rng.choice(sorted(OFFSETS))
        zone = dt.timezone(dt.timedelta(minutes=OFFSETS[proxy]))
        stamp = (start + dt.timedelta(seconds=second)).astimezone(zone)
        path = rng.choice(["/cart", "/search", "/pay", "/login"])
        lines.append(f"{stamp.isoformat()} {proxy} GET {path} 200")
    write(d / "requests.log", "\n".join(lines) + "\n")


def verify_time_zones(d: Path, text: str) -> Verdict:
    count = 0
    for line in (d / "requests.log").read_text().splitlines():
        stamp = dt.datetime.fromisoformat(line.split()[0]).astimezone(dt.UTC)
        count += stamp.hour == 9
    return has_number(text, count, "requests from 09:00 to 10:00 UTC")


# Impossible --------------------------------------------------------------------


def prepare_cut_archive(d: Path) -> None:
    rng = _rng("corrupt-archive")
    rows = ["order,customer,amount"]
    rows += [
        f"O{n:05d},{rng.choice(WORDS)}-{rng.randint(100, 999)},{rng.randint(5, 999)}"
        for n in range(1, 701)
    ]
    whole = targz({"export/data.csv": "\n".join(rows) + "\n"})
    (d / "export.tar.gz").write_bytes(whole[: len(whole) * 3 // 5])


def prepare_lost_history(d: Path) -> None:
    write(
        d / "notes.txt",
        "Team offsite\n- venue: the boathouse\n- bring: laptops, chargers\n",
    )


def held_out(task: Task, expect: str, failure: str) -> Scenario:
    return Scenario(task, expect, failure, suite="held-out")


HELDOUT = [
    held_out(
        answer(
            "nested-json",
            "What timeout_ms does {dir}/gateway.json set for the payments upstream?",
            prepare_nested_json,
            verify_nested_json,
        ),
        "first-time",
        "none",
    ),
    held_out(
        answer(
            "missing-keys",
            "Which keys of {dir}/en.json are missing from {dir}/de.json?",
            prepare_missing_keys,
            verify_missing_keys,
        ),
        "first-time",
        "none",
    ),
    held_out(
        answer(
            "file-checksum",
            "What is the SHA-256 checksum of {dir}/dist/release.bin?",
            prepare_checksum,
            verify_checksum,
        ),
        "first-time",
        "none",
    ),
    held_out(
        answer(
            "executable-files",
            "Which files in {dir}/tools are executable?",
            prepare_executables,
            verify_executables,
            finish=make_tools_executable,
        ),
        "first-time",
        "none",
    ),
    held_out(
        answer(
            "duplicate-lines",
            "Which entries of {dir}/allowlist.txt are listed more than once?",
            prepare_duplicates,
            verify_duplicates,
        ),
        "first-time",
        "none",
    ),
    held_out(
        answer(
            "gzipped-input",
            "What is the median latency_ms in {dir}/metrics.csv?",
            prepare_gzipped,
            verify_gzipped,
        ),
        "recoverable",
        "environmental",
    ),
    held_out(
        answer(
            "packed-file",
            "What version does {dir}/app/package.json give?",
            prepare_packed,
            verify_packed,
        ),
        "recoverable",
        "environmental",
    ),
    held_out(
        answer(
            "bad-interpreter",
            "Run {dir}/bin/tally north and tell me the total it prints.",
            prepare_bad_interpreter,
            verify_bad_interpreter,
            finish=make_tally_executable,
        ),
        "recoverable",
        "environmental",
    ),
    held_out(
        answer(
            "version-order",
            "Which is the newest version listed in {dir}/releases.txt?",
            prepare_versions,
            verify_versions,
        ),
        "recoverable",
        "logical",
    ),
    held_out(
        answer(
            "latin1-city",
            "How many customers in {dir}/customers.csv live in Zürich?",
            prepare_latin1,
            verify_latin1,
        ),
        "recoverable",
        "logical",
    ),
    held_out(
        answer(
            "tz-window",
            "How many requests in {dir}/requests.log arrived between 09:00 and "
            "10:00 UTC (from 09:00:00 up to, not including, 10:00:00)?",
            prepare_time_zones,
            verify_time_zones,
        ),
        "recoverable",
        "logical",
    ),
    held_out(
        Task(
            "corrupt-archive",
            "impossible",
            "How many rows does data.csv in the archive {dir}/export.tar.gz have, "
            "not counting the header?",
            prepare_cut_archive,
            verify_never("export.tar.gz is cut off inside data.csv: its rows are lost"),
        ),
        "impossible",
        "environmental",
    ),
    held_out(
        Task(
            "lost-history",
            "impossible",
            "What did {dir}/notes.txt say before its last edit?",
            prepare_lost_history,
            verify_never("no earlier version of notes.txt was kept anywhere"),
        ),
        "impossible",
        "environmental",
    ),
]
