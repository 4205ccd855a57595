"""A control bench session kept on disk, so a stopped session can be resumed.

A full suite under three strategies over two passes runs for hours on a CPU
model. Every finished run is written at once to
``<data dir>/sessions/<session>/state.json``, with the options, the code it
measures and the run in progress::

    {"session": "20261202-031500-4242", "commit": "7ee330f…",
     "fingerprint": "sha256 of the code a run goes through",
     "options": {"strategies": ["ggs", …], "scenarios": ["count-lines", …], …},
     "results": [{"scenario": …, "strategy": …, "pass_no": 1, …}, …],
     "in_flight": {"ggs/count-lines/1": "<run id>"}, "dreams": […],
     "resumed_at": […], "users": {"ggs/count-lines": "bench-…-ggs-count-lines-2"}}

``python bench/control.py --resume SESSION`` (or ``--resume latest``) starts a
cluster on the same data dir (database, runs and memory) and runs only what is
missing. It refuses when the code a run goes through has changed since the
session began: the table would mix two versions of the roles. API tokens are
never written here; a resumed session makes new ones for the same users.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import sqlite3
import subprocess
import tarfile
import tempfile
from dataclasses import asdict
from pathlib import Path

from bench.control_report import Result

ROOT = Path(__file__).resolve().parent.parent
# What a run goes through: the roles, memory, the web app and its handlers, the
# tasks and their verifiers, the operator that drives a run, the pinned packages.
MEASURED = (
    "roles",
    "memory",
    "artoo_web",
    "devtools",
    "bench/scenario.py",
    "bench/scenarios.py",
    "bench/tuning_scenarios.py",
    "bench/heldout_scenarios.py",
)
MEASURED_FILES = ("requirements.txt",)
STATE_NAME = "state.json"


class StateError(RuntimeError):
    """A session cannot be resumed; the message says why and what to do."""


def code_fingerprint(root: Path = ROOT) -> str:
    """Return the sha256 of every source file a run goes through."""
    digest = hashlib.sha256()
    files: list[Path] = []
    for name in MEASURED:
        path = root / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    files += [root / name for name in MEASURED_FILES]
    for path in files:
        if "__pycache__" in path.parts or not path.is_file():
            continue
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def git_commit(root: Path = ROOT) -> str:
    """Return the checkout's commit, with ``+changes`` when its tree is dirty."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", *MEASURED],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def this_machine() -> str:
    """Return a label of this machine: its CPU, its cores and its boot id (host
    names and machine ids of cloned VMs repeat; a boot id does not)."""
    info: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            info.setdefault(name.strip(), value.strip())
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        boot = platform.node()
    cpu = info.get("model name", "unknown CPU")
    if "cpu family" in info:
        cpu += f" (family {info['cpu family']}, model {info.get('model', '?')})"
    if "avx512f" in info.get("flags", "").split():
        cpu += " with AVX-512"
    return f"{cpu}, {os.cpu_count()} cores, boot {boot}"


# The key and user suffix of a run of the memory=off arm.
NO_MEMORY = "memory-off"
# The user of every scenario of a strategy, in a one-account session.
ONE_ACCOUNT = "one-account"


def key_of(scenario: str, strategy: str, pass_no: int, memory: bool = True) -> str:
    """Return a run's key: ``strategy/scenario/pass``, and ``/memory-off`` for a
    run of the memory=off arm."""
    key = f"{strategy}/{scenario}/{pass_no}"
    return key if memory else f"{key}/{NO_MEMORY}"


def user_of(
    session: str, strategy: str, scenario: str, memory: bool, one_account: bool
) -> str:
    """Return the name of the user who runs ``scenario`` under ``strategy``.

    One account: a strategy's scenarios run in a row under one user, as a
    person's tasks do; the memory=off arm keeps a user per scenario, who
    remembers nothing."""
    if not memory:
        scenario = f"{scenario}-{NO_MEMORY}"
    elif one_account:
        scenario = ONE_ACCOUNT
    return f"bench-{session}-{strategy}-{scenario}"


def parse_key(key: str) -> tuple[str, str, int, bool]:
    """Return (strategy, scenario, pass, memory) of a key ``key_of`` made."""
    strategy, scenario, pass_no, *arm = key.split("/")
    return strategy, scenario, int(pass_no), arm != [NO_MEMORY]


class SessionState:
    """One session's options, finished runs, run in progress and Dreamer passes."""

    def __init__(self, path: Path, data: dict):
        self.path = path
        self.data = data

    @classmethod
    def new(
        cls, data_dir: Path, session: str, options: dict, model: str
    ) -> SessionState:
        data = {
            "session": session,
            "commit": git_commit(),
            "fingerprint": code_fingerprint(),
            "model": model,
            "options": options,
            "results": [],
            "in_flight": {},
            "dreams": [],
            "resumed_at": [],
        }
        state = cls(data_dir / "sessions" / session / STATE_NAME, data)
        state.save()
        return state

    @classmethod
    def load(cls, data_dir: Path, session: str) -> SessionState:
        """Return the saved session ``session`` ("latest": the newest unfinished).

        Raise StateError when there is none, or it cannot be read.
        """
        if session == "latest":
            session = latest_unfinished(data_dir)
        path = data_dir / "sessions" / session / STATE_NAME
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise StateError(f"no saved session {session!r} in {data_dir}") from None
        except (OSError, ValueError) as exc:
            raise StateError(f"{path} cannot be read: {exc}") from None
        if not isinstance(data, dict) or data.get("session") != session:
            raise StateError(f"{path} is not a control bench session")
        return cls(path, data)

    def check_code(self) -> None:
        """Raise StateError when the measured code differs from the session's."""
        if self.data.get("fingerprint") != code_fingerprint():
            commit = self.data.get("commit", "unknown")
            raise StateError(
                f"session {self.session} measured other code (commit {commit}); "
                "its table would mix two versions of the roles. Resume it from a "
                f"checkout of that commit (git worktree add DIR {commit[:12]}), "
                "or start a new session"
            )

    def check_model(self, model: str) -> None:
        if self.data.get("model") != model:
            raise StateError(
                f"session {self.session} ran on {self.data.get('model')}, "
                f"not on {model}"
            )

    @property
    def session(self) -> str:
        return self.data["session"]

    @property
    def options(self) -> dict:
        return self.data["options"]

    def results(self) -> list[Result]:
        return [Result.from_dict(r) for r in self.data["results"]]

    def is_complete(self, runs: list[tuple[str, str, int, bool]]) -> bool:
        return all(self.is_done(*run) for run in runs)

    def is_done(
        self, scenario: str, strategy: str, pass_no: int, memory: bool = True
    ) -> bool:
        key = key_of(scenario, strategy, pass_no, memory)
        return any(
            key_of(r["scenario"], r["strategy"], r["pass_no"], r.get("memory", True))
            == key
            for r in self.data["results"]
        )

    def user(self, strategy: str, scenario: str, memory: bool = True) -> str:
        """Return the name of the user that runs ``scenario`` under ``strategy``
        (in the memory=off arm, a user of its own that remembers nothing)."""
        base, slot = self._user_base(strategy, scenario, memory)
        return self.data.get("users", {}).get(slot, base)

    def new_user(self, strategy: str, scenario: str, memory: bool = True) -> str:
        """Give ``scenario`` under ``strategy`` a new user and return its name.

        A run a stop cut off stays in its user's history, which R1 reads, and
        in its memory. A first-pass run again under a new user starts from
        nothing, as the first one did; later passes take that user. A run of
        the memory=off arm always runs again under a new user.
        """
        base, slot = self._user_base(strategy, scenario, memory)
        current = self.user(strategy, scenario, memory)
        n = 2 if current == base else int(current.removeprefix(f"{base}-")) + 1
        self.data.setdefault("users", {})[slot] = f"{base}-{n}"
        self.save()
        return f"{base}-{n}"

    def _user_base(self, strategy: str, scenario: str, memory: bool) -> tuple[str, str]:
        """Return the user's first name and its slot in the saved users."""
        one = bool(self.options.get("one_account"))
        base = user_of(self.session, strategy, scenario, memory, one)
        named = base.removeprefix(f"bench-{self.session}-{strategy}-")
        return base, f"{strategy}/{named}"

    def cut_off(self) -> dict[str, str]:
        """Return the runs that were in progress when the session stopped."""
        return dict(self.data["in_flight"])

    def started(self, result: Result) -> None:
        key = key_of(result.scenario, result.strategy, result.pass_no, result.memory)
        self.data["in_flight"][key] = result.run_id
        self.save()

    def finished(self, result: Result) -> None:
        key = key_of(result.scenario, result.strategy, result.pass_no, result.memory)
        self.data["in_flight"].pop(key, None)
        self.data["results"].append(asdict(result))
        self.save()

    def dreamt(self, report: str) -> None:
        self.data["dreams"].append(report)
        self.save()

    def resumed(self, at: str) -> None:
        self.data["resumed_at"].append(at)
        self.save()

    def mark_complete(self, complete: bool) -> None:
        self.data["complete"] = complete
        self.save()

    def save(self) -> None:
        """Write the state whole, so a kill never leaves half a file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1) + "\n")
        os.replace(tmp, self.path)


def latest_unfinished(data_dir: Path) -> str:
    """Return the newest session under ``data_dir`` that has runs left."""
    sessions = sorted((data_dir / "sessions").glob(f"*/{STATE_NAME}"), reverse=True)
    for path in sessions:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not data.get("complete"):
            return path.parent.name
    raise StateError(f"no unfinished control bench session in {data_dir}")


# Archives ----------------------------------------------------------------------
# A session carried to another machine: its state, memory and results, and a
# consistent copy of the database (its runs, transcripts and users).
ARCHIVED = ("sessions/{session}", "memory/{session}", "results/{session}")
DB_NAME = "db.sqlite3"


def archive(data_dir: Path, session: str, dest: Path) -> Path:
    """Write session ``session`` of ``data_dir`` to the .tar.gz ``dest``.

    Raise StateError when the session is unknown or still running (its memory
    is open, and a copy of it would be torn).
    """
    if not (data_dir / "sessions" / session / STATE_NAME).is_file():
        raise StateError(f"no saved session {session!r} in {data_dir}")
    if is_locked(data_dir / "memory" / session / "LOCK"):
        raise StateError(f"session {session} is running: stop it first (kill PID)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db_copy = Path(tmp) / DB_NAME
        src, dst = sqlite3.connect(data_dir / DB_NAME), sqlite3.connect(db_copy)
        try:
            src.backup(dst)
            # A resumed session makes tokens of its own: none travel.
            dst.execute("DELETE FROM artoo_web_apitoken")
            dst.commit()
        finally:
            src.close()
            dst.close()
        partial = dest.with_name(dest.name + ".part")
        with tarfile.open(partial, "w:gz") as tar:
            tar.add(db_copy, DB_NAME)
            for rel in (name.format(session=session) for name in ARCHIVED):
                if (data_dir / rel).exists():
                    tar.add(data_dir / rel, rel)
        os.replace(partial, dest)
    return dest


def unpack(source: Path, data_dir: Path) -> str:
    """Unpack an archive of ``archive`` into ``data_dir``; return its session.

    Raise StateError when ``data_dir`` already has a database (unpacking would
    replace its runs) or the file is not such an archive.
    """
    if (data_dir / DB_NAME).exists():
        raise StateError(
            f"{data_dir} has a database already; unpack into a new --data-dir"
        )
    try:
        with tarfile.open(source, "r:gz") as tar:
            members = tar.getmembers()
            sessions = {m.name.split("/")[1] for m in members if _is_state(m.name)}
            if len(sessions) != 1 or not all(
                _is_archived(m.name, *sessions) for m in members
            ):
                raise StateError(f"{source} is not a control bench session archive")
            data_dir.mkdir(parents=True, exist_ok=True)
            tar.extractall(data_dir, filter="data")
    except (OSError, tarfile.TarError) as exc:
        raise StateError(f"{source} cannot be unpacked: {exc}") from None
    return sessions.pop()


def _is_state(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 3 and parts[0] == "sessions" and parts[2] == STATE_NAME


def _is_archived(name: str, session: str) -> bool:
    allowed = [rel.format(session=session) for rel in ARCHIVED]
    return name == DB_NAME or any(
        name == rel or name.startswith(rel + "/") for rel in allowed
    )


def is_locked(path: Path) -> bool:
    """Return True when another process holds the lock on ``path`` (LevelDB's)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
