"""A run's spans reach a real OTLP/HTTP receiver from real worker processes.

The pipeline and memory workers are Celery processes of their own (as in
``test_worker_crash``), configured only through the environment, and the model
is the scripted OpenAI-compatible server; the receiver decodes what they post.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import connection

from artoo_web import runs, telemetry
from tests.conftest import wait_until
from tests.integration.test_pipeline_llm import (
    TASK_SPEC,
    accept,
    execute,
    judge,
    plan,
)
from tests.integration.test_pipeline_offline import finished
from tests.integration.test_worker_crash import start_worker, stop
from tests.llm_server import ScriptedLLMServer
from tests.otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
LOSS_KEYS = {"artoo.ggs.D", "artoo.ggs.P", "artoo.ggs.omega", "artoo.ggs.L"}


@pytest.fixture
def receiver():
    with OtlpReceiver() as receiver:
        yield receiver


@pytest.fixture
def model():
    with ScriptedLLMServer() as server:
        server.default_reply(json.dumps(TASK_SPEC), role="R1")
        server.responder(execute, role="R3")
        server.responder(judge, role="R4a")
        server.responder(accept, role="R4b")
        yield server


@pytest.fixture
def exporting_env(transactional_db, purge_queues, tmp_path, model, receiver):
    """The environment of worker processes that export to ``receiver``; their
    batches are sent when they shut down, not before (a 10-minute delay)."""
    return {
        **os.environ,
        **model.env(),
        "DJANGO_SETTINGS_MODULE": "tests.subprocess_settings",
        "ARTOO_TEST_DB_NAME": str(connection.settings_dict["NAME"]),
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
        "ARTOO_WORKSPACE": str(tmp_path / "workspace"),
        "ARTOO_MEMORY_PATH": str(tmp_path / "memory"),
        "ARTOO_LLM_RETRIES": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_SERVICE_NAME": "artoo-test",
        "OTEL_BSP_SCHEDULE_DELAY": "600000",
    }


def attribute_values(spans) -> str:
    values = [v for s in spans for v in s.attributes.values()]
    values += [v for s in spans for _, a in s.events for v in a.values()]
    return repr(values)


def test_a_runs_spans_from_two_workers_join_one_trace_at_the_receiver(
    exporting_env, receiver, model, user, tmp_path, settings
):
    settings.WORKSPACE = tmp_path / "workspace"
    model.reply("R2", plan("ok-step one"))
    workers = [
        start_worker(exporting_env, "memory", tmp_path / "memory.log"),
        start_worker(exporting_env, "pipeline", tmp_path / "pipeline.log"),
    ]
    try:
        run = finished(runs.submit(user, "check the server"), timeout=90)
        assert run.status == "done"
        # Batched: nothing was posted while the run went on.
        assert receiver.requests == 0
    finally:
        for worker in workers:
            stop(worker)
    trace_id, span_id = telemetry.run_ids(run.id)
    assert {s.trace_id for s in receiver.spans} == {run.id.int} == {trace_id}

    [root] = receiver.spans_named("invoke_workflow artoo")
    assert (root.span_id, root.parent_span_id) == (span_id, None)
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["artoo.run.status"] == "done"
    assert root.resource["service.name"] == "artoo-test"
    [(event, decision)] = root.events
    assert event == "artoo.ggs.decision"
    assert decision["artoo.ggs.directive"] == "accept"
    assert LOSS_KEYS <= set(decision)

    chats = receiver.spans_named("chat ")
    assert {c.attributes["gen_ai.agent.id"] for c in chats} >= {
        "R1",
        "R2",
        "R3",
        "R4a",
        "R4b",
    }
    assert all(c.attributes["gen_ai.usage.input_tokens"] > 0 for c in chats)
    assert all(c.attributes["gen_ai.usage.output_tokens"] > 0 for c in chats)
    tools = receiver.spans_named("execute_tool shell")
    assert tools and all(t.attributes["artoo.tool.exit_code"] == 0 for t in tools)
    assert tools[0].attributes["artoo.tool.programs"] == ["echo"]
    [memory] = receiver.spans_named("search_memory")
    # R5 answered in the memory worker, the rest in the pipeline worker.
    pipeline = root.resource["service.instance.id"]
    assert memory.resource["service.instance.id"] != pipeline
    assert {c.resource["service.instance.id"] for c in chats} == {pipeline}

    children = [s for s in receiver.spans if s is not root]
    assert {s.parent_span_id for s in children} == {span_id}
    assert all(root.start_ns <= s.start_ns <= s.end_ns <= root.end_ns for s in children)
    assert "check the server" not in attribute_values(receiver.spans)


def test_unset_endpoint_a_whole_run_builds_no_provider(
    celery_worker, user, model, receiver, monkeypatch
):
    for name, value in model.env().items():
        monkeypatch.setenv(name, value)
    model.reply("R2", plan("ok-step one"))
    run = finished(runs.submit(user, "check the server"))
    assert run.status == "done"
    assert model.requests_for("R3")
    assert not telemetry.is_started()
    assert receiver.requests == 0


def test_the_endpoint_setting_alone_sends_a_processs_spans_to_the_receiver(receiver):
    run_id = uuid.uuid4()
    script = (
        "import django, uuid\n"
        "django.setup()\n"
        "from artoo_web import telemetry\n"
        "from roles.tools import Toolbox\n"
        "import tempfile\n"
        "box = telemetry.watch_tools(Toolbox(tempfile.mkdtemp()), uuid.UUID(RUN))\n"
        "box.call('glob', {'pattern': '*'})\n"
        "assert telemetry.flush(timeout_s=20)\n"
    ).replace("RUN", repr(str(run_id)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {
        "DJANGO_SETTINGS_MODULE": "artoo_web.settings",
        "SECRET_KEY": "artoo-tests-only",
        "PYTHONPATH": str(ROOT),
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint + "/",
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    wait_until(lambda: receiver.spans, timeout=10)
    [span] = receiver.spans
    assert (span.name, span.trace_id) == ("execute_tool glob", run_id.int)
    assert span.resource["service.name"] == "artoo_web"
