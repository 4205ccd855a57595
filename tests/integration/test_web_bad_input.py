"""The pages: the API's input rules, a CSP they pass, refusals logged in one line."""

from __future__ import annotations

import io
import logging
from html.parser import HTMLParser

import pytest
from django.test import override_settings

from artoo_web.models import BusMessage, Run, RunStatus

pytestmark = pytest.mark.django_db

FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def web(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def staff_web(client, staff_user):
    client.force_login(staff_user)
    return client


@pytest.mark.parametrize(
    "body",
    [b"raw_input=echo+%FF%FE", b"raw_input=echo+\xff", b"raw_input=echo+%ED%A0%80"],
    ids=["percent-escaped", "raw-byte", "encoded-surrogate"],
)
def test_the_task_form_refuses_text_that_is_not_utf8_like_the_api(web, body):
    response = web.post("/runs/new", data=body, content_type=FORM)

    assert response.status_code == 400
    assert "not valid UTF-8" in response.content.decode()
    assert not Run.objects.exists()


def test_the_answer_form_refuses_text_that_is_not_utf8_and_sends_nothing(web, run):
    Run.objects.filter(id=run.id).update(status=RunStatus.NEEDS_INPUT)

    response = web.post(
        f"/runs/{run.id}/answer", data=b"answer=%FF", content_type=FORM, follow=True
    )

    assert "not valid UTF-8" in response.content.decode()
    assert not BusMessage.objects.filter(run=run).exists()
    assert Run.objects.get(id=run.id).status == RunStatus.NEEDS_INPUT


def test_an_oversize_form_post_is_413_before_anything_reads_it(web):
    body = b"raw_input=" + b"x" * 3_000_000

    response = web.post("/runs/new", data=body, content_type=FORM)

    assert response.status_code == 413
    assert not Run.objects.exists()


class InlineCode(HTMLParser):
    """Collect what a strict CSP refuses: inline scripts, styles and handlers."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []
        self._script = False

    def handle_starttag(self, tag, attrs):
        names = dict(attrs)
        executable = names.get("type", "text/javascript") in (
            "text/javascript",
            "module",
        )
        self._script = tag == "script" and "src" not in names and executable
        if tag == "style":
            self.found.append("<style>")
        for name, value in attrs:
            if name.startswith("on") or name == "style":
                self.found.append(f"{tag} {name}={value!r}")
            if name in ("href", "src") and (value or "").startswith("javascript:"):
                self.found.append(f"{tag} {name}={value!r}")

    def handle_data(self, data):
        if self._script and data.strip():
            self.found.append(f"<script>{data.strip()[:60]}")

    def handle_endtag(self, tag):
        self._script = False


def inline_code(html: str) -> list[str]:
    parser = InlineCode()
    parser.feed(html)
    return parser.found


@override_settings(ARTOO_WEB_MEMORY_TIMEOUT_S=1)
def test_every_page_carries_a_csp_and_holds_nothing_inline_it_would_refuse(
    client, admin_user
):
    run = Run.objects.create(owner=admin_user, raw_input="echo hi")
    login = client.get("/login/")
    client.force_login(admin_user)
    pages = {"/login/": login}
    for path in (
        "/",
        f"/runs/{run.id}/",
        "/memory/",
        "/audit/",
        "/admin/",
        "/admin/memory/",
        "/admin/artoo_web/run/",
        f"/admin/artoo_web/run/{run.id}/change/",
    ):
        pages[path] = client.get(path)

    for path, page in pages.items():
        assert page.status_code == 200, path
        policy = page["Content-Security-Policy"]
        assert "script-src 'self'" in policy
        assert "unsafe" not in policy
        assert inline_code(page.content.decode()) == [], path


def test_api_replies_carry_the_csp_too(client):
    assert "default-src 'self'" in client.get("/api/runs")["Content-Security-Policy"]


@pytest.fixture
def console():
    """Return what the app's console log handler writes during the test."""
    handlers = [
        h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler
    ]
    assert handlers, "settings.LOGGING has no console handler"
    out = io.StringIO()
    previous = [h.setStream(out) for h in handlers]
    yield out
    for handler, stream in zip(handlers, previous, strict=True):
        handler.setStream(stream)


def test_a_403_is_logged_in_one_line(web, console):
    assert web.get("/audit/").status_code == 403

    lines = console.getvalue().splitlines()
    assert [line for line in lines if "Forbidden" in line]
    assert "Traceback" not in console.getvalue()
    assert len(lines) == 1


def test_a_bad_host_is_logged_in_one_line(client, console):
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400

    assert "Invalid HTTP_HOST" in console.getvalue()
    assert "Traceback" not in console.getvalue()
    assert len(console.getvalue().splitlines()) == 1


def test_a_404_is_logged_in_one_line(web, console):
    assert web.get(f"/runs/{'0' * 8}-0000-0000-0000-{'0' * 12}/").status_code == 404

    assert "Not Found" in console.getvalue()
    assert len(console.getvalue().splitlines()) == 1
