"""Bad input through the API and the web, end to end against a real cluster."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.reliability.harness import Db, Http, csrf_token, wait_for

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(180)]

MEGABYTE = "x" * 1_000_000


def run_count(site) -> int:
    return Db(site.cluster).value("SELECT count(*) FROM artoo_web_run")


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"", "empty"),
        (b'{"input": "  \\t\\n  "}', "empty"),
        (json.dumps({"input": MEGABYTE}).encode(), "limit"),
        (b'{"input": "ls\\u0000"}', "NUL"),
        (b'{"input": "ls \xff\xfe"}', "UTF-8"),
        (b'{"input": ["ls"]}', "string"),
    ],
    ids=["empty", "whitespace", "megabyte", "nul", "not-utf8", "list"],
)
def test_bad_api_input_gets_a_clear_error_and_creates_nothing(site, body, needle):
    before = run_count(site)
    reply = site.alice.post_json("/api/runs", body)
    assert reply.status == 400, reply.text[:200]
    assert needle in reply.json()["error"]
    assert run_count(site) == before


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty"),
        (" \r\n\t ", "empty"),
        (MEGABYTE, "limit"),
        ("ls\x00", "Null characters"),
    ],
    ids=["empty", "whitespace", "megabyte", "nul"],
)
def test_bad_form_input_gets_a_clear_error_and_creates_nothing(site, text, needle):
    web = Http(site.cluster.url).login("alice")
    token = csrf_token(web.get("/").text)
    before = run_count(site)
    reply = web.post_form(
        "/runs/new", {"raw_input": text, "csrfmiddlewaretoken": token}
    )
    assert reply.status == 400
    assert needle in reply.text
    assert run_count(site) == before


def test_script_in_task_and_in_model_output_is_rendered_escaped(site):
    payload = "<script>alert('pwned')</script>"
    run_id = site.alice.submit(f'echo "{payload}" # expect: pwned')
    run = site.alice.wait_terminal([run_id], 60)[run_id]
    assert run["input"].startswith(f'echo "{payload}"')
    outputs = json.dumps(site.alice.messages(run_id))
    assert "alert('pwned')" in outputs  # the command's output carries the script

    page = Http(site.cluster.url).login("alice").get(f"/runs/{run_id}/")

    assert page.status == 200
    assert "<script>alert(" not in page.text
    assert "&lt;script&gt;alert(" in page.text


def test_cjk_and_emoji_are_accepted_and_stored_intact(site):
    text = "echo 你好，世界 🚀🌍 café # expect: 你好"
    run_id = site.alice.submit(text)
    run = site.alice.wait_terminal([run_id], 60)[run_id]
    stored = Db(site.cluster).value(
        "SELECT raw_input FROM artoo_web_run WHERE id = ?", (run_id.replace("-", ""),)
    )
    assert stored == text == run["input"]
    assert run["status"] == "done"
    assert "你好，世界 🚀🌍 café" in json.dumps(run["final_result"], ensure_ascii=False)


@pytest.mark.parametrize(
    "path",
    [
        "/api/runs/{forged}",
        "/api/runs/{forged}/messages",
        "/api/runs/not-a-uuid",
        "/api/runs/{forged}/cancel",
        "/api/runs/{forged}/answer",
        "/api/runs/{forged}/approvals/{forged}",
    ],
)
def test_forged_run_ids_are_not_found_and_change_nothing(site, path):
    before = run_count(site)
    url = path.format(forged=uuid.uuid4())
    get, post = site.alice.get(url), site.alice.post_json(url, {"decision": "deny"})
    assert get.status in (404, 405) and post.status in (404, 405)
    assert 404 in (get.status, post.status)
    assert run_count(site) == before


def test_approval_ids_of_another_run_and_replayed_decisions_are_refused(site):
    first, second = site.waiting
    approval = site.approval_of(first)

    crossed = site.alice.post_json(
        f"/api/runs/{second}/approvals/{approval}", {"decision": "approve"}
    )
    assert crossed.status == 404
    assert site.alice.run(first)["pending_approvals"][0]["id"] == approval

    denied = site.alice.post_json(
        f"/api/runs/{first}/approvals/{approval}", {"decision": "deny"}
    )
    replayed = site.alice.post_json(
        f"/api/runs/{first}/approvals/{approval}", {"decision": "approve"}
    )

    assert denied.status == 200 and denied.json()["status"] == "denied"
    assert replayed.status == 409 and "already denied" in replayed.json()["error"]
    run = site.alice.wait_terminal([first], 60)[first]
    assert run["status"] == "failed"
    assert Path(site.kept[0]).read_text() == "kept\n"  # rm never ran
    decisions = [
        m for m in site.alice.messages(first) if m["type"] == "ApprovalDecision"
    ]
    assert [d["payload"]["decision"] for d in decisions] == ["deny"]
    wait_for(lambda: not site.alice.run(first)["pending_approvals"], 10)
