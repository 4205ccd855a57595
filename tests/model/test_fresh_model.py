"""The local model restarted on its port answers as a fresh server does.

At temperature 0 a reply still depends on what the server's prompt cache held
when the prompt came (a prompt partly served from the cache is computed in
other batches), so the control bench restarts the model before every run: each
run then gets the replies any other run of the same prompts would get.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from devtools.localmodel import LocalModel, LocalModelMissing

pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]

SYSTEM = 'You plan shell work. Reply with one JSON object: {"steps": [strings]}.'
ASKS = [
    "Count the lines of /srv/data/guests.txt, which may lack a final newline.",
    "Find the largest file under /var/log and print its size in bytes.",
]


def ask(port: int, text: str) -> str:
    body = {
        "model": "local",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": text},
        ],
        "temperature": 0,
        "seed": 42,
        "max_tokens": 96,
    }
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        json.dumps(body).encode(),
        {"Content-Type": "application/json", "Authorization": "Bearer local"},
    )
    with urllib.request.urlopen(request, timeout=600) as reply:
        return json.load(reply)["choices"][0]["message"]["content"]


def test_a_restarted_model_keeps_its_port_and_answers_as_a_fresh_one(tmp_path):
    model = LocalModel(tmp_path)
    try:
        model.start()
    except LocalModelMissing as missing:
        pytest.fail(str(missing))
    try:
        port = model.port
        first = [ask(port, text) for text in ASKS]
        model.restart()
        assert model.port == port
        again = [ask(port, text) for text in ASKS]
    finally:
        model.stop()

    assert all(reply.strip() for reply in first)
    assert again == first
