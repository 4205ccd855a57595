"""The projects API and pages: tokens, ownership, CSRF, and clear 400s."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from artoo_web import api_tokens, projectrepo
from artoo_web.models import BusMessage, Project

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def roots(settings, tmp_path):
    settings.WORKSPACE = tmp_path / "workspace"
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    settings.ARTOO_ALLOWED_PATHS = [allowed]
    return allowed


@pytest.fixture
def auth(user):
    _, secret = api_tokens.create(user)
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def other_auth(other_user):
    _, secret = api_tokens.create(other_user)
    return {"Authorization": f"Bearer {secret}"}


def create(client, headers, **data):
    return client.post(
        "/api/projects", data=data, content_type="application/json", headers=headers
    )


def commits(path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(path), "log", "--format=%s"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split("\n")[:-1]


def test_a_project_in_a_new_directory_is_a_git_repo_asking_its_scope_agent(
    client, auth, user
):
    response = create(client, auth, request="Add a --json flag")
    assert response.status_code == 201
    project = Project.objects.get(id=response.json()["id"])
    assert (project.owner, project.status) == (user, "scope")
    assert commits(project.directory) == ["artoo: project start"]
    ask = BusMessage.objects.get(project=project)
    assert (ask.sender, ask.recipient, ask.type) == (
        "Project",
        "Scope",
        "AskScopeAgent",
    )
    assert ask.payload["user_request"] == "Add a --json flag"
    assert project.state["awaiting"] == ask.payload["request_id"]


def test_an_allowed_directory_that_is_no_repository_is_initialised(client, auth, roots):
    (roots / "cli").mkdir()
    (roots / "cli" / "main.py").write_text("print('hi')\n")
    response = create(client, auth, request="Add a flag", directory=str(roots / "cli"))
    assert response.status_code == 201
    assert response.json()["directory"] == str(roots / "cli")
    assert commits(roots / "cli") == ["artoo: project start"]
    assert projectrepo.changed_files(roots / "cli") == []


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"request": ""}, "empty"),
        ({"request": "  \n "}, "empty"),
        ({"request": "x" * 20_001}, "limit"),
        ({"request": 42}, "string"),
        ({"request": "a\x00b"}, "NUL"),
        ({"request": "ok", "directory": "relative/path"}, "absolute"),
        ({"request": "ok", "directory": "/etc"}, "outside the allowed paths"),
        ({"request": "ok", "directory": 7}, "string"),
    ],
)
def test_bad_input_is_400_and_creates_nothing(client, auth, data, needle):
    response = create(client, auth, **data)
    assert response.status_code == 400
    assert needle in response.json()["error"]
    assert not Project.objects.exists() and not BusMessage.objects.exists()


def test_a_path_escaping_the_allowed_root_is_refused(client, auth, roots):
    sneaky = str(roots / ".." / ".." / "elsewhere")
    response = create(client, auth, request="ok", directory=sneaky)
    assert response.status_code == 400
    assert "outside the allowed paths" in response.json()["error"]


@pytest.fixture
def open_roots(settings):
    """An allowed path every user can reach (pytest's own temporary
    directories are root's alone, and git runs as a directory's owner)."""
    top = Path(tempfile.mkdtemp(prefix="artoo-roots-", dir="/var/tmp"))
    top.chmod(0o755)
    settings.ARTOO_ALLOWED_PATHS = [top]
    yield top
    shutil.rmtree(top)


@pytest.mark.skipif(
    os.geteuid() != 0, reason="a rootless sandbox is its worker's own uid"
)
def test_a_directory_the_sandboxs_user_may_not_enter_is_refused(
    client, auth, open_roots, settings
):
    roots = open_roots
    closed = roots / "closed"
    closed.mkdir(mode=0o700)
    # A third user's: commands act as the allowed path's owner (root) there,
    # whose own 0700 directory they would enter. "app" is made by its owner.
    os.chown(closed, 1000, 1000)
    settings.ARTOO_SANDBOX_UID = 65534
    response = create(client, auth, request="ok", directory=str(closed / "app"))
    assert response.status_code == 400
    error = response.json()["error"]
    assert f"(uid 65534) may not enter {closed}," in error
    assert not (closed / "app").exists() and not Project.objects.exists()
    closed.chmod(0o755)
    response = create(client, auth, request="ok", directory=str(closed / "app"))
    assert response.status_code == 201, response.content
    assert (closed / "app").stat().st_uid == 1000
    settings.ARTOO_SANDBOX = "off"
    shut = roots / "shut"
    shut.mkdir(mode=0o700)
    response = create(client, auth, request="ok", directory=str(shut))
    assert response.status_code == 201, response.content


def test_a_file_or_a_dirty_repository_is_refused(client, auth, roots):
    (roots / "file.txt").write_text("x")
    response = create(client, auth, request="ok", directory=str(roots / "file.txt"))
    assert "not a directory" in response.json()["error"]
    repo = roots / "repo"
    projectrepo.prepare(repo)
    (repo / "wip.py").write_text("unsaved")
    response = create(client, auth, request="ok", directory=str(repo))
    assert response.status_code == 400
    assert "uncommitted changes" in response.json()["error"]
    assert not Project.objects.exists()


def test_a_body_that_is_not_an_object_is_400(client, auth):
    response = client.post(
        "/api/projects", data=b"[1]", content_type="application/json", headers=auth
    )
    assert response.status_code == 400


def test_no_token_is_401(client):
    assert client.get("/api/projects").status_code == 401
    assert create(client, {}, request="x").status_code == 401


def test_users_see_only_their_own_projects(client, auth, other_auth):
    mine = create(client, auth, request="mine").json()["id"]
    theirs = create(client, other_auth, request="theirs").json()["id"]
    listed = [
        p["id"] for p in client.get("/api/projects", headers=auth).json()["projects"]
    ]
    assert listed == [mine]
    assert client.get(f"/api/projects/{theirs}", headers=auth).status_code == 404
    assert client.get(f"/api/projects/{uuid.uuid4()}", headers=auth).status_code == 404
    stopped = client.post(f"/api/projects/{theirs}/cancel", headers=auth)
    assert stopped.status_code == 404
    assert not BusMessage.objects.filter(type="Cancel").exists()


def test_cancel_asks_the_project_to_stop_and_an_ended_one_is_409(client, auth):
    pid = create(client, auth, request="stop me").json()["id"]
    response = client.post(f"/api/projects/{pid}/cancel", headers=auth)
    assert response.status_code == 202
    cancel = BusMessage.objects.get(type="Cancel")
    assert (cancel.sender, cancel.recipient, str(cancel.project_id)) == (
        "User",
        "Project",
        pid,
    )
    Project.objects.filter(id=pid).update(status="cancelled")
    again = client.post(f"/api/projects/{pid}/cancel", headers=auth)
    assert again.status_code == 409 and "already cancelled" in again.json()["error"]


def test_the_pages_need_a_login_and_hide_other_users_projects(
    client, auth, other_auth, user
):
    theirs = create(client, other_auth, request="theirs").json()["id"]
    assert client.get("/projects/").status_code == 302
    client.force_login(user)
    assert client.get(f"/projects/{theirs}/").status_code == 404
    assert client.post(f"/projects/{theirs}/cancel").status_code == 404
    mine = create(client, auth, request="Add colony management").json()["id"]
    page = client.get(f"/projects/{mine}/").content.decode()
    assert "Add colony management" in page and "Cancel project" in page
    assert "Add colony management" in client.get("/projects/").content.decode()


def test_the_page_form_refuses_bad_input_with_the_form(client, user):
    client.force_login(user)
    response = client.post("/projects/new", {"request": "", "directory": ""})
    assert response.status_code == 400
    assert "empty" in response.content.decode()
    response = client.post("/projects/new", {"request": "ok", "directory": "/etc"})
    assert (
        response.status_code == 400
        and "outside the allowed" in response.content.decode()
    )
    assert not Project.objects.exists()
    created = client.post("/projects/new", {"request": "ok", "directory": ""})
    assert created.status_code == 302
    assert Project.objects.get().owner == user


def test_the_page_form_keeps_the_projects_commands_and_protected_paths(
    client, user, roots
):
    client.force_login(user)
    form = {
        "request": "Add notes",
        "directory": str(roots / "notes"),
        "verify": "python3 -m unittest -q\r\n\r\n  sh tests/check.sh \r\n",
        "protected": "tests/\n./README.md\n",
    }
    assert client.post("/projects/new", form).status_code == 302
    state = Project.objects.get().load_state()
    assert state.verify == ["python3 -m unittest -q", "sh tests/check.sh"]
    assert state.protected == ["tests", "README.md"]
    page = client.get(f"/projects/{Project.objects.get().id}/").content.decode()
    assert "<code>sh tests/check.sh</code>" in page and "<code>README.md</code>" in page


@pytest.mark.parametrize(
    "field,given,error",
    [
        (
            "verify",
            "python3 -m unittest\n\n" + "x" * 301,
            "Command 2: A verification command is at most 300 characters, not 301.",
        ),
        ("verify", "\n".join(f"sh check{n}.sh" for n in range(6)), "At most 5"),
        ("protected", "tests\n../etc", "Path 2: A protected path lies inside"),
        ("protected", "/", "Path 1: A protected path must name files"),
    ],
)
def test_the_page_form_refuses_a_bad_command_or_path_under_its_field(
    client, user, roots, field, given, error
):
    client.force_login(user)
    form = {"request": "Add notes", "directory": str(roots / "notes"), field: given}
    response = client.post("/projects/new", form)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors) == [field] and errors[field][0].startswith(error)
    # The form comes back with what was typed, and nothing was made.
    assert response.context["form"][field].value() == given
    assert not (roots / "notes").exists() and not Project.objects.exists()


def test_cancel_on_the_page_needs_the_csrf_token(user):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    project = Project.objects.create(owner=user, request="x", directory="/tmp")
    assert client.post(f"/projects/{project.id}/cancel").status_code == 403


def test_the_project_page_shows_the_window_its_run_and_the_records(client, user):
    from django.db import transaction

    from artoo_web import bus
    from artoo_web.models import Run
    from roles.projects.contracts import AssessorVerdict, EscalationEvent
    from tests.unit.projects_script import assess, one_task, plan, scoped

    state, _ = scoped()
    state, _ = one_task(state, "Colony model")
    state, _ = plan(state, "abort", escalation_context="no GUI toolkit")
    state, _ = assess(state, "minor_drift", correction_hint="Stay on the console")
    state, _ = plan(state, description="Colony list", carry_forward=["Colony save"])
    project = Project(owner=user, request="Add colony management", directory="/tmp")
    project.keep_state(state)
    project.usage = {"qa": {"calls": 2, "tokens": 345, "cost_usd": 0.0}}
    project.save()
    run = Run.objects.create(
        owner=user, raw_input="plan", project=project, dispatch_id="t2-a1"
    )
    drift = AssessorVerdict(
        verdict="minor_drift", correction_hint="Stay on the console"
    )
    event = EscalationEvent(tier=2, trigger="abort", milestone_index=0, detail="no GUI")
    with transaction.atomic():
        for type_, sender, payload in (
            ("AssessorReply", "Assessor", {"request_id": "r4", "verdict": drift}),
            ("RecordEscalation", "Project", {"event": event}),
        ):
            recipient = "Project" if sender == "Assessor" else "User"
            bus.send(None, sender, recipient, type_, payload, project=project)
    client.force_login(user)
    page = client.get(f"/projects/{project.id}/").content.decode()
    assert "Colony management" in page and "User can create colonies" in page
    assert f"/runs/{run.id}/" in page and "Colony list" in page
    assert "Colony save" in page and "Stay on the console" in page
    assert "tier 2 · abort" in page and "345" in page
    listing = client.get("/").content.decode()
    assert f"/projects/{project.id}/" in listing and "t2-a1" in listing


def test_the_cli_starts_a_project_and_refuses_bad_input(user, roots):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("project", "Write notes", "--user", "alice", "--no-wait", stdout=out)
    project = Project.objects.get()
    assert f"project {project.id}" in out.getvalue() and project.owner == user
    with pytest.raises(CommandError, match="outside the allowed paths"):
        call_command("project", "x", "--user", "alice", "--dir", "/etc", "--no-wait")
    with pytest.raises(CommandError, match="empty"):
        call_command("project", " ", "--user", "alice", "--no-wait")
    assert Project.objects.count() == 1


def test_changed_files_leave_out_deletions_and_a_commit_clears_them(roots):
    repo = roots / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "old.txt").write_text("old")
    (repo / "gone.txt").write_text("gone")
    projectrepo.prepare(repo)
    (repo / "old.txt").write_text("changed")
    (repo / "gone.txt").unlink()
    (repo / "sub" / "new.py").write_text("x = 1")
    assert sorted(projectrepo.changed_files(repo)) == ["old.txt", "sub/new.py"]
    sha = projectrepo.commit(repo, "t1: work")
    assert sha == projectrepo.head(repo) and len(sha) == 40
    assert projectrepo.changed_files(repo, include_deleted=True) == []
    assert projectrepo.commit(repo, "t2: nothing") == ""
    # A redelivered commit of the same task finds the commit made before.
    assert projectrepo.commit(repo, "t1: work") == sha
    assert commits(repo)[0] == "t1: work"


def test_a_projects_messages_read_as_one_line_each():
    from artoo_web import dashboard

    reply = {
        "request_id": "t1-a1",
        "result": {"files": ["a.py"], "result_summary": "ok", "success": True},
    }
    assert dashboard.summarise("RunReply", reply) == "t1-a1 ran: a.py"
    verdict = {"request_id": "r5", "verdict": {"passed": False, "feedback": "no a.py"}}
    assert dashboard.summarise("QAReply", verdict) == "failed: no a.py"


def test_cancel_from_the_page_swaps_a_header_without_the_cancel_button(
    client, auth, user
):
    from artoo_web import projectviews

    project = Project.objects.get(id=create(client, auth, request="x").json()["id"])
    client.force_login(user)
    assert (
        'id="cancel-project"' in projectviews.render_parts(project.id)["project-header"]
    )
    response = client.post(
        f"/projects/{project.id}/cancel", headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert BusMessage.objects.filter(type="Cancel", project_id=project.id).exists()
    Project.objects.filter(id=project.id).update(status="cancelled")
    again = client.post(
        f"/projects/{project.id}/cancel", headers={"HX-Request": "true"}
    )
    header = again.content.decode()
    assert header.strip().startswith('<div id="project-header">')
    assert "already cancelled" in header and 'id="cancel-project"' not in header
    live = projectviews.render_parts(project.id)["project-header"]
    assert 'id="cancel-project"' not in live
