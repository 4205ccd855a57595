"""Redis stopped and started again mid-run: runs finish, dashboards catch up."""

from __future__ import annotations

import json
import signal
import threading

import pytest

from devtools import launcher
from tests.reliability.harness import (
    Api,
    Db,
    Http,
    WsClosed,
    crash_redis,
    create_user,
    start_redis,
    wait_for,
    ws_connect,
)

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(240)]

TASK = "\n".join(["sleep 1"] * 6 + ["echo survived # expect: survived"])
RUNS = 3
WORKERS = ("pipeline", "memory")


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def wait_until_workers_lost_the_broker(cluster) -> None:
    wait_for(
        lambda: all("broker lost" in cluster.log_text(name) for name in WORKERS),
        30,
        what="every worker lost the broker",
    )


class Dashboard(threading.Thread):
    """A browser tab: follow one run, reconnecting with ``?after=<last id>``."""

    def __init__(self, cluster, run_id: str, cookie: str):
        super().__init__(daemon=True)
        self.cluster, self.run_id, self.cookie = cluster, run_id, cookie
        self.ids: list[int] = []
        self.closes: list[int | None] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            after = self.ids[-1] if self.ids else 0
            try:
                ws = ws_connect(
                    self.cluster, f"/ws/runs/{self.run_id}/?after={after}", self.cookie
                )
            except (WsClosed, OSError):
                self.closes.append(None)
                self.stopping.wait(0.2)  # the page's reconnect backoff
                continue
            try:
                while not self.stopping.is_set():
                    try:
                        self.ids.append(json.loads(ws.receive(timeout=0.5))["id"])
                    except TimeoutError:
                        continue
            except WsClosed as closed:
                self.closes.append(closed.code)
            finally:
                ws.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["stop", "crash"])
def test_runs_finish_and_dashboards_catch_up_across_a_redis_restart(
    start_cluster, tmp_path, sig
):
    redis_proc, url = start_redis(tmp_path)
    port = port_of(url)
    try:
        cluster = start_cluster(
            env={"REDIS_URL": url, "ARTOO_FANIN_DEADLINE_S": "40"}, concurrency=4
        )
        api = Api(cluster.url, create_user(cluster, "alice"))
        cookie = "sessionid=" + Http(cluster.url).login("alice").cookie("sessionid")
        db = Db(cluster)
        run_ids = [api.submit(TASK) for _ in range(RUNS)]
        tabs = [Dashboard(cluster, run_id, cookie) for run_id in run_ids]
        for tab in tabs:
            tab.start()
        wait_for(lambda: all(len(t.ids) >= 3 for t in tabs), 60, what="live")

        redis_proc.send_signal(sig)
        redis_proc.wait(10)
        # The outage lasts until every dashboard has lost its stream.
        wait_for(lambda: all(t.closes for t in tabs), 30, what="every tab lost the bus")
        redis_proc, _ = start_redis(tmp_path, port)

        runs = api.wait_terminal(run_ids, 150)
        assert {r["status"] for r in runs.values()} == {"done"}, runs
        for run_id, tab in zip(run_ids, tabs, strict=True):
            expected = db.message_ids(run_id)
            wait_for(
                lambda t=tab, e=expected: t.ids[-1:] == e[-1:], 30, what="caught up"
            )
            tab.stopping.set()
            tab.join(10)
            assert tab.ids == expected, "the tab missed or repeated messages"
            assert db.final_results(run_id) == 1
        assert any(tab.closes for tab in tabs), "no tab noticed the outage"
        wait_for(lambda: db.undelivered(run_ids) == 0, 30, what="all delivered")
    finally:
        launcher.stop(redis_proc)


def test_a_worker_outlives_a_redis_crash_while_it_runs_a_handler(
    start_cluster, tmp_path
):
    redis_proc, url = start_redis(tmp_path)
    try:
        cluster = start_cluster(env={"REDIS_URL": url}, concurrency=4)
        api = Api(cluster.url, create_user(cluster, "alice"))
        db = Db(cluster)
        run_id = api.submit("sleep 8\necho survived # expect: survived")
        # The worker holds the subtask's delivery unacknowledged, a BRPOP
        # pending on its free threads: kombu's close failed there and the
        # worker exited ("Unrecoverable error").
        wait_for(
            lambda: "subtask_started" in db.trace_kinds(run_id),
            60,
            what="a subtask running",
        )
        crash_redis(redis_proc, url)
        wait_until_workers_lost_the_broker(cluster)
        redis_proc, _ = start_redis(tmp_path, port_of(url))

        run = api.wait_terminal([run_id], 90)[run_id]

        assert run["status"] == "done", run["final_result"]
        exited = [name for name in WORKERS if cluster.procs[name].poll() is not None]
        assert not exited, f"{exited} exited; see {cluster.log_path(exited[0])}"
        assert db.final_results(run_id) == 1
        wait_for(lambda: db.undelivered([run_id]) == 0, 30, what="all delivered")
    finally:
        launcher.stop(redis_proc)


def test_deliveries_a_redis_crash_lost_are_sent_again_once_workers_reconnect(
    start_cluster, tmp_path
):
    redis_proc, url = start_redis(tmp_path)
    try:
        # The periodic sweep takes only hour-old messages: only the sweep
        # after the outage can find what the crash lost.
        cluster = start_cluster(
            env={
                "REDIS_URL": url,
                "ARTOO_SWEEP_AFTER_S": "3600",
                "ARTOO_SWEEP_EVERY_S": "3600",
            },
            concurrency=1,
        )
        api = Api(cluster.url, create_user(cluster, "alice"))
        db = Db(cluster)
        run_id = api.submit("sleep 8\n& echo second # expect: second")
        # One pipeline thread: the first subtask runs, the second one's
        # delivery waits in Redis, which the crash loses.
        wait_for(
            lambda: (
                db.trace_kinds(run_id).count("subtask_started") == 1
                and len(db.undelivered_of_type(run_id, "SubTask")) == 2
            ),
            60,
            what="one subtask running, one queued",
        )
        redis_proc.send_signal(signal.SIGKILL)
        redis_proc.wait(10)
        wait_until_workers_lost_the_broker(cluster)
        redis_proc, _ = start_redis(tmp_path / "after-crash", port_of(url))

        run = api.wait_terminal([run_id], 90)[run_id]

        assert run["status"] == "done", run["final_result"]
        assert "second" in run["final_result"]["output"]
        assert db.final_results(run_id) == 1
        wait_for(lambda: db.undelivered([run_id]) == 0, 30, what="all delivered")
    finally:
        launcher.stop(redis_proc)
