"""A scripted OpenAI-compatible chat-completions server for tests.

The server speaks real HTTP on a free local port, so the code under test uses
the real ``openai`` client. Replies are scripted per ``X-Artoo-Role`` header::

    with ScriptedLLMServer() as srv:
        srv.fault("R1", status=429, retry_after=0)
        srv.reply("R1", content='{"intent": "list files"}')
        env = srv.env()                      # OPENAI_BASE_URL/API_KEY/MODEL
        ...
        assert srv.requests[0].header("X-Artoo-Run") == run_id

For each request the server takes, in order: the next queued step of the
request's role, the next queued step for any role (``role=None``), the role's
responder, the shared responder, the role's default reply, the shared default
reply. When nothing applies it answers HTTP 418 with a message naming the role,
so a missing script is an explicit failure and never a silent empty reply.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from roles.llm import caps as llmcaps

ANY_ROLE = None
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass(frozen=True)
class ToolCallSpec:
    """One tool call the scripted model makes; ``arguments`` may be raw text."""

    name: str
    arguments: Mapping[str, Any] | str
    id: str = ""


@dataclass(frozen=True)
class Step:
    """One scripted answer: a reply (content or tool calls) or a fault."""

    content: str | None = None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    status: int = 200
    retry_after: float | str | None = None
    error_message: str = ""
    delay_s: float = 0.0
    drop: bool = False
    malformed: bool = False
    usage: tuple[int, int] | None = None
    finish_reason: str | None = None
    # As llama.cpp's server reports them: prompt tokens from its cache, and the
    # milliseconds it spent generating (``timings.predicted_ms``).
    cached_tokens: int | None = None
    generation_ms: float | None = None


@dataclass(frozen=True)
class RecordedRequest:
    """Everything the server saw of one request."""

    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]

    def header(self, name: str) -> str | None:
        """Return a header value, looked up case-insensitively."""
        return self.headers.get(name.lower())

    @property
    def role(self) -> str | None:
        """Return the ``X-Artoo-Role`` header."""
        return self.header("X-Artoo-Role")

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Return the chat messages sent."""
        return list(self.body.get("messages", []))

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """Return the ``tools`` field, or None when absent."""
        return self.body.get("tools")

    @property
    def model(self) -> str | None:
        """Return the model named in the request."""
        return self.body.get("model")

    @property
    def response_format(self) -> Mapping[str, Any] | None:
        """Return the ``response_format`` field, or None when absent."""
        return self.body.get("response_format")


Responder = Callable[[RecordedRequest], "Step | str | None"]


def _as_tool_calls(calls: Any) -> tuple[ToolCallSpec, ...]:
    specs = []
    for call in calls or ():
        if isinstance(call, ToolCallSpec):
            specs.append(call)
        elif isinstance(call, tuple):
            specs.append(ToolCallSpec(*call))
        else:
            specs.append(ToolCallSpec(**call))
    return tuple(specs)


class ScriptedLLMServer:
    """Serve scripted chat completions on ``127.0.0.1`` in a background thread."""

    def __init__(
        self,
        *,
        model: str = "scripted-model",
        api_key: str = "sk-test",
        context_tokens: int | None = None,
    ):
        self.model = model
        self.api_key = api_key
        # Like llama.cpp's server: reported on /props, and a request whose prompt
        # (estimated at 4 characters a token) exceeds it is answered with 400.
        self.context_tokens = context_tokens
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._queues: dict[str | None, deque[Step]] = defaultdict(deque)
        self._defaults: dict[str | None, Step] = {}
        self._responders: dict[str | None, Responder] = {}
        self._requests: list[RecordedRequest] = []
        self._counter = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -----------------------------------------------------------

    def reply(
        self,
        role: str | None = ANY_ROLE,
        content: str | None = None,
        *,
        tool_calls: Any = (),
        usage: tuple[int, int] | None = None,
        delay_s: float = 0.0,
        finish_reason: str | None = None,
        cached_tokens: int | None = None,
        generation_ms: float | None = None,
    ) -> None:
        """Queue one reply (content and/or tool calls) for ``role``."""
        self._enqueue(
            role,
            Step(
                content=content,
                tool_calls=_as_tool_calls(tool_calls),
                usage=usage,
                delay_s=delay_s,
                finish_reason=finish_reason,
                cached_tokens=cached_tokens,
                generation_ms=generation_ms,
            ),
        )

    def fault(
        self,
        role: str | None = ANY_ROLE,
        *,
        status: int = 500,
        retry_after: float | str | None = None,
        message: str = "scripted fault",
        delay_s: float = 0.0,
        drop: bool = False,
        malformed: bool = False,
        times: int = 1,
    ) -> None:
        """Queue ``times`` faults: an HTTP error, a slow reply, a drop or bad JSON."""
        step = Step(
            status=status,
            retry_after=retry_after,
            error_message=message,
            delay_s=delay_s,
            drop=drop,
            malformed=malformed,
        )
        for _ in range(times):
            self._enqueue(role, step)

    def default_reply(
        self, content: str | None = None, *, role: str | None = ANY_ROLE, **kwargs
    ) -> None:
        """Answer ``role`` (or everyone) with this reply whenever nothing is queued."""
        step = Step(
            content=content,
            tool_calls=_as_tool_calls(kwargs.pop("tool_calls", ())),
            **kwargs,
        )
        with self._lock:
            self._defaults[role] = step

    def responder(self, fn: Responder, *, role: str | None = ANY_ROLE) -> None:
        """Answer dynamically: ``fn(request)`` gives a Step, a text or None."""
        with self._lock:
            self._responders[role] = fn

    def _enqueue(self, role: str | None, step: Step) -> None:
        with self._lock:
            self._queues[role].append(step)

    def pending(self, role: str | None = ANY_ROLE) -> int:
        """Return how many queued steps for ``role`` were not yet consumed."""
        with self._lock:
            return len(self._queues[role])

    # -- inspection ----------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Return a snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, role: str) -> list[RecordedRequest]:
        """Return the requests whose ``X-Artoo-Role`` is ``role``."""
        return [r for r in self.requests if r.role == role]

    @property
    def base_url(self) -> str:
        """Return the OpenAI-style base URL (``http://127.0.0.1:<port>/v1``)."""
        if self._httpd is None:
            raise RuntimeError("ScriptedLLMServer is not running")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def env(self, **overrides: str) -> dict[str, str]:
        """Return an environment mapping that points the LLM client here."""
        values = {
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": self.api_key,
            "OPENAI_MODEL": self.model,
        }
        values.update(overrides)
        return values

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> ScriptedLLMServer:
        """Bind a free port and serve in a daemon thread."""
        # A new server may get a port an earlier one had: forget what the
        # client learned about endpoints (tool protocol, formats, window).
        llmcaps.forget_all()
        handler = type("Handler", (_Handler,), {"script": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-llm-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake slow replies and close the socket."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- serving -------------------------------------------------------------

    def _next_step(self, request: RecordedRequest) -> Step | None:
        role = request.role
        with self._lock:
            self._requests.append(request)
            for key in (role, ANY_ROLE):
                if self._queues[key]:
                    return self._queues[key].popleft()
            responders = [self._responders.get(k) for k in (role, ANY_ROLE)]
            defaults = [self._defaults.get(k) for k in (role, ANY_ROLE)]
        for fn in responders:
            if fn is not None:
                answer = fn(request)
                if isinstance(answer, str):
                    return Step(content=answer)
                if answer is not None:
                    return answer
        return next((d for d in defaults if d is not None), None)

    def _completion_body(self, request: RecordedRequest, step: Step) -> dict:
        with self._lock:
            self._counter += 1
            number = self._counter
        message: dict[str, Any] = {"role": "assistant", "content": step.content}
        if step.tool_calls:
            message["tool_calls"] = [
                _tool_call_json(call, f"call_{number}_{i}")
                for i, call in enumerate(step.tool_calls)
            ]
        prompt, completion = step.usage or _estimate_usage(request, step)
        finish = step.finish_reason or ("tool_calls" if step.tool_calls else "stop")
        body: dict[str, Any] = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 1_700_000_000 + number,
            "model": request.model or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        if step.cached_tokens is not None:
            details = {"cached_tokens": step.cached_tokens}
            body["usage"]["prompt_tokens_details"] = details
        if step.generation_ms is not None:
            body["timings"] = {"predicted_ms": step.generation_ms}
        return body


def _tool_call_json(call: ToolCallSpec, default_id: str) -> dict[str, Any]:
    args = call.arguments
    text = args if isinstance(args, str) else json.dumps(dict(args))
    return {
        "id": call.id or default_id,
        "type": "function",
        "function": {"name": call.name, "arguments": text},
    }


def _estimate_usage(request: RecordedRequest, step: Step) -> tuple[int, int]:
    sent = sum(len(str(m.get("content") or "")) for m in request.messages)
    made = len(step.content or "") + sum(len(str(c.arguments)) for c in step.tool_calls)
    return sent // 4 + 1, made // 4 + 1


class _Handler(BaseHTTPRequestHandler):
    script: ScriptedLLMServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Keep test output quiet."""

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(
                200, {"object": "list", "data": [{"id": self.script.model}]}
            )
        elif self.path.rstrip("/") == "/props" and self.script.context_tokens:
            n_ctx = self.script.context_tokens
            self._send_json(200, {"default_generation_settings": {"n_ctx": n_ctx}})
        else:
            self._send_error(404, f"no route {self.path}")

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path not in CHAT_PATHS:
            self._send_error(404, f"no route {self.path}")
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as err:
            self._send_error(400, f"request body is not JSON: {err}")
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = RecordedRequest(path=self.path, headers=headers, body=body)
        window = self.script.context_tokens
        prompt = _estimate_usage(request, Step())[0]
        if window and prompt > window:
            with self.script._lock:
                self.script._requests.append(request)
            self._send_error(
                400,
                f"the request exceeds the available context size ({prompt} > "
                f"{window} tokens)",
            )
            return
        step = self.script._next_step(request)
        if step is None:
            self._send_error(
                418, f"ScriptedLLMServer: nothing scripted for role {request.role!r}"
            )
            return
        self._play(request, step)

    def _play(self, request: RecordedRequest, step: Step) -> None:
        if step.delay_s and self.script._stopping.wait(step.delay_s):
            return
        if step.drop:
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if step.malformed:
            self._send_raw(200, b'{"id": "chatcmpl-broken", "choices": [{"index": 0, ')
            return
        if step.status != 200:
            extra = {}
            if step.retry_after is not None:
                extra["Retry-After"] = str(step.retry_after)
            self._send_error(step.status, step.error_message, extra)
            return
        self._send_json(200, self.script._completion_body(request, step))

    def _send_error(
        self, status: int, message: str, headers: Mapping[str, str] = {}
    ) -> None:
        body = {"error": {"message": message, "type": "scripted_error", "code": status}}
        self._send_json(status, body, headers)

    def _send_json(
        self, status: int, body: Any, headers: Mapping[str, str] = {}
    ) -> None:
        self._send_raw(status, json.dumps(body).encode(), headers)

    def _send_raw(
        self, status: int, data: bytes, headers: Mapping[str, str] = {}
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (timeout or cancellation); nothing to answer.
            pass
