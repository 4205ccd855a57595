"""Talk to a running cluster from outside: its JSON API, pages and SQLite file.

Everything here talks to the cluster the way a user or an operator would (HTTP,
``manage.py``) or reads its SQLite file read-only; nothing imports the
cluster's Django. The reliability suite, the real-model tier and the benches
share it::

    api = Api(cluster.url, create_user(cluster, "alice"))
    run_id = api.submit("count the lines of data.txt", control="retry")
    api.wait_terminal([run_id], timeout=60)
"""

from __future__ import annotations

import http.cookiejar
import json
import re
import sqlite3
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from devtools.cluster import Cluster

TERMINAL = ("done", "failed", "cancelled")
PASSWORD = "reliability-pass-123"  # noqa: S105 (test users of private clusters)


def wait_for(predicate, timeout: float, interval: float = 0.1, what: str = ""):
    """Poll ``predicate`` until truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what or predicate} not met within {timeout} s")
        time.sleep(interval)


def create_user(cluster: Cluster, username: str, *, staff: bool = False) -> str:
    """Create a user (password ``PASSWORD``) and return a fresh API token."""
    code = (
        "from django.contrib.auth import get_user_model; "
        f"get_user_model().objects.create_user({username!r}, "
        f"password={PASSWORD!r}, is_staff={staff!r})"
    )
    cluster.manage("shell", "-c", code)
    return cluster.manage("create_api_token", username).stdout.strip()


def seed_shared(cluster: Cluster, username: str, name: str, text: str = "kept\n"):
    """Put a file in the user's shared area (the cluster runs with
    ``ARTOO_USER_SHARED=1``) before a run, and return its path as text: a file
    that was there before the run, so Law 1 asks before a run changes it."""
    code = (
        "from django.contrib.auth import get_user_model; "
        "from artoo_web import runtime; "
        f"user = get_user_model().objects.get(username={username!r}); "
        f"path = runtime.shared_area(user.id) / {name!r}; "
        f"path.write_text({text!r}); "
        "print(path)"
    )
    # The shell may print a line of its own first (the objects it imported).
    return cluster.manage("shell", "-c", code).stdout.strip().splitlines()[-1]


@dataclass
class Reply:
    status: int
    body: bytes
    headers: dict

    def json(self):
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Http:
    """A tiny HTTP client with a cookie jar that never follows redirects."""

    def __init__(self, base_url: str, token: str = ""):
        self.base_url = base_url
        self.token = token
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect()
        )

    def request(
        self,
        method: str,
        path: str,
        data: bytes | None = None,
        headers: dict | None = None,
        timeout: float = 30,
    ) -> Reply:
        headers = dict(headers or {})
        if self.token:
            headers.setdefault("Authorization", f"Bearer {self.token}")
        req = urllib.request.Request(  # noqa: S310 (base_url is the cluster's http URL)
            self.base_url + path, data=data, method=method, headers=headers
        )
        try:
            with self.opener.open(req, timeout=timeout) as resp:
                return Reply(resp.status, resp.read(), dict(resp.headers))
        except urllib.error.HTTPError as err:
            return Reply(err.code, err.read(), dict(err.headers))

    def get(self, path: str, **kw) -> Reply:
        return self.request("GET", path, **kw)

    def post_json(self, path: str, payload, **kw) -> Reply:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        headers = {"Content-Type": "application/json", **kw.pop("headers", {})}
        return self.request("POST", path, data=data, headers=headers, **kw)

    def post_form(self, path: str, fields: dict, **kw) -> Reply:
        data = urllib.parse.urlencode(fields).encode()
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Referer": self.base_url + "/",
            **kw.pop("headers", {}),
        }
        return self.request("POST", path, data=data, headers=headers, **kw)

    def cookie(self, name: str) -> str:
        return next((c.value for c in self.jar if c.name == name), "")

    def login(self, username: str, password: str = PASSWORD) -> Http:
        """Log in through the login form (with its CSRF token)."""
        page = self.get("/login/")
        token = csrf_token(page.text)
        reply = self.post_form(
            "/login/",
            {"username": username, "password": password, "csrfmiddlewaretoken": token},
        )
        assert reply.status == 302, (reply.status, reply.text[:300])
        assert self.cookie("sessionid")
        return self


def csrf_token(html: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert match, "no CSRF token in the page"
    return match.group(1)


class Api(Http):
    """The JSON API of one user (Bearer token)."""

    def submit(self, text: str, control: str = "") -> str:
        """Submit a task (under ``control`` when given); return the run id."""
        body = {"input": text, **({"control": control} if control else {})}
        reply = self.post_json("/api/runs", body)
        assert reply.status == 201, (reply.status, reply.text[:300])
        return reply.json()["id"]

    def run(self, run_id: str) -> dict:
        reply = self.get(f"/api/runs/{run_id}")
        assert reply.status == 200, (reply.status, reply.text[:300])
        return reply.json()

    def messages(self, run_id: str, after: int = 0) -> list[dict]:
        found = []
        while True:
            reply = self.get(f"/api/runs/{run_id}/messages?after={after}")
            assert reply.status == 200, (reply.status, reply.text[:300])
            page = reply.json()["messages"]
            if not page:
                return found
            found += page
            after = page[-1]["id"]

    def wait_terminal(self, run_ids, timeout: float) -> dict[str, dict]:
        """Wait until every run is terminal; return run id → run JSON."""
        done: dict[str, dict] = {}

        def all_done():
            for run_id in run_ids:
                if run_id not in done:
                    try:
                        data = self.run(run_id)
                    except (OSError, AssertionError):
                        return False
                    if data["status"] in TERMINAL:
                        done[run_id] = data
            return len(done) == len(run_ids)

        pending = lambda: sorted(set(run_ids) - set(done))  # noqa: E731
        try:
            wait_for(all_done, timeout, interval=0.2, what="runs terminal")
        except AssertionError:
            raise AssertionError(f"runs not terminal: {pending()}") from None
        return done


class Db:
    """Read-only queries on a cluster's SQLite file."""

    def __init__(self, cluster: Cluster):
        self.path = cluster.db_path

    def rows(self, sql: str, params=()) -> list[tuple]:
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def value(self, sql: str, params=()):
        return self.rows(sql, params)[0][0]

    def undelivered(self, run_ids=None) -> int:
        sql = "SELECT count(*) FROM artoo_web_busmessage WHERE delivered_at IS NULL"
        params: list = []
        if run_ids is not None:
            ids = [r.replace("-", "") for r in run_ids]
            sql += f" AND run_id IN ({','.join('?' * len(ids))})"
            params += ids
        return self.value(sql, params)

    def undelivered_of_type(self, run_id: str, type_: str) -> list[int]:
        return [
            r[0]
            for r in self.rows(
                "SELECT id FROM artoo_web_busmessage WHERE run_id = ? AND type = ? "
                "AND delivered_at IS NULL ORDER BY id",
                (run_id.replace("-", ""), type_),
            )
        ]

    def final_results(self, run_id: str) -> int:
        return self.value(
            "SELECT count(*) FROM artoo_web_busmessage "
            "WHERE run_id = ? AND type = 'FinalResult'",
            (run_id.replace("-", ""),),
        )

    def trace_kinds(self, run_id: str) -> list[str]:
        return [
            r[0]
            for r in self.rows(
                "SELECT kind FROM artoo_web_traceevent WHERE run_id = ? ORDER BY id",
                (run_id.replace("-", ""),),
            )
        ]

    def message_ids(self, run_id: str) -> list[int]:
        return [
            r[0]
            for r in self.rows(
                "SELECT id FROM artoo_web_busmessage WHERE run_id = ? ORDER BY id",
                (run_id.replace("-", ""),),
            )
        ]
