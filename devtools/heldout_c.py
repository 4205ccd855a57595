"""A third held-out set: selections, written without reading the rules they measure.

Like ``devtools/heldout_b.py`` these tasks are never tuned on and were written
without opening ``roles/`` or ``memory/``. Each asks for the items of a
listing that have some property, and the answer is that subset by name:
the files of a directory above a size, the accounts of a passwd file with one
login shell, the scripts of a directory with no execute bit, the keys of an
INI file set to an empty value, the clients of an access log that had a 5xx
response, and the files of a tree that hold a word.

The plausible wrong answers are in the data: the whole listing, its
complement, and items with a near-miss property (a file of exactly the stated
size, ``nologin`` in a home directory rather than the shell, ``503`` as a byte
count, a commented-out key, ``refunds`` for ``refund``). Every verifier works
out the subset from the generated files and refuses an answer that misses one
of its items or names any other item of the listing.
"""

from __future__ import annotations

import configparser
import datetime as dt
import random
import re
from pathlib import Path

from devtools.heldout import names_verdict
from devtools.tasks import Task, Verdict, write

SEED = 20261231
SIZE_LIMIT = 65_536
NOLOGIN = "/usr/sbin/nologin"
WORD = "refund"


def _rng(name: str) -> random.Random:
    return random.Random(f"{SEED}-{name}")


def _select(items: set[str], wanted: set[str], text: str, what: str) -> Verdict:
    """Return whether ``text`` names the ``wanted`` items and no other ones."""
    return names_verdict(text, wanted, items - wanted, what)


# Files above a size ------------------------------------------------------------

EXPORTS = (
    "orders-march.csv",
    "orders-april.csv",
    "stock-levels.csv",
    "customers.json",
    "returns.json",
    "audit-trail.log",
    "payments.log",
    "price-list.txt",
    "carriers.txt",
    "invoices-q1.csv",
    "invoices-q2.csv",
    "warehouse-moves.log",
    "suppliers.json",
)


def _export_sizes(rng: random.Random) -> list[int]:
    # Around the limit on every side: exactly at it, a byte either way, under
    # it but over 64,000 (a "64 kB" read in thousands), well clear of it.
    return [
        SIZE_LIMIT,
        SIZE_LIMIT,
        SIZE_LIMIT - 1,
        SIZE_LIMIT + 1,
        rng.randint(64_001, SIZE_LIMIT - 2),
        rng.randint(64_001, SIZE_LIMIT - 2),
        rng.randint(SIZE_LIMIT + 2, 66_000),
        rng.randint(SIZE_LIMIT + 2, 66_000),
        rng.randint(900, 30_000),
        rng.randint(900, 30_000),
        rng.randint(30_000, 60_000),
        rng.randint(90_000, 300_000),
        rng.randint(90_000, 300_000),
    ]


def prepare_big_exports(d: Path) -> None:
    rng = _rng("big-exports")
    sizes = _export_sizes(rng)
    rng.shuffle(sizes)
    for name, size in zip(EXPORTS, sizes, strict=True):
        row = ",".join(str(rng.randint(0, 99_999)) for _ in range(6)) + "\n"
        write(d / "exports" / name, (row * (size // len(row) + 1))[:size])


def verify_big_exports(d: Path, text: str) -> Verdict:
    files = {p.name: p.stat().st_size for p in (d / "exports").iterdir()}
    wanted = {name for name, size in files.items() if size > SIZE_LIMIT}
    return _select(set(files), wanted, text, f"files over {SIZE_LIMIT} bytes")


# Accounts with one login shell ---------------------------------------------------

SERVICES = (
    "sshd",
    "postfix",
    "redis",
    "nginx",
    "prometheus",
    "grafana",
    "_chrony",
    "dnsmasq",
    "gitlab-runner",
    "www-data",
)
PEOPLE = ("mkowalski", "arojas", "tnguyen", "lbianchi", "svolkova", "dokafor")


def _service_shells(rng: random.Random) -> list[str]:
    shells = [NOLOGIN] * 6 + ["/bin/false", "/bin/false", "/bin/sh", "/bin/bash"]
    rng.shuffle(shells)
    return shells


def _people_shells(rng: random.Random) -> list[str]:
    # One person has left: their account is shut the way a service's is.
    shells = [NOLOGIN, "/bin/bash", "/bin/bash", "/usr/bin/zsh", "/usr/bin/fish"]
    shells.append(rng.choice(("/bin/bash", "/usr/bin/zsh")))
    rng.shuffle(shells)
    return shells


def prepare_nologin_accounts(d: Path) -> None:
    rng = _rng("nologin-accounts")
    lines = []
    for n, (user, shell) in enumerate(zip(SERVICES, _service_shells(rng), strict=True)):
        uid = 100 + 3 * n + rng.randint(0, 2)
        home = "/nonexistent" if shell == NOLOGIN else f"/var/lib/{user.strip('_')}"
        lines.append(f"{user}:x:{uid}:{uid}:{user} daemon:{home}:{shell}")
    for n, (user, shell) in enumerate(zip(PEOPLE, _people_shells(rng), strict=True)):
        uid = 1001 + n
        lines.append(f"{user}:x:{uid}:{uid}:{user.title()},,,:/home/{user}:{shell}")
    # The word in a home directory, not in the shell.
    lines.append("exporter:x:998:998:Nightly export:/var/lib/nologin-exports:/bin/sh")
    rng.shuffle(lines)
    write(d / "etc" / "passwd", "\n".join(lines) + "\n")


def verify_nologin_accounts(d: Path, text: str) -> Verdict:
    rows = [ln.split(":") for ln in (d / "etc" / "passwd").read_text().splitlines()]
    shells = {row[0]: row[6] for row in rows}
    wanted = {user for user, shell in shells.items() if shell == NOLOGIN}
    return _select(set(shells), wanted, text, f"accounts with shell {NOLOGIN}")


# Scripts with no execute bit ------------------------------------------------------

SCRIPTS = (
    "deploy-web.sh",
    "rotate-logs.sh",
    "sync-assets",
    "healthcheck.sh",
    "build-docs",
    "purge-cdn",
    "migrate-db.py",
    "notify-chat",
    "seed-fixtures.rb",
    "renew-certs.sh",
    "prune-images",
)
RUNNABLE = (0o755, 0o775, 0o555)
NOT_RUNNABLE = (0o644, 0o664, 0o444)


def _script_modes(rng: random.Random) -> dict[str, int]:
    names = list(SCRIPTS)
    rng.shuffle(names)
    stuck = rng.randint(3, 5)
    modes = {name: rng.choice(NOT_RUNNABLE) for name in names[:stuck]}
    modes |= {name: rng.choice(RUNNABLE) for name in names[stuck:]}
    return modes


def _interpreter(name: str) -> str:
    return {".py": "python3", ".rb": "ruby"}.get(Path(name).suffix, "sh")


def prepare_stuck_scripts(d: Path) -> None:
    for name in SCRIPTS:
        body = f"#!/usr/bin/env {_interpreter(name)}\n# {name}: ops helper\n"
        write(d / "tools" / "bin" / name, body + "echo done\n")


def finish_stuck_scripts(d: Path) -> None:
    # After prepare_dir has made every file 0644: the modes are the question.
    for name, mode in _script_modes(_rng("stuck-scripts")).items():
        (d / "tools" / "bin" / name).chmod(mode)


def verify_stuck_scripts(d: Path, text: str) -> Verdict:
    modes = {p.name: p.stat().st_mode for p in (d / "tools" / "bin").iterdir()}
    wanted = {name for name, mode in modes.items() if not mode & 0o111}
    return _select(set(modes), wanted, text, "scripts with no execute bit")


# Keys set to an empty value ------------------------------------------------------

SETTINGS = {
    "server": ("bind_address", "http_port", "worker_count", "tls_cert", "tls_key"),
    "database": ("db_host", "db_name", "db_user", "db_password", "pool_size"),
    "mail": ("smtp_host", "smtp_user", "smtp_password", "from_address", "reply_to"),
    "cache": ("cache_url", "ttl_s", "key_prefix"),
}
FULL_VALUES = {
    "bind_address": "10.20.0.15",
    "http_port": "8443",
    "worker_count": "4",
    "tls_cert": "/etc/ssl/service.pem",
    "tls_key": "/etc/ssl/service.key",
    "db_host": "db-primary.internal",
    "db_name": "orders",
    "db_user": "orders_app",
    "db_password": "s3cret-rotated",
    "pool_size": "0",
    "smtp_host": "mail.internal",
    "smtp_user": "notifier",
    "smtp_password": "hunter-7",
    "from_address": "noreply@example.org",
    "reply_to": "support@example.org",
    "cache_url": "redis://cache.internal:6379/2",
    "ttl_s": "0",
    "key_prefix": "false",
}


def _ini_line(key: str, empty: bool, rng: random.Random) -> str:
    if not empty:
        return f"{key} = {FULL_VALUES[key]}"
    return f"{key} =" + rng.choice(("", " ", "   "))


def prepare_empty_settings(d: Path) -> None:
    rng = _rng("empty-settings")
    keys = [k for section in SETTINGS.values() for k in section]
    empty = set(rng.sample(keys, rng.randint(4, 6)))
    lines = ["; service.ini: read at start-up", ""]
    for section, section_keys in SETTINGS.items():
        lines.append(f"[{section}]")
        lines += [_ini_line(k, k in empty, rng) for k in section_keys]
        if section == "mail":
            # A commented-out key is not set at all.
            lines.append(";bounce_address =")
        lines.append("")
    write(d / "config" / "service.ini", "\n".join(lines))


def verify_empty_settings(d: Path, text: str) -> Verdict:
    config = configparser.ConfigParser(interpolation=None)
    config.read(d / "config" / "service.ini")
    values = {k: v for s in config.sections() for k, v in config[s].items()}
    wanted = {k for k, v in values.items() if not v.strip()}
    items = set(values) | {"bounce_address"}
    return _select(items, wanted, text, "keys set to an empty value")


# Clients that had a server error ---------------------------------------------------

PATHS = (
    "/api/v1/orders",
    "/api/v1/cart",
    "/api/v1/search?q=lamp",
    "/static/app.js",
    "/static/site.css",
    "/login",
    "/account/settings",
)
OK_STATUSES = (200, 200, 200, 201, 204, 301, 302, 304)
CLIENT_ERRORS = (400, 401, 403, 404, 404, 429)
SERVER_ERRORS = (500, 502, 503, 504)
AGENTS = ("curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64)", "python-requests/2.32")


def _clients(rng: random.Random) -> dict[str, str]:
    """Return each client's lot: "5xx", "4xx" (and no 5xx) or "ok"."""
    hosts = rng.sample(
        [
            f"{net}.{n}"
            for net in ("192.0.2", "198.51.100", "203.0.113")
            for n in (7, 23, 41, 118, 200)
        ],
        14,
    )
    lots = ["5xx"] * 4 + ["4xx"] * 4 + ["ok"] * 6
    return dict(zip(hosts, lots, strict=True))


def _request(rng: random.Random, host: str, status: int, path: str) -> tuple:
    size = rng.randint(500, 599) if rng.random() < 0.2 else rng.randint(120, 48_000)
    return host, f"GET {path} HTTP/1.1", status, size


def _requests(rng: random.Random) -> list[tuple]:
    requests = []
    for host, lot in _clients(rng).items():
        ok = [rng.choice(OK_STATUSES) for _ in range(rng.randint(6, 14))]
        bad = {"5xx": SERVER_ERRORS, "4xx": CLIENT_ERRORS}.get(lot, ())
        errors = [rng.choice(bad) for _ in range(rng.randint(1, 2))] if bad else []
        if lot == "5xx":
            errors.append(rng.choice(CLIENT_ERRORS))
        for status in ok + errors:
            requests.append(_request(rng, host, status, rng.choice(PATHS)))
        if lot == "ok":
            # An error page that loaded fine: 503 in the path, 200 the status.
            requests.append(_request(rng, host, 200, "/errors/503.html"))
    rng.shuffle(requests)
    return requests


def prepare_error_clients(d: Path) -> None:
    rng = _rng("error-clients")
    at = dt.datetime(2026, 11, 14, 8, 0, 0)
    lines = []
    for host, request, status, size in _requests(rng):
        at += dt.timedelta(seconds=rng.randint(1, 90))
        stamp = at.strftime("%d/%b/%Y:%H:%M:%S +0000")
        agent = rng.choice(AGENTS)
        lines.append(f'{host} - - [{stamp}] "{request}" {status} {size} "-" "{agent}"')
    write(d / "logs" / "access.log", "\n".join(lines) + "\n")


LOG_LINE = re.compile(r'^(\S+) \S+ \S+ \[[^]]+\] "[^"]*" (\d{3}) ')


def verify_error_clients(d: Path, text: str) -> Verdict:
    statuses: dict[str, set[int]] = {}
    for line in (d / "logs" / "access.log").read_text().splitlines():
        host, status = LOG_LINE.match(line).groups()
        statuses.setdefault(host, set()).add(int(status))
    wanted = {h for h, codes in statuses.items() if any(c >= 500 for c in codes)}
    return _select(set(statuses), wanted, text, "clients with a 5xx response")


# Files that hold a word -------------------------------------------------------------

FILLER = (
    "customer order parcel shipped delayed tracking address warehouse courier "
    "replacement damaged charged twice account invoice receipt card payment "
    "thanks please confirm today tomorrow weekend colour size exchange voucher"
).split()
EXACT = (
    f"customer asks for a {WORD} on the damaged parcel",
    f"{WORD} approved by the team lead",
    f"please issue a {WORD} to the original card",
    f"partial {WORD} of the shipping fee",
)
NEAR = (
    f"{WORD}s are processed within five working days",
    f"order was {WORD}ed last week, nothing to do",
    f"{WORD}ing takes longer for card payments",
    f"voucher is non-{WORD}able as per the terms",
    f"customer read the {WORD}able fares page",
)
TICKETS = {
    ".": ("t-4821.txt", "t-4830.txt", "t-4902.md", "t-4915.txt", "refund-policy.md"),
    "escalated": ("t-4377.txt", "t-4410.md", "t-4468.txt"),
    "archive/2025": ("t-3120.txt", "t-3188.txt", "t-3254.md", "t-3301.txt"),
}


def _ticket(rng: random.Random, extra: list[str]) -> str:
    lines = [
        " ".join(rng.choice(FILLER) for _ in range(rng.randint(5, 11)))
        for _ in range(rng.randint(3, 7))
    ]
    for sentence in extra:
        lines.insert(rng.randint(0, len(lines)), sentence)
    return "\n".join(lines) + "\n"


def prepare_refund_mentions(d: Path) -> None:
    rng = _rng("refund-mentions")
    paths = [Path(sub) / name for sub, names in TICKETS.items() for name in names]
    # The policy's name has the word and its text only near misses.
    policy = paths.pop(paths.index(Path("refund-policy.md")))
    write(d / "support" / policy, _ticket(rng, rng.sample(NEAR, 3)))
    rng.shuffle(paths)
    for n, path in enumerate(paths):
        extra = rng.sample(NEAR, rng.randint(0, 2))
        if n < 5:
            extra.append(rng.choice(EXACT))
        elif n < 9:
            extra = rng.sample(NEAR, rng.randint(1, 2))
        write(d / "support" / path, _ticket(rng, extra))


def verify_refund_mentions(d: Path, text: str) -> Verdict:
    files = [p for p in (d / "support").rglob("*") if p.is_file()]
    pattern = re.compile(rf"\b{WORD}\b")
    wanted = {p.name for p in files if pattern.search(p.read_text())}
    items = {p.name for p in files}
    return _select(items, wanted, text, f'files with the word "{WORD}"')


HELDOUT_C = [
    Task(
        "big-exports",
        "answer",
        f"Which files in {{dir}}/exports are larger than {SIZE_LIMIT:,} bytes? "
        f"A file of exactly {SIZE_LIMIT:,} bytes does not count.",
        prepare_big_exports,
        verify_big_exports,
    ),
    Task(
        "nologin-accounts",
        "answer",
        "I'm tidying up the accounts on an old box. Could you tell me which "
        f"users in {{dir}}/etc/passwd have {NOLOGIN} as their login shell?",
        prepare_nologin_accounts,
        verify_nologin_accounts,
    ),
    Task(
        "stuck-scripts",
        "answer",
        "Some of our helper scripts fail with 'permission denied' when I run "
        "them. Which ones in {dir}/tools/bin aren't executable?",
        prepare_stuck_scripts,
        verify_stuck_scripts,
        finish=finish_stuck_scripts,
    ),
    Task(
        "empty-settings",
        "answer",
        "List the keys in {dir}/config/service.ini that are set to an empty value.",
        prepare_empty_settings,
        verify_empty_settings,
    ),
    Task(
        "error-clients",
        "answer",
        "From {dir}/logs/access.log: which client IP addresses got at least one "
        "server error (an HTTP status in the 5xx range)?",
        prepare_error_clients,
        verify_error_clients,
    ),
    Task(
        "refund-mentions",
        "answer",
        f'Please find every file that contains the exact word "{WORD}", '
        "searching recursively in {dir}/support",
        prepare_refund_mentions,
        verify_refund_mentions,
    ),
]
