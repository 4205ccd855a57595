"""OpenTelemetry export of every run, after the GenAI semantic conventions.

With ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, each process sends its spans over
OTLP/HTTP to ``<endpoint>/v1/traces`` (docs/telemetry.md has every attribute)::

    invoke_workflow artoo    the run, sent when it ends; GGS's decisions are its events
    ├─ chat <model>          each model call of a role, with its token usage
    ├─ execute_tool <tool>   each tool call of R3
    └─ search_memory         each memory query R5 answers

A run is handled by several processes, so its spans join one trace without
shared state: the trace id is the run's UUID and the run span's id is derived
from it (``run_ids``); every other span names that span as its parent.

Unset, no provider is built, this module loads no part of the SDK and every
hook returns at once. Prompts, replies, tool arguments and outputs are never
exported (``artoo_web.spans`` says what is).
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
import time
import uuid
from contextlib import contextmanager, nullcontext

from celery import signals
from django.conf import settings
from django.db import transaction

from artoo_web import spans
from artoo_web.models import BusMessage, Run
from roles.tools.errors import ToolPaused

log = logging.getLogger(__name__)

ENDPOINT = settings.OTEL_EXPORTER_OTLP_ENDPOINT
DECISIONS = ("PlanDirective", "FinalResult")

_lock = threading.RLock()
_state: dict = {"provider": None, "tracer": None}
_run_span_ids = threading.local()


def run_ids(run_id) -> tuple[int, int]:
    """Return a run's trace id (its UUID) and its span's id (64 bits of a hash
    of it): the same in every process."""
    value = uuid.UUID(str(run_id))
    digest = hashlib.sha256(value.bytes).digest()
    return value.int, int.from_bytes(digest[:8], "big") or 1


class RunIds:
    """The SDK's id generator: random ids, but a run span's are its run's."""

    def generate_trace_id(self) -> int:
        forced = getattr(_run_span_ids, "ids", None)
        return forced[0] if forced else random.getrandbits(128) or 1

    def generate_span_id(self) -> int:
        forced = getattr(_run_span_ids, "ids", None)
        return forced[1] if forced else random.getrandbits(64) or 1

    def is_trace_id_random(self) -> bool:
        return True


def start(exporter, *, batch: bool = True) -> None:
    """Send this process's spans to ``exporter`` from now on: in batches from a
    background thread, or (``batch=False``) each as it ends."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON

    resource = Resource.create({"service.name": settings.OTEL_SERVICE_NAME})
    # Every span is kept: a sampler would decide a run's spans in each process
    # apart, and could keep some of them and drop the rest.
    provider = TracerProvider(
        sampler=ALWAYS_ON, resource=resource, id_generator=RunIds()
    )
    processor = BatchSpanProcessor if batch else SimpleSpanProcessor
    provider.add_span_processor(processor(exporter))
    with _lock:
        stop()
        _state.update(provider=provider, tracer=provider.get_tracer("artoo_web"))


@signals.worker_shutdown.connect
@signals.worker_process_shutdown.connect
def stop(**_signal) -> None:
    """Send what is pending and stop exporting (a worker that shuts down)."""
    with _lock:
        provider = _state["provider"]
        _state.update(provider=None, tracer=None)
    if provider is not None:
        provider.shutdown()


def flush(timeout_s: float = 10.0) -> bool:
    """Send every span that ended so far; return False when time ran out."""
    provider = _state["provider"]
    return provider is None or provider.force_flush(int(timeout_s * 1000))


def is_started() -> bool:
    return _state["provider"] is not None


def _tracer():
    """Return the tracer, built on first use from the settings; None when unset."""
    tracer = _state["tracer"]
    if tracer is not None or not ENDPOINT:
        return tracer
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter,
    )

    with _lock:
        if _state["tracer"] is None:
            start(OTLPSpanExporter(endpoint=ENDPOINT.rstrip("/") + "/v1/traces"))
        return _state["tracer"]


def _send(
    tracer, name: str, run_id, started: int, attributes: dict, *, kind=None, error=""
) -> None:
    """Send one span of the run, from ``started`` (ns) to now, as a child of
    the run's span; ``error`` is the error.type of a call that failed."""
    from opentelemetry import trace

    trace_id, span_id = run_ids(run_id)
    flags = trace.TraceFlags(trace.TraceFlags.SAMPLED)
    parent = trace.SpanContext(trace_id, span_id, is_remote=True, trace_flags=flags)
    try:
        span = tracer.start_span(
            name,
            context=trace.set_span_in_context(trace.NonRecordingSpan(parent)),
            kind=kind or trace.SpanKind.INTERNAL,
            attributes={**attributes, "artoo.run.id": str(run_id)},
            start_time=started,
        )
        _finish(span, error, time.time_ns())
    except Exception:
        log.warning("telemetry: a span of run %s was not sent", run_id, exc_info=True)


def _finish(span, error: str, ended: int) -> None:
    from opentelemetry.trace import Status, StatusCode

    if error:
        span.set_attribute("error.type", error)
        span.set_status(Status(StatusCode.ERROR))
    span.end(end_time=ended)


def watch_model(model, run_id, role: str):
    """Return ``model`` sending each of its chat calls as a span.

    Every model call of an LLM client goes through ``chat`` (``complete_json``
    and ``complete_text`` call it); the offline model makes no call.
    """
    tracer = _tracer()
    chat = getattr(model, "chat", None)
    if tracer is None or chat is None:
        return model
    from opentelemetry.trace import SpanKind

    base = spans.chat_attributes(model, role)
    name = f"chat {base.get('gen_ai.request.model', '')}".strip()

    def traced_chat(*args, **kwargs):
        started = time.time_ns()
        try:
            reply = chat(*args, **kwargs)
        except Exception as err:
            error = str(getattr(err, "status", None) or type(err).__name__)
            _send(
                tracer, name, run_id, started, base, kind=SpanKind.CLIENT, error=error
            )
            raise
        attributes = {**base, **spans.usage_attributes(reply)}
        _send(tracer, name, run_id, started, attributes, kind=SpanKind.CLIENT)
        return reply

    model.chat = traced_chat
    return model


def watch_tools(toolbox, run_id, role: str = "R3"):
    """Return ``toolbox`` sending each of its tool calls as a span.

    Only the tool's name and, for a shell command, its programs' names and
    exit code are sent: arguments and outputs may hold the user's data.
    """
    tracer = _tracer()
    if tracer is None:
        return toolbox
    call = toolbox.call

    def traced_call(name, args):
        started = time.time_ns()
        attributes = spans.tool_attributes(name, args, role)
        span = f"execute_tool {name}"
        try:
            output = call(name, args)
        except ToolPaused:
            attributes["artoo.tool.parked"] = True
            _send(tracer, span, run_id, started, attributes)
            raise
        except Exception as err:
            _send(tracer, span, run_id, started, attributes, error=type(err).__name__)
            raise
        attributes.update(spans.result_attributes(name, output))
        # A Law 1 denial is the tool's normal result, and nothing ran.
        denied = "law1_denied" if attributes.get("artoo.tool.denied") else ""
        _send(tracer, span, run_id, started, attributes, error=denied)
        return output

    toolbox.call = traced_call
    return toolbox


def searching_memory(run_id, role: str = "R5"):
    """Return a context that sends the memory query it wraps as a span; it
    yields a function to call with the MemoryRecall."""
    tracer = _tracer()
    if tracer is None:
        return nullcontext(lambda recall: None)
    return _memory_span(tracer, run_id, role)


@contextmanager
def _memory_span(tracer, run_id, role: str):
    started, name = time.time_ns(), "search_memory"
    attributes = {"gen_ai.operation.name": name, **spans.agent(role)}
    try:
        yield lambda recall: attributes.update(spans.memory_attributes(recall))
    except Exception as err:
        _send(tracer, name, run_id, started, attributes, error=type(err).__name__)
        raise
    _send(tracer, name, run_id, started, attributes)


def run_ended(run: Run) -> None:
    """Send the run's span, GGS's decisions as its events, once the
    transaction that ended the run commits."""
    tracer = _tracer()
    if tracer is None:
        return
    run_id = run.id
    transaction.on_commit(lambda: send_run(run_id))


def send_run(run_id) -> None:
    """Send an ended run's span, read from the database."""
    try:
        run = Run.objects.get(id=run_id)
        decisions = BusMessage.objects.filter(
            run_id=run_id, sender="R7", type__in=DECISIONS
        ).order_by("id")
        send_run_span(run, list(decisions))
    except Exception:
        log.warning("telemetry: the span of run %s was not sent", run_id, exc_info=True)


def send_run_span(run: Run, decisions: list[BusMessage]) -> None:
    """Send the ended run's span, from its creation to its end, with an event
    per GGS decision (``decisions``: R7's PlanDirective and FinalResult)."""
    tracer = _tracer()
    if tracer is None:
        return
    from opentelemetry.context import Context

    _run_span_ids.ids = run_ids(run.id)
    try:
        span = tracer.start_span(
            "invoke_workflow artoo",
            context=Context(),
            attributes=spans.run_attributes(run),
            start_time=_ns(run.created_at),
        )
    finally:
        _run_span_ids.ids = None
    for msg in decisions:
        span.add_event(
            "artoo.ggs.decision",
            spans.decision_attributes(msg.type, msg.round, msg.payload or {}),
            timestamp=_ns(msg.created_at),
        )
    error = run.status if run.status in ("failed", "cancelled") else ""
    _finish(span, error, _ns(run.finished_at or run.updated_at))


def _ns(moment) -> int:
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
