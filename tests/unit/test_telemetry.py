"""The spans of a run, caught by the SDK's in-memory exporter (no collector)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from artoo_web import telemetry
from artoo_web.models import BusMessage, Run
from roles.contracts import MemoryRecall
from roles.llm.config import Endpoint
from roles.llm.records import CallRecord, LLMError, Usage
from roles.llm.reply import ChatReply
from roles.tools import Toolbox, ToolboxConfig, ToolError

ROOT = Path(__file__).resolve().parents[2]
STARTED = datetime(2026, 5, 1, 12, 0, 0, 250_000, tzinfo=UTC)
LOSS = {"D": 0.5, "P": 0.25, "Omega": 0.125, "L": 0.625}


class ScriptedModel:
    """The model a role calls: one scripted reply, or an endpoint's failure."""

    def __init__(self, fails: bool = False):
        self.endpoint = Endpoint("tool", "http://10.0.0.7:8080/v1", "k", "qwen-1.5b")
        self.fails = fails

    def chat(self, messages, **options) -> ChatReply:
        if self.fails:
            raise LLMError("unavailable", status=503)
        record = CallRecord(
            role="R2",
            model="qwen-1.5b-q4",
            prompt_tokens=120,
            completion_tokens=30,
            elapsed_ms=5,
            messages=tuple(messages),
            response="a secret plan",
            cached_tokens=100,
        )
        return ChatReply("a secret plan", (), "stop", Usage((record,)))

    def complete_text(self, messages):
        reply = self.chat(messages)
        return reply.content, reply.usage


@pytest.fixture
def exported():
    exporter = InMemorySpanExporter()
    telemetry.start(exporter, batch=False)
    yield exporter
    telemetry.stop()


def ended_run(status: str = "done", directive: str = "accept") -> Run:
    return Run(
        id=uuid.uuid4(),
        owner_id=1,
        raw_input="count the secret lines",
        status=status,
        directive=directive,
        round=1,
        tokens=300,
        created_at=STARTED,
        finished_at=STARTED + timedelta(seconds=9),
    )


def decisions() -> list[BusMessage]:
    plan = {"directive": "refine", "prev_directive": "init", "loss": LOSS}
    plan |= {"grad_l": -0.25, "blocked_tools": ["glob"], "rationale": "secret"}
    final = {"directive": "accept", "prev_directive": "refine", "control": "ggs"}
    final |= {"loss": {**LOSS, "L": 0.0}}
    return [
        BusMessage(
            type="PlanDirective",
            round=1,
            payload=plan,
            created_at=STARTED + timedelta(seconds=3),
        ),
        BusMessage(
            type="FinalResult",
            round=1,
            payload=final,
            created_at=STARTED + timedelta(seconds=9),
        ),
    ]


def every_value(spans) -> str:
    values = [v for s in spans for v in s.attributes.values()]
    values += [v for s in spans for e in s.events for v in e.attributes.values()]
    return repr(values)


def test_a_model_call_is_a_chat_client_span_with_its_token_usage(exported):
    run_id = uuid.uuid4()
    model = telemetry.watch_model(ScriptedModel(), run_id, "R2")
    _, usage = model.complete_text([{"role": "user", "content": "a secret ask"}])
    [span] = exported.get_finished_spans()
    assert span.name == "chat qwen-1.5b"
    assert span.kind == SpanKind.CLIENT
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.agent.id": "R2",
        "gen_ai.agent.name": "Planner",
        "gen_ai.request.model": "qwen-1.5b",
        "server.address": "10.0.0.7",
        "server.port": 8080,
        "gen_ai.response.model": "qwen-1.5b-q4",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 30,
        "gen_ai.usage.cache_read.input_tokens": 100,
        "gen_ai.response.finish_reasons": ("stop",),
        "artoo.llm.mode": "text",
        "artoo.llm.attempts": 1,
        "artoo.run.id": str(run_id),
    }
    assert span.start_time <= span.end_time
    assert usage.prompt_tokens == 120


def test_a_failed_model_call_is_an_error_span_named_by_its_status(exported):
    model = telemetry.watch_model(ScriptedModel(fails=True), uuid.uuid4(), "R1")
    with pytest.raises(LLMError):
        model.chat([{"role": "user", "content": "hello"}])
    [span] = exported.get_finished_spans()
    assert span.attributes["error.type"] == "503"
    assert span.status.status_code == StatusCode.ERROR
    assert "gen_ai.usage.input_tokens" not in span.attributes


def test_a_shell_call_sends_its_programs_and_exit_code_never_its_words(
    exported, tmp_path
):
    box = Toolbox(tmp_path, ToolboxConfig(shell_timeout_s=5))
    toolbox = telemetry.watch_tools(box, uuid.uuid4())
    toolbox.call("shell", {"command": "LANG=C echo secret-word | wc -c"})
    [span] = exported.get_finished_spans()
    assert span.name == "execute_tool shell"
    assert span.kind == SpanKind.INTERNAL
    assert span.attributes["gen_ai.operation.name"] == "execute_tool"
    assert span.attributes["gen_ai.tool.name"] == "shell"
    assert span.attributes["gen_ai.agent.name"] == "Executor"
    assert span.attributes["artoo.tool.programs"] == ("echo", "wc")
    assert span.attributes["artoo.tool.exit_code"] == 0
    assert "secret" not in every_value([span])


def test_a_refused_tool_call_is_an_error_span(exported, tmp_path):
    toolbox = telemetry.watch_tools(Toolbox(tmp_path), uuid.uuid4())
    with pytest.raises(ToolError):
        toolbox.call("read_file", {"path": "missing.txt"})
    [span] = exported.get_finished_spans()
    assert span.name == "execute_tool read_file"
    assert span.attributes["error.type"] == "ToolError"
    assert span.status.status_code == StatusCode.ERROR


def test_a_call_the_operator_denied_is_an_error_span_marked_denied(exported, tmp_path):
    (tmp_path / "x").write_text("keep me")
    toolbox = telemetry.watch_tools(Toolbox(tmp_path), uuid.uuid4())
    output = toolbox.call("shell", {"command": "rm -rf x"})
    assert output.startswith("[LAW1]") and (tmp_path / "x").exists()
    [span] = exported.get_finished_spans()
    assert span.attributes["artoo.tool.denied"] is True
    assert span.attributes["error.type"] == "law1_denied"
    assert span.status.status_code == StatusCode.ERROR
    assert "artoo.tool.exit_code" not in span.attributes


def test_a_memory_query_sends_how_many_records_it_recalled(exported):
    run_id = uuid.uuid4()
    recall = MemoryRecall(task_id="count", space="intent:count", entity="env:local")
    with telemetry.searching_memory(run_id) as answered:
        answered(recall)
    [span] = exported.get_finished_spans()
    assert span.name == "search_memory"
    assert span.attributes["gen_ai.operation.name"] == "search_memory"
    assert span.attributes["gen_ai.agent.id"] == "R5"
    assert span.attributes["gen_ai.memory.record.count"] == 0
    assert span.attributes["artoo.memory.action"] == "Ignore"


def test_the_run_span_carries_each_ggs_decision_as_an_event(exported):
    run = ended_run()
    telemetry.send_run_span(run, decisions())
    [span] = exported.get_finished_spans()
    assert span.name == "invoke_workflow artoo"
    assert span.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert span.attributes["gen_ai.workflow.name"] == "artoo"
    assert span.attributes["artoo.run.status"] == "done"
    assert span.start_time == 1_777_636_800_250_000_000
    assert span.end_time - span.start_time == 9_000_000_000
    assert span.status.status_code == StatusCode.UNSET
    plan, final = span.events
    assert plan.name == final.name == "artoo.ggs.decision"
    assert dict(plan.attributes) == {
        "artoo.ggs.round": 0,
        "artoo.ggs.directive": "refine",
        "artoo.ggs.prev_directive": "init",
        "artoo.ggs.grad_l": -0.25,
        "artoo.ggs.control": "",
        "artoo.ggs.D": 0.5,
        "artoo.ggs.P": 0.25,
        "artoo.ggs.omega": 0.125,
        "artoo.ggs.L": 0.625,
        "artoo.ggs.blocked_tools": ("glob",),
    }
    assert plan.timestamp == span.start_time + 3_000_000_000
    assert (
        final.attributes["artoo.ggs.directive"],
        final.attributes["artoo.ggs.L"],
    ) == (
        "accept",
        0.0,
    )
    assert "secret" not in every_value([span])


def test_an_abandoned_run_is_an_error_span(exported):
    telemetry.send_run_span(ended_run("failed", "abandon"), [])
    [span] = exported.get_finished_spans()
    assert span.attributes["error.type"] == "failed"
    assert span.status.status_code == StatusCode.ERROR


def test_every_span_of_a_run_joins_its_trace_under_the_run_span(exported, tmp_path):
    run = ended_run()
    telemetry.watch_model(ScriptedModel(), run.id, "R3").chat([])
    toolbox = telemetry.watch_tools(Toolbox(tmp_path), run.id)
    toolbox.call("shell", {"command": "true"})
    with telemetry.searching_memory(run.id):
        pass
    telemetry.send_run_span(run, [])
    *children, root = exported.get_finished_spans()
    trace_id, span_id = telemetry.run_ids(run.id)
    assert root.name == "invoke_workflow artoo" and root.parent is None
    assert (root.context.trace_id, root.context.span_id) == (trace_id, span_id)
    assert trace_id == run.id.int
    assert [s.name for s in children] == [
        "chat qwen-1.5b",
        "execute_tool shell",
        "search_memory",
    ]
    assert {(s.context.trace_id, s.parent.span_id) for s in children} == {
        (trace_id, span_id)
    }
    assert len({s.context.span_id for s in exported.get_finished_spans()}) == 4


def test_batched_spans_are_sent_on_flush(tmp_path):
    exporter = InMemorySpanExporter()
    telemetry.start(exporter)
    try:
        toolbox = telemetry.watch_tools(Toolbox(tmp_path), uuid.uuid4())
        toolbox.call("glob", {"pattern": "*"})
        assert telemetry.flush(timeout_s=10)
        assert [s.name for s in exporter.get_finished_spans()] == ["execute_tool glob"]
    finally:
        telemetry.stop()


PROBE = """
import sys, uuid
import django
django.setup()
from artoo_web import telemetry

class Model:
    def chat(self, messages):
        return None

class Box:
    def call(self, name, args):
        return ""

model, box, run_id = Model(), Box(), uuid.uuid4()
assert telemetry.watch_model(model, run_id, "R1") is model
assert telemetry.watch_tools(box, run_id) is box
with telemetry.searching_memory(run_id) as answered:
    answered(None)
print(sorted(vars(model)), sorted(vars(box)), telemetry.is_started(),
      "opentelemetry.sdk.trace" in sys.modules, telemetry.run_ids(RUN))
"""


def probe(env: dict[str, str], run_id: uuid.UUID) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PROBE.replace("RUN", repr(str(run_id)))],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
            "DJANGO_SETTINGS_MODULE": "artoo_web.settings",
            "SECRET_KEY": "artoo-tests-only",
            "PYTHONPATH": str(ROOT),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_unset_endpoint_wraps_nothing_builds_no_provider_and_loads_no_sdk():
    run_id = uuid.uuid4()
    result = probe({}, run_id)
    assert result.returncode == 0, result.stderr
    ids = telemetry.run_ids(run_id)
    assert result.stdout.strip() == f"[] [] False False {ids}"


def test_an_endpoint_that_is_no_url_is_refused_at_start():
    result = probe({"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, uuid.uuid4())
    assert result.returncode != 0
    assert "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL" in (
        result.stderr
    )
