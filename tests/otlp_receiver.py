"""An OTLP/HTTP trace receiver for tests: what a collector gets, decoded.

It speaks real HTTP on a free local port and decodes each
``ExportTraceServiceRequest`` posted to ``/v1/traces`` with opentelemetry-proto::

    with OtlpReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        ...
        [run] = receiver.spans_named("invoke_workflow artoo")
        assert run.attributes["gen_ai.operation.name"] == "invoke_workflow"
"""

from __future__ import annotations

import gzip
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the receiver decoded it; ids as integers."""

    name: str
    trace_id: int
    span_id: int
    parent_span_id: int | None
    kind: int
    start_ns: int
    end_ns: int
    status_code: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)


def value_of(any_value) -> Any:
    """Return the Python value of an OTLP ``AnyValue``."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return attributes_of(any_value.kvlist_value.values)
    return getattr(any_value, kind) if kind else None


def attributes_of(pairs) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs}


def spans_of(request: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    """Return every span of one export request."""
    found = []
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=int.from_bytes(span.trace_id, "big"),
                        span_id=int.from_bytes(span.span_id, "big"),
                        parent_span_id=int.from_bytes(span.parent_span_id, "big")
                        if span.parent_span_id
                        else None,
                        kind=span.kind,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        status_code=span.status.code,
                        attributes=attributes_of(span.attributes),
                        events=[
                            (e.name, attributes_of(e.attributes)) for e in span.events
                        ],
                        resource=resource,
                    )
                )
    return found


class OtlpReceiver:
    """Collect the spans posted to ``<endpoint>/v1/traces`` until closed."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 — http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != TRACES_PATH:
                    self.send_error(404)
                    return
                receiver.take(decoded(body, self.headers.get("Content-Encoding")))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self._lock:
            self.requests += 1
            self.spans.extend(spans_of(request))

    def spans_named(self, prefix: str) -> list[ReceivedSpan]:
        """Return the spans received so far whose name starts with ``prefix``."""
        with self._lock:
            return [s for s in self.spans if s.name.startswith(prefix)]

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def decoded(body: bytes, encoding: str | None) -> bytes:
    """Return the request body without its content encoding (gzip, deflate)."""
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    return body
