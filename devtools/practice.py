"""Practice tasks: ordinary questions and edits a failure may be looked at on.

The tuning tasks (``devtools/tasks.py``) and these may be looked at while a
change to ``roles/`` is made; the held-out tasks (``devtools/heldout.py``)
never are. These are of the kinds people ask of a box and its files: accounts
in a passwd file, the size of a tree in bytes, hidden files, the most frequent
value of a log's field, the host with the highest figure, a version pinned or
not, the directory with the most files, lines in a time window, the largest
number of a file, markers counted in code, a value set in a config file, a
sorted copy, files deleted by pattern and a file made from another.

The data comes from a seeded random source, so each verifier knows its answer.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from devtools.heldout import names_verdict
from devtools.tasks import Task, Verdict, has_number, write

SEED = 20261204
HOSTS = "atlas boreas castor deneb electra fornax gemma hydra".split()


def _rng(name: str) -> random.Random:
    return random.Random(f"{SEED}-{name}")


# Accounts, sizes, hidden files ---------------------------------------------------


def prepare_bash_users(d: Path) -> None:
    rng = _rng("bash-users")
    lines = ["root:x:0:0:root:/root:/bin/bash"]
    shells = ["/bin/bash", "/usr/sbin/nologin", "/bin/sh", "/bin/zsh", "/bin/false"]
    for n in range(1, 31):
        name = f"user{n:02d}"
        lines.append(
            f"{name}:x:{1000 + n}:{1000 + n}::/home/{name}:{rng.choice(shells)}"
        )
    write(d / "passwd", "\n".join(lines) + "\n")


def verify_bash_users(d: Path, text: str) -> Verdict:
    rows = (d / "passwd").read_text().splitlines()
    wanted = sum(1 for r in rows if r.split(":")[-1] == "/bin/bash")
    return has_number(text, wanted, "accounts with /bin/bash")


def prepare_tree_bytes(d: Path) -> None:
    rng = _rng("tree-bytes")
    for n in range(9):
        sub = rng.choice(["", "img/", "css/", "js/vendor/"])
        write(d / "assets" / f"{sub}f{n}.dat", "x" * rng.randint(10, 4000))


def verify_tree_bytes(d: Path, text: str) -> Verdict:
    total = sum(p.stat().st_size for p in (d / "assets").rglob("*") if p.is_file())
    return has_number(text, total, "bytes of the files under assets")


def prepare_hidden_files(d: Path) -> None:
    home = d / "home"
    for name in (".bashrc", ".profile", ".cache_index", "notes.txt", "todo.md"):
        write(home / name, f"{name}\n")
    write(home / ".config" / "app.toml", "x = 1\n")
    write(home / "docs" / ".keep", "")


def verify_hidden_files(d: Path, text: str) -> Verdict:
    home = d / "home"
    hidden = [p for p in home.iterdir() if p.is_file() and p.name.startswith(".")]
    return has_number(text, len(hidden), "hidden files directly in home")


# The most, the highest, a pinned version -----------------------------------------


def prepare_common_status(d: Path) -> None:
    rng = _rng("common-status")
    weights = {"200": 11, "404": 23, "500": 5, "301": 7, "403": 3}
    codes = [c for c, n in weights.items() for _ in range(n)]
    rng.shuffle(codes)
    lines = [
        f'10.0.0.{rng.randint(1, 60)} - - "GET /p{rng.randint(1, 9)} HTTP/1.1" {c} '
        f"{rng.randint(100, 9000)}"
        for c in codes
    ]
    write(d / "access.log", "\n".join(lines) + "\n")


def verify_common_status(d: Path, text: str) -> Verdict:
    counts: dict[str, int] = {}
    for line in (d / "access.log").read_text().splitlines():
        code = line.split()[-2]
        counts[code] = counts.get(code, 0) + 1
    best = max(counts, key=counts.get)
    return names_verdict(text, {best}, set(counts) - {best}, "the most frequent status")


def prepare_slowest_host(d: Path) -> None:
    rng = _rng("slowest-host")
    lines = [f"{h} {rng.randint(3, 480)}.{rng.randint(0, 9)} ms" for h in HOSTS]
    write(d / "latency.txt", "\n".join(lines) + "\n")


def verify_slowest_host(d: Path, text: str) -> Verdict:
    rows = [line.split() for line in (d / "latency.txt").read_text().splitlines()]
    best = max(rows, key=lambda r: float(r[1]))[0]
    return names_verdict(text, {best}, set(HOSTS) - {best}, "the slowest host")


def prepare_pinned(d: Path) -> None:
    write(
        d / "requirements.txt",
        "django==5.1.4\nrequests>=2.31\ncelery==5.4.0\nredis\n",
    )


def verify_pinned(d: Path, text: str) -> Verdict:
    words = set(re.findall(r"[a-z]+", text.lower()))
    said_no = bool(words & {"no", "not"})
    said_yes = "yes" in words
    return Verdict(said_no and not said_yes, "requests>=2.31 is not pinned: no")


def prepare_busiest_dir(d: Path) -> None:
    rng = _rng("busiest-dir")
    for name, n in (("alpha", 4), ("beta", 9), ("gamma", 6), ("delta", 2)):
        for i in range(n):
            write(d / "projects" / name / f"file{i}.txt", f"{rng.random()}\n")


def verify_busiest_dir(d: Path, text: str) -> Verdict:
    dirs = {p.name: len(list(p.iterdir())) for p in (d / "projects").iterdir()}
    best = max(dirs, key=dirs.get)
    return names_verdict(text, {best}, set(dirs) - {best}, "the fullest directory")


# Windows, extremes, markers --------------------------------------------------------


def prepare_time_window(d: Path) -> None:
    rng = _rng("time-window")
    lines = []
    for _ in range(70):
        hh, mm = rng.randint(8, 13), rng.randint(0, 59)
        lines.append(f"2026-11-30 {hh:02d}:{mm:02d}:{rng.randint(0, 59):02d} job ok")
    write(d / "cron.log", "\n".join(sorted(lines)) + "\n")


def verify_time_window(d: Path, text: str) -> Verdict:
    rows = (d / "cron.log").read_text().splitlines()
    n = sum(1 for r in rows if r.split()[1].startswith("10:"))
    return has_number(text, n, "lines logged from 10:00 to 10:59")


def prepare_largest_number(d: Path) -> None:
    rng = _rng("largest-number")
    values = [rng.randint(-500, 99999) for _ in range(40)]
    write(d / "numbers.txt", "\n".join(map(str, values)) + "\n")


def verify_largest_number(d: Path, text: str) -> Verdict:
    values = [int(v) for v in (d / "numbers.txt").read_text().split()]
    return has_number(text, max(values), "the largest number")


def prepare_todo_count(d: Path) -> None:
    rng = _rng("todo-count")
    for n in range(6):
        body = []
        for i in range(rng.randint(5, 20)):
            line = f"x{i} = {i}"
            if rng.random() < 0.25:
                line += "  # TODO: tidy"
            body.append(line)
        write(d / "src" / f"mod{n}.py", "\n".join(body) + "\n")
    write(d / "src" / "README.md", "TODO: write docs\n")


def verify_todo_count(d: Path, text: str) -> Verdict:
    n = sum(
        line.count("TODO")
        for p in (d / "src").glob("*.py")
        for line in p.read_text().splitlines()
    )
    return has_number(text, n, "TODO comments in the .py files")


# Edits ------------------------------------------------------------------------------


def prepare_set_port(d: Path) -> None:
    write(d / "server.ini", "[server]\nhost = 0.0.0.0\nport = 8000\nworkers = 4\n")


def verify_set_port(d: Path, text: str) -> Verdict:
    body = (d / "server.ini").read_text()
    ok = bool(re.search(r"^port\s*=\s*9090\s*$", body, re.M))
    kept = "workers = 4" in body and "host = 0.0.0.0" in body
    return Verdict(ok and kept, f"server.ini: {body!r}")


def prepare_sorted_copy(d: Path) -> None:
    rng = _rng("sorted-copy")
    names = ["mira", "otto", "lena", "bjorn", "cleo", "ivan", "zara", "ada"]
    rng.shuffle(names)
    write(d / "names.txt", "\n".join(names) + "\n")


def verify_sorted_copy(d: Path, text: str) -> Verdict:
    want = sorted((d / "names.txt").read_text().split())
    path = d / "sorted.txt"
    got = path.read_text().split() if path.exists() else None
    return Verdict(got == want, f"sorted.txt holds {got}")


def prepare_clean_tmp(d: Path) -> None:
    for name in ("a.tmp", "b.log", "sub/c.tmp", "sub/d.txt", "e.tmp.bak"):
        write(d / "cache" / name, name + "\n")


def verify_clean_tmp(d: Path, text: str) -> Verdict:
    left = sorted(str(p.relative_to(d / "cache")) for p in (d / "cache").rglob("*"))
    tmp = [p for p in left if p.endswith(".tmp")]
    kept = {"b.log", "sub/d.txt", "e.tmp.bak"} <= set(left)
    return Verdict(not tmp and kept, f"cache holds {left}")


def prepare_count_file(d: Path) -> None:
    rng = _rng("count-file")
    write(d / "input.txt", "".join(f"row {rng.random():.5f}\n" for _ in range(53)))


def verify_count_file(d: Path, text: str) -> Verdict:
    path = d / "out" / "count.txt"
    body = path.read_text().strip() if path.exists() else ""
    return Verdict(body == "53", f"out/count.txt holds {body!r}")


PRACTICE = [
    Task(
        "bash-users",
        "answer",
        "How many accounts in {dir}/passwd use /bin/bash as their login shell?",
        prepare_bash_users,
        verify_bash_users,
    ),
    Task(
        "tree-bytes",
        "answer",
        "What is the total size in bytes of all the files under {dir}/assets?",
        prepare_tree_bytes,
        verify_tree_bytes,
    ),
    Task(
        "hidden-files",
        "answer",
        "How many hidden files are there directly in {dir}/home (not in its "
        "subdirectories)?",
        prepare_hidden_files,
        verify_hidden_files,
    ),
    Task(
        "common-status",
        "answer",
        "Which HTTP status code appears most often in {dir}/access.log?",
        prepare_common_status,
        verify_common_status,
    ),
    Task(
        "slowest-host",
        "answer",
        "{dir}/latency.txt lists hosts and their latency. Which host is the slowest?",
        prepare_slowest_host,
        verify_slowest_host,
    ),
    Task(
        "pinned",
        "answer",
        "Does {dir}/requirements.txt pin an exact version of requests?",
        prepare_pinned,
        verify_pinned,
    ),
    Task(
        "busiest-dir",
        "answer",
        "Which directory in {dir}/projects holds the most files?",
        prepare_busiest_dir,
        verify_busiest_dir,
    ),
    Task(
        "time-window",
        "answer",
        "How many entries of {dir}/cron.log were logged between 10:00 and 10:59?",
        prepare_time_window,
        verify_time_window,
    ),
    Task(
        "largest-number",
        "answer",
        "What is the largest number in {dir}/numbers.txt?",
        prepare_largest_number,
        verify_largest_number,
    ),
    Task(
        "todo-count",
        "answer",
        "How many TODO comments are there in the Python files in {dir}/src?",
        prepare_todo_count,
        verify_todo_count,
    ),
    Task(
        "set-port",
        "action",
        "Set the port in {dir}/server.ini to 9090.",
        prepare_set_port,
        verify_set_port,
        approvals="approve",
        writable=True,
    ),
    Task(
        "sorted-copy",
        "action",
        "Write the names of {dir}/names.txt in alphabetical order to {dir}/sorted.txt.",
        prepare_sorted_copy,
        verify_sorted_copy,
        writable=True,
    ),
    Task(
        "clean-tmp",
        "action",
        "Delete every file ending in .tmp under {dir}/cache.",
        prepare_clean_tmp,
        verify_clean_tmp,
        approvals="approve",
        writable=True,
    ),
    Task(
        "count-file",
        "action",
        "Count the lines of {dir}/input.txt and write the number alone to "
        "{dir}/out/count.txt.",
        prepare_count_file,
        verify_count_file,
        writable=True,
    ),
]
