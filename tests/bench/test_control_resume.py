"""A control bench session stopped part way goes on with --resume, on the same
database and memory, running only what is missing (and again what a stop cut
off); it refuses when the code it measures has changed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from bench import control
from bench.control_report import Result
from bench.control_state import (
    SessionState,
    StateError,
    archive,
    code_fingerprint,
    unpack,
)
from roles.tools.sandbox import remove_tree
from tests.bench.test_control_bench import scripted
from tests.llm_server import ScriptedLLMServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture
def tasks_dir():
    path = Path(f"/var/tmp/artoo-bench-resume-test-{os.getpid()}")
    yield path
    remove_tree(path)


@pytest.fixture
def restore_sigterm():
    before = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, before)


OPTIONS = {
    "strategies": ["ggs"],
    "only": "count-lines",
    "passes": 1,
    "seed": 42,
    "jobs": 1,
    "tasks_dir": "/var/tmp/x",
}


def saved_session(data_dir: Path, name: str) -> SessionState:
    return SessionState.new(data_dir, name, OPTIONS, "scripted")


def sigterm_after_first_run(monkeypatch) -> None:
    """Send this process SIGTERM as soon as a session has saved one finished run,
    as an operator's ``kill`` would."""
    finished = SessionState.finished

    def finished_then_stopped(self, result) -> None:
        finished(self, result)
        if len(self.data["results"]) == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(SessionState, "finished", finished_then_stopped)


@pytest.mark.parametrize("carried", [False, True], ids=["same-dir", "carried"])
def test_a_stopped_session_resumes_with_what_is_missing(
    tmp_path, tasks_dir, restore_sigterm, carried, monkeypatch
):
    here = there = tmp_path / "here"
    with ScriptedLLMServer() as server:
        for role, respond in scripted(tasks_dir).items():
            server.responder(respond, role=role)
        url = server.env()["OPENAI_BASE_URL"]
        endpoint = ("--base-url", url, "--model", "scripted")
        opts = control.parse_args(
            [
                *endpoint,
                *("--only", "count-lines", "--strategies", "ggs,single"),
                *("--passes", "2", "--data-dir", str(here)),
                *("--tasks-dir", str(tasks_dir)),
            ]
        )
        sigterm_after_first_run(monkeypatch)
        first = control.run_bench(opts, control.endpoint_env(opts), "scripted")
        monkeypatch.undo()
        assert not first["complete"]
        # The bench heard the signal before it started another run.
        assert len(first["results"]) == 1

        # The state is what a kill in the middle of a run leaves behind.
        state = SessionState.load(here, first["session"])
        cut = state.data["results"].pop(0)
        assert (cut["strategy"], cut["pass_no"]) == ("ggs", 1)
        state.data["in_flight"] = {"ggs/count-lines/1": cut["run_id"]}
        state.save()
        if carried:
            # Another machine: the session travels as one file.
            there = tmp_path / "there"
            carry = tmp_path / "carry.tar.gz"
            assert (
                control.main(
                    [
                        "--archive",
                        first["session"],
                        "--to",
                        str(carry),
                        "--data-dir",
                        str(here),
                    ]
                )
                == 0
            )
            assert control.main(["--unpack", str(carry), "--data-dir", str(there)]) == 0

        again = control.parse_args(
            ["--resume", "latest", *endpoint, "--data-dir", str(there)]
        )
        assert again.resume == first["session"]
        assert (again.passes, again.strategies) == (2, ["ggs", "single"])
        record = control.run_bench(again, control.endpoint_env(again), "scripted")

    assert record["complete"] and record["session"] == first["session"]
    assert len(record["dreams"]) == 1 and len(record["resumed_at"]) == 1
    results = {(r["strategy"], r["pass_no"]): r for r in record["results"]}
    assert sorted(results) == [("ggs", 1), ("ggs", 2), ("single", 1), ("single", 2)]
    assert all(r["solved"] for r in results.values())
    rerun = results[("ggs", 1)]
    assert rerun["run_id"] != cut["run_id"]
    assert f"{cut['run_id']} was cut off" in rerun["note"]
    assert record["cut_off"] == {"ggs/count-lines/1": cut["run_id"]}
    with sqlite3.connect(there / "db.sqlite3") as db:
        runs = dict(db.execute("SELECT id, status FROM artoo_web_run").fetchall())
        users = db.execute(
            "SELECT count(*) FROM auth_user WHERE username LIKE 'bench-%'"
        ).fetchone()
        owners = dict(
            db.execute(
                "SELECT r.id, u.username FROM artoo_web_run r"
                " JOIN auth_user u ON u.id = r.owner_id"
            ).fetchall()
        )
        perceived = dict(
            db.execute(
                "SELECT run_id, data FROM artoo_web_traceevent"
                " WHERE role = 'R1' AND kind = 'llm_call' ORDER BY id DESC"
            ).fetchall()
        )
    # One run more than the table: the one the stop cut off, kept as it ended.
    assert len(runs) == 5, runs
    # The first pass's cut-off run ran again under a new user, whose R1 saw no
    # earlier run; that user went on to the second pass. single kept its user.
    assert users == (3,)
    owner = {k: owners[r["run_id"].replace("-", "")] for k, r in results.items()}
    cut_owner = owners[cut["run_id"].replace("-", "")]
    assert owner[("ggs", 1)] == owner[("ggs", 2)] != cut_owner
    assert owner[("ggs", 1)].endswith("-ggs-count-lines-2")
    assert owner[("single", 1)] == owner[("single", 2)]
    assert owner[("single", 1)].endswith("-single-count-lines")

    def asked_of_r1(result: dict) -> str:
        call = json.loads(perceived[result["run_id"].replace("-", "")])
        return call["messages"][-1]["content"]

    assert "Recent session history:" not in asked_of_r1(rerun)
    assert "Recent session history:" in asked_of_r1(results[("ggs", 2)])
    assert (there / "memory" / first["session"] / "CURRENT").is_file()
    assert {r["run_id"].replace("-", "") for r in record["results"]} <= {
        k.replace("-", "") for k in runs
    }
    saved = json.loads(
        (there / "sessions" / first["session"] / "state.json").read_text()
    )
    assert saved["complete"] and saved["in_flight"] == {}
    assert saved["users"] == {"ggs/count-lines": owner[("ggs", 1)]}
    # API tokens are never saved: a resumed session makes new ones.
    assert set(saved) == {
        "session",
        "commit",
        "fingerprint",
        "model",
        "options",
        "results",
        "in_flight",
        "dreams",
        "resumed_at",
        "started_at",
        "complete",
        "users",
    }


def test_resume_refuses_a_session_of_other_code(tmp_path, capsys):
    state = saved_session(tmp_path, "20260101-000000-1")
    state.data["fingerprint"] = "0" * 64
    state.data["commit"] = "abc123"
    state.save()
    opts = control.parse_args(
        [
            "--resume",
            "latest",
            "--data-dir",
            str(tmp_path),
            "--base-url",
            "http://x",
            "--model",
            "m",
        ]
    )
    with pytest.raises(SystemExit, match="measured other code.*abc123"):
        control.start_session(opts, "scripted")
    assert code_fingerprint() != "0" * 64


def test_resume_takes_the_sessions_options_not_new_ones(tmp_path, capsys):
    saved_session(tmp_path, "20260101-000000-1")
    with pytest.raises(SystemExit):
        control.parse_args(
            ["--resume", "latest", "--data-dir", str(tmp_path), "--passes", "2"]
        )
    assert "a saved session keeps its own options; drop --passes" in (
        capsys.readouterr().err
    )


def test_resume_names_what_is_missing(tmp_path, capsys):
    with pytest.raises(SystemExit):
        control.parse_args(["--resume", "latest", "--data-dir", str(tmp_path)])
    assert "no unfinished control bench session" in capsys.readouterr().err
    with pytest.raises(StateError, match="no saved session 'nope'"):
        SessionState.load(tmp_path, "nope")
    (tmp_path / "sessions" / "bad").mkdir(parents=True)
    (tmp_path / "sessions" / "bad" / "state.json").write_text("{not json")
    with pytest.raises(StateError, match="cannot be read"):
        SessionState.load(tmp_path, "bad")


def test_a_complete_session_is_not_the_latest_unfinished(tmp_path):
    saved_session(tmp_path, "20260101-000000-1")
    saved_session(tmp_path, "20260102-000000-1").mark_complete(True)
    assert SessionState.load(tmp_path, "latest").session == "20260101-000000-1"


def test_report_prints_a_saved_sessions_finished_runs_without_a_cluster(
    tmp_path, capsys
):
    state = saved_session(tmp_path, "20260101-000000-1")
    state.finished(
        Result(
            "count-lines",
            "first-time",
            "none",
            "first-time",
            "ggs",
            1,
            run_id="run-1",
            solved=True,
            directive="accept",
            rounds=1,
            prompt_tokens=900,
            completion_tokens=100,
        )
    )

    assert control.main(["--report", "latest", "--data-dir", str(tmp_path)]) == 0

    out = capsys.readouterr().out
    assert "INCOMPLETE" not in out and "| ggs | 1 | 1/1 |" in out
    assert "run-1" in out
    written = tmp_path / "results" / "20260101-000000-1" / "control.json"
    assert json.loads(written.read_text())["complete"] is True
    # Reading a session changes nothing in it.
    assert SessionState.load(tmp_path, "20260101-000000-1").data == state.data


def test_a_running_session_is_not_archived(tmp_path):
    saved_session(tmp_path, "20260101-000000-1")
    memory = tmp_path / "memory" / "20260101-000000-1"
    memory.parent.mkdir()
    code = (
        "import sys, plyvel; db = plyvel.DB(sys.argv[1], create_if_missing=True); "
        "print('open', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(memory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(StateError, match="is running: stop it first"):
            archive(tmp_path, "20260101-000000-1", tmp_path / "a.tar.gz")
    finally:
        holder.communicate("", timeout=30)
    assert not (tmp_path / "a.tar.gz").exists()
    with pytest.raises(StateError, match="no saved session 'other'"):
        archive(tmp_path, "other", tmp_path / "a.tar.gz")


def test_unpack_refuses_a_dir_with_a_database_and_a_foreign_archive(tmp_path):
    saved_session(tmp_path / "here", "20260101-000000-1")
    with sqlite3.connect(tmp_path / "here" / "db.sqlite3") as db:
        db.execute("CREATE TABLE artoo_web_apitoken (id INTEGER, digest TEXT)")
        db.execute("INSERT INTO artoo_web_apitoken VALUES (1, 'digest')")
    db.close()
    carry = archive(tmp_path / "here", "20260101-000000-1", tmp_path / "s.tar.gz")

    with pytest.raises(StateError, match="has a database already"):
        unpack(carry, tmp_path / "here")

    hostile = tmp_path / "hostile.tar.gz"
    with tarfile.open(hostile, "w:gz") as tar:
        tar.add(tmp_path / "here" / "sessions", "sessions")
        tar.add(tmp_path / "s.tar.gz", "../escaped")
    with pytest.raises(StateError, match="not a control bench session archive"):
        unpack(hostile, tmp_path / "there")
    assert not (tmp_path / "escaped").exists()
    assert not (tmp_path / "there" / "db.sqlite3").exists()

    (tmp_path / "junk.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(StateError, match="cannot be unpacked"):
        unpack(tmp_path / "junk.tar.gz", tmp_path / "there")

    assert unpack(carry, tmp_path / "there") == "20260101-000000-1"
    assert SessionState.load(tmp_path / "there", "latest").options == OPTIONS
    # No API token travels; the session's own database keeps its rows.
    with sqlite3.connect(tmp_path / "there" / "db.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM artoo_web_apitoken").fetchone() == (0,)
    db.close()
    with sqlite3.connect(tmp_path / "here" / "db.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM artoo_web_apitoken").fetchone() == (1,)
    db.close()
