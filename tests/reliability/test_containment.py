"""The executor stays contained: no escapes, no survivors, bounded output."""

from __future__ import annotations

import json

import pytest

from tests.llm_server import ScriptedLLMServer, Step, ToolCallSpec
from tests.reliability.harness import (
    Api,
    Db,
    create_user,
    pgrep,
    script_roles,
    wait_for,
)

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(240)]

# Offline tasks, one per run; every marker is unique so pgrep finds only ours.
RUNAWAYS = {
    "many-children": "for i in $(seq 200); do sleep 51.7 & done; wait",
    "ignores-sigterm": 'trap "" TERM; sleep 52.3',
    "endless-output": "yes artoo-flood-endless",
}
FLOOD = "yes artoo-flood-bounded | head -c 30000000"
MARKERS = ("sleep 51.7", "sleep 52.3", "artoo-flood")
# The executor keeps 100,000 characters of a result (head and tail) of the tens
# of megabytes these commands print; a message may carry it plus its evidence.
MAX_PAYLOAD = 500_000


def largest_payload(db: Db, run_id: str) -> int:
    return db.value(
        "SELECT max(length(payload)) FROM artoo_web_busmessage WHERE run_id = ?",
        (run_id.replace("-", ""),),
    )


def test_runaway_commands_are_killed_with_their_children_and_output_is_bounded(
    start_cluster,
):
    cluster = start_cluster(env={"ARTOO_SHELL_TIMEOUT_S": "3"})
    api = Api(cluster.url, create_user(cluster, "alice"))
    db = Db(cluster)
    runs = {name: api.submit(task) for name, task in RUNAWAYS.items()}
    flood = api.submit(FLOOD + " # expect: artoo-flood-bounded")

    ended = api.wait_terminal([*runs.values(), flood], 180)

    for name, run_id in runs.items():
        assert ended[run_id]["status"] == "failed", name
        assert "timed out" in json.dumps(api.messages(run_id)), name
        assert largest_payload(db, run_id) < MAX_PAYLOAD, name
    assert ended[flood]["status"] == "done"
    assert largest_payload(db, flood) < MAX_PAYLOAD
    for marker in MARKERS:
        wait_for(lambda m=marker: not pgrep(m), 10, what=f"no {marker!r} survives")


def escape_calls(outside) -> list[ToolCallSpec]:
    secret = outside / "secret.txt"
    return [
        ToolCallSpec("read_file", {"path": "../../outside/secret.txt"}),
        ToolCallSpec("read_file", {"path": str(secret)}),
        ToolCallSpec("glob", {"pattern": "../../outside/*"}),
        ToolCallSpec("shell", {"command": f"ln -s {outside} outlink"}),
        ToolCallSpec("read_file", {"path": "outlink/secret.txt"}),
        ToolCallSpec("glob", {"pattern": "outlink/*"}),
        ToolCallSpec(
            "write_file", {"path": "../../outside/dropped.txt", "content": "x"}
        ),
        ToolCallSpec("write_file", {"path": "outlink/planted.txt", "content": "x"}),
        ToolCallSpec("write_file", {"path": "inside.txt", "content": "fine"}),
    ]


def scripted_model(llm: ScriptedLLMServer, calls: list[ToolCallSpec]) -> None:
    """Script R1–R4b: one subtask whose executor tries every escape in turn."""

    def execute(request):
        done = sum(1 for m in request.messages if m.get("role") == "tool")
        if done < len(calls):
            return Step(tool_calls=(calls[done],))
        return json.dumps({"status": "completed", "output": "tried everything"})

    script_roles(llm, execute)


def test_file_tools_refuse_path_and_symlink_escapes_end_to_end(start_cluster, tmp_path):
    outside = tmp_path / "cluster" / "outside"
    outside.mkdir(parents=True)
    (outside / "secret.txt").write_text("TOP-SECRET-5b1f")
    calls = escape_calls(outside)
    with ScriptedLLMServer() as llm:
        scripted_model(llm, calls)
        cluster = start_cluster(env=llm.env(ARTOO_LLM_RETRIES="0"))
        api = Api(cluster.url, create_user(cluster, "alice"))
        run_id = api.submit("try to get out of the workspace")
        run = api.wait_terminal([run_id], 90)[run_id]
        last = llm.requests_for("R3")[-1]

    results = [m["content"] for m in last.messages if m.get("role") == "tool"]
    assert len(results) == len(calls), run
    tried = [(c, r) for c, r in zip(calls, results, strict=True) if c.name != "shell"]
    *escapes, (_, inside) = tried
    for call, result in escapes:
        assert result.startswith(("ERROR:", "(no files matched")), (call, result)
        if call.name != "glob":  # reads and writes say where the path leads
            assert "outside the workspace" in result, (call, result)
    assert inside.startswith("wrote 4 bytes")
    assert "TOP-SECRET" not in json.dumps(results)
    assert "TOP-SECRET" not in json.dumps(api.messages(run_id))
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    (workspace,) = (cluster.data_dir / "workspace").glob(f"user-*/{run_id}")
    assert (workspace / "inside.txt").read_text() == "fine"
