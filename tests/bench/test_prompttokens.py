"""Each role's fixed prompt counted by a server's template and tokenizer."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.prompttokens import fixed_prompts, main, sections
from roles import perceiver


class _Handler(BaseHTTPRequestHandler):
    """llama-server's /apply-template and /tokenize, a token being a word."""

    def do_POST(self):  # noqa: N802 - the standard library's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/tokenize":
            reply = {"tokens": list(range(len(body["content"].split())))}
        elif self.path == "/apply-template":
            turns = " ".join(f"<{m['role']}> {m['content']}" for m in body["messages"])
            tools = " ".join(t["function"]["name"] for t in body.get("tools", ()))
            reply = {"prompt": f"{turns} {tools}".strip()}
        else:
            self.send_error(404)
            return
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()


def test_each_role_is_counted_whole_and_by_section(server, capsys, tmp_path):
    assert main(["--url", server]) == 0
    table = capsys.readouterr().out
    r1 = len(perceiver.TASK_SYSTEM.split()) + 2  # "<system>" and "<user>"
    assert f"| R1 perceiver | {r1} | {r1} |  |" in table
    # R3 alone sends tools: a token per tool name here, beyond its system prompt.
    r3 = next(f for f in fixed_prompts(tmp_path) if f.role == "R3 executor")
    row = next(line for line in table.splitlines() if line.startswith("| R3 "))
    assert row.rstrip(" |").endswith(f"| {len(r3.tools)}")
    assert "R2 planner, sections by tokens:" in table


def test_sections_are_the_paragraphs_between_blank_lines():
    assert sections("a b\n\n\nc\n  \n\nd e f\n") == ["a b", "c", "d e f"]


def test_a_server_that_does_not_answer_is_said_and_nothing_printed(capsys):
    assert main(["--url", "http://127.0.0.1:9"]) == 2
    said = capsys.readouterr()
    assert said.out == "" and "did not answer" in said.err
