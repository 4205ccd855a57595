"""Fixtures of the real-model tier: the local model, a private cluster, the table.

One session starts llama-server (``devtools.localmodel``) and one cluster of
real processes pointed at it; the tasks run one at a time against it (a 2-core
machine serves one model request at a time). Task directories live under
``/var/tmp/artoo-model-tasks/<session id>/``, the only path runs may change.
At the end the results table is printed and written to
``<cluster data dir>/model-results.md``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from bench.claimcost import claims_table
from bench.modelcost import session_table, session_turns
from devtools.cluster import ROOT, Cluster
from devtools.localmodel import CLUSTER_ENV, LocalModel, LocalModelMissing
from tests.model.report import Row, table

SESSION_ID = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
TASKS_HOME = Path("/var/tmp/artoo-model-tasks")


@pytest.fixture(scope="session")
def tasks_root() -> Path:
    """Return this session's root of task directories (readable by the sandbox)."""
    TASKS_HOME.mkdir(exist_ok=True)
    TASKS_HOME.chmod(0o755)
    root = TASKS_HOME / SESSION_ID
    root.mkdir()
    root.chmod(0o755)
    return root


@pytest.fixture(scope="session")
def data_dir() -> Path:
    base = Path(os.environ.get("ARTOO_DATA_DIR") or ROOT / ".artoo" / "test")
    path = base.resolve() / "model" / SESSION_ID
    path.mkdir(parents=True)
    return path


@pytest.fixture(scope="session")
def local_model(data_dir):
    """Start llama-server; yield the environment that points every tier at it."""
    model = LocalModel(data_dir)
    try:
        env = model.start()
    except LocalModelMissing as missing:
        pytest.fail(str(missing))
    try:
        yield env
    finally:
        model.stop()


@pytest.fixture(scope="session")
def cluster(data_dir, local_model, tasks_root):
    """Start a private cluster of real processes on the local model."""
    # The tier's own clocks win over the defaults the local model brings.
    env = {**local_model, **CLUSTER_ENV, "ARTOO_ALLOWED_PATHS": str(tasks_root)}
    with Cluster(
        data_dir, processes=("web", "pipeline", "memory", "beat"), env=env
    ) as running:
        yield running


@pytest.fixture(scope="session")
def results(request, cluster):
    """Collect one Row per task; at the end print and write the table.

    No false accept is asserted here, after the table is out, so a false accept
    never hides the other tasks' figures.
    """
    rows: list[Row] = []
    yield rows
    path = cluster.data_dir / "model-results.md"
    text = table(rows, f"artoo real-model tier, session {SESSION_ID}")
    solved = {r.run_id for r in rows if r.solved}
    text += "\n\n## Cost per role\n\n" + session_table(cluster.db_path, solved)
    text += "\n\n## R3 prompt tokens by turn number\n\n" + session_turns(
        cluster.db_path
    )
    text += "\n\n## What decided\n\n" + claims_table(cluster.db_path)
    path.write_text(text + "\n")
    emit(request.config, f"\n{text}\n\nThis table is in {path}\n")
    false = [f"{r.task} ({r.run_id})" for r in rows if r.false_accept]
    assert not false, f"false accepts: {', '.join(false)}"


def emit(config: pytest.Config, text: str) -> None:
    """Write to the terminal whether or not pytest captures output."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        print(text, flush=True)
        return
    for line in text.splitlines():
        reporter.write_line(line)
