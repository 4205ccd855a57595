"""Every URL, API endpoint and websocket refuses anonymous and cross-user access."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import URLPattern, URLResolver

from tests.reliability.harness import Api, Db, Http, WsClosed, csrf_token, ws_connect

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(180)]

PUBLIC = {"login/", "logout/"}
REFUSED = {302, 401, 403, 404, 405}


def routes() -> list[str]:
    """Return every non-admin route of artoo_web.urls (admin is checked apart)."""
    from artoo_web import urls

    found = []
    for entry in urls.urlpatterns:
        if isinstance(entry, URLPattern):
            found.append(str(entry.pattern))
        else:
            assert isinstance(entry, URLResolver)
            assert str(entry.pattern) == "admin/", f"unchecked include {entry.pattern}"
    return found


def fill(route: str, values: dict[str, str]) -> str:
    def value(match: re.Match) -> str:
        converter, name = match.group(1) or "str", match.group(2)
        if name in values:
            return values[name]
        return {"uuid": str(uuid.uuid4()), "int": "1"}.get(converter, "x")

    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", value, route)


@pytest.fixture(scope="module")
def paths(site):
    run_id = site.waiting[1]
    values = {"run_id": run_id, "approval_id": site.approval_of(run_id)}
    return {route: fill(route, values) for route in routes() if route not in PUBLIC}


def snapshot(site) -> list[tuple]:
    return Db(site.cluster).rows(
        "SELECT r.id, r.status, a.status, (SELECT count(*) FROM artoo_web_busmessage "
        "m WHERE m.run_id = r.id) FROM artoo_web_run r LEFT JOIN artoo_web_approval a "
        "ON a.run_id = r.id ORDER BY r.id"
    )


def test_anonymous_users_get_nothing_from_any_url(site, paths):
    anonymous = Http(site.cluster.url)
    before = snapshot(site)
    for route, path in paths.items():
        for reply in (anonymous.get(path), anonymous.post_form(path, {})):
            assert reply.status in REFUSED, (route, reply.status)
            if reply.status == 302:
                assert "/login/" in reply.headers["Location"], route
            assert site.waiting[1] not in reply.text, route
    assert snapshot(site) == before


def test_another_users_runs_are_not_found_by_page_or_api(site, paths):
    bob_web = Http(site.cluster.url).login("bob")
    token = csrf_token(bob_web.get("/").text)
    before = snapshot(site)
    for route, path in paths.items():
        if "run_id" not in route:
            continue
        by_session = (
            bob_web.get(path),
            bob_web.post_form(path, {"csrfmiddlewaretoken": token}),
        )
        by_token = (
            site.bob.get(path),
            site.bob.post_json(path, {"decision": "approve", "answer": "x"}),
        )
        # A page takes a session, never a token; the API a token, never a session.
        mine, foreign = (
            (by_token, by_session)
            if route.startswith("api/")
            else (by_session, by_token)
        )
        for reply in mine:
            assert reply.status in {404, 405}, (route, reply.status)
        for reply in foreign:
            assert reply.status in REFUSED, (route, reply.status)
            assert site.waiting[1] not in reply.text, route
    listed = site.bob.get("/api/runs").json()["runs"]
    assert not {r["id"] for r in listed} & set(site.waiting)
    assert site.waiting[1] not in bob_web.get("/").text
    assert snapshot(site) == before


def test_staff_sees_every_run_and_only_staff_reach_the_admin(site):
    assert site.carol.get(f"/api/runs/{site.waiting[1]}").status == 200
    for who in (Http(site.cluster.url), Http(site.cluster.url).login("alice")):
        for path in ("/admin/", "/admin/artoo_web/run/", "/admin/auth/user/"):
            reply = who.get(path)
            assert reply.status == 302, path
            assert "/login/?next=" in reply.headers["Location"], path
    carol = Http(site.cluster.url).login("carol")
    assert carol.get("/admin/").status == 200


def test_websocket_refuses_anonymous_other_users_and_forged_runs(site):
    run_id = site.waiting[1]
    alice = "sessionid=" + Http(site.cluster.url).login("alice").cookie("sessionid")
    bob = "sessionid=" + Http(site.cluster.url).login("bob").cookie("sessionid")
    carol = "sessionid=" + Http(site.cluster.url).login("carol").cookie("sessionid")
    for path, cookie in (
        (f"/ws/runs/{run_id}/", ""),
        (f"/ws/runs/{run_id}/", bob),
        (f"/ws/runs/{uuid.uuid4()}/", alice),
        (f"/ws/runs/{run_id}/?after=-1", alice),
    ):
        with pytest.raises(WsClosed):
            ws = ws_connect(site.cluster, path, cookie)
            ws.receive(timeout=5)
    for cookie in (alice, carol):
        ws = ws_connect(site.cluster, f"/ws/runs/{run_id}/", cookie)
        assert '"id"' in ws.receive(timeout=5)
        ws.close()


def test_forms_require_csrf(site):
    web = Http(site.cluster.url).login("alice")
    before = snapshot(site)
    refused = web.post_form("/runs/new", {"raw_input": "echo no-csrf"})
    assert refused.status == 403
    assert snapshot(site) == before
    token = csrf_token(web.get("/").text)
    accepted = web.post_form(
        "/runs/new", {"raw_input": "echo with-csrf", "csrfmiddlewaretoken": token}
    )
    assert accepted.status == 302


def test_api_tokens_are_revocable(site):
    secret = site.cluster.manage("create_api_token", "alice").stdout.strip()
    api = Api(site.cluster.url, secret)
    assert api.get("/api/runs").status == 200
    prefix = secret.removeprefix("artoo_")[:8]
    revoked = site.cluster.manage("create_api_token", "alice", "--revoke", prefix)
    assert "Revoked 1" in revoked.stdout
    reply = api.get("/api/runs")
    assert reply.status == 401 and "token" in reply.json()["error"]
    assert site.alice.get("/api/runs").status == 200  # other tokens still work
