"""Fixtures of the reliability suite: private clusters of real processes."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from devtools.cluster import Cluster
from tests.reliability.harness import Api, create_user, seed_shared, wait_for

# Fast sweeper and quiet-enough logs for every cluster of this suite; each test
# adds what its fault needs.
BASE_ENV = {
    "REDIS_URL": "",  # an embedded redis-server per cluster: no shared queues
    "ARTOO_SWEEP_AFTER_S": "2",
    "ARTOO_SWEEP_EVERY_S": "1",
    "ARTOO_MEMORY_TIMEOUT_S": "2",
    "ARTOO_LOG_LEVEL": "INFO",
    "ARTOO_DREAM_EVERY_S": "3600",
}


@pytest.fixture
def start_cluster(tmp_path):
    """Return ``start(processes=…, env=…)``; every cluster started is stopped."""
    started: list[Cluster] = []

    def start(
        processes=("web", "pipeline", "memory", "beat"),
        env: dict | None = None,
        concurrency: int = 8,
        name: str = "cluster",
    ) -> Cluster:
        cluster = Cluster(
            tmp_path / name,
            processes=tuple(processes),
            env={**BASE_ENV, **(env or {})},
            concurrency=concurrency,
        )
        started.append(cluster)
        cluster.start()
        return cluster

    yield start
    for cluster in reversed(started):
        cluster.stop()


@dataclass
class Site:
    """One shared cluster with three users and runs waiting on an approval."""

    cluster: Cluster
    alice: Api
    bob: Api
    carol: Api  # staff
    waiting: list[str]  # alice's runs paused on a Law 1 approval
    kept: list[str]  # the file each of them would delete

    def approval_of(self, run_id: str) -> str:
        return self.alice.run(run_id)["pending_approvals"][0]["id"]


@pytest.fixture(scope="package")
def site(tmp_path_factory):
    """Start one cluster for the read-mostly security tests of this package."""
    cluster = Cluster(
        tmp_path_factory.mktemp("site"),
        processes=("web", "pipeline", "memory", "beat"),
        # The user's shared area holds the files the waiting runs would delete.
        env={**BASE_ENV, "ARTOO_USER_SHARED": "1"},
    )
    with cluster:
        alice = Api(cluster.url, create_user(cluster, "alice"))
        bob = Api(cluster.url, create_user(cluster, "bob"))
        carol = Api(cluster.url, create_user(cluster, "carol", staff=True))
        kept = [seed_shared(cluster, "alice", f"keep-{n}.txt") for n in range(2)]
        waiting = [alice.submit(gated_task(path)) for path in kept]
        for run_id in waiting:
            wait_for(
                lambda r=run_id: alice.run(r)["pending_approvals"], 60, what="approval"
            )
        yield Site(cluster, alice, bob, carol, waiting, kept)


def gated_task(path: str) -> str:
    """Return a task whose second line Law 1 puts to the operator: the offline
    model runs each line, and ``rm`` of a file that was there before is gated."""
    return f"cat {path}\nrm {path}"
