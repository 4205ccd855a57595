"""The scripted model server itself: routing, concurrency and shutdown."""

from __future__ import annotations

import http.client
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from roles.llm.client import client_for
from tests.llm_server import ScriptedLLMServer, Step

HELLO = [{"role": "user", "content": "hello"}]


def post(server, path, body):
    host, port = server.base_url.split("//")[1].split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = json.loads(response.read())
    conn.close()
    return response.status, data


def test_both_chat_paths_answer_in_the_openai_shape(llm_server):
    llm_server.default_reply("hi")
    for path in ("/v1/chat/completions", "/chat/completions"):
        status, body = post(llm_server, path, {"model": "m", "messages": HELLO})
        assert status == 200
        assert body["object"] == "chat.completion"
        assert body["model"] == "m"
        assert body["choices"][0]["message"] == {"role": "assistant", "content": "hi"}
        assert body["usage"]["total_tokens"] == (
            body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
        )


def test_unknown_paths_are_404(llm_server):
    status, body = post(llm_server, "/v1/embeddings", {})
    assert status == 404 and "no route" in body["error"]["message"]


def test_role_queue_comes_before_the_shared_queue_and_defaults(llm_server):
    llm_server.reply(None, "shared")
    llm_server.reply("R1", "mine")
    llm_server.default_reply("fallback")
    with client_for("R1", llm_server.env()) as llm:
        texts = [llm.complete_text(HELLO)[0] for _ in range(3)]
    assert texts == ["mine", "shared", "fallback"]


def test_responder_sees_the_request_and_may_decline(llm_server):
    def echo_last(request):
        if request.messages[-1]["content"] == "pass":
            return None
        return Step(content=request.messages[-1]["content"].upper())

    llm_server.responder(echo_last, role="R2")
    llm_server.default_reply("declined", role="R2")
    with client_for("R2", llm_server.env()) as llm:
        loud = llm.complete_text([{"role": "user", "content": "plan"}])[0]
        passed = llm.complete_text([{"role": "user", "content": "pass"}])[0]
    assert (loud, passed) == ("PLAN", "declined")


def test_concurrent_roles_each_get_their_own_script(llm_server):
    roles = ["R1", "R2", "R3", "R4a", "R4b", "R5"] * 4
    for index, role in enumerate(roles):
        llm_server.reply(role, f"{role}-{roles[:index].count(role)}")

    def ask(role):
        with client_for(role, llm_server.env(), run_id=f"run-{role}") as llm:
            return role, llm.complete_text(HELLO)[0]

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(ask, roles))
    for role in set(roles):
        got = sorted(text for r, text in answers if r == role)
        assert got == [f"{role}-{n}" for n in range(4)]
    assert len(llm_server.requests) == len(roles)
    assert all(r.header("X-Artoo-Run") == f"run-{r.role}" for r in llm_server.requests)


def test_stop_wakes_a_slow_reply_which_ends_its_connection():
    arrived = threading.Event()

    def stall(request):
        arrived.set()
        return Step(content="late", delay_s=60)

    server = ScriptedLLMServer().start()
    server.responder(stall)
    host, port = server.base_url.split("//")[1].split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", "/v1/chat/completions", json.dumps({"messages": HELLO}))
    assert arrived.wait(5)
    server.stop()
    # A still-sleeping handler would surface as a timeout, not a disconnect.
    with pytest.raises(http.client.RemoteDisconnected):
        conn.getresponse()
    conn.close()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
