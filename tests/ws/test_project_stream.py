"""A project's page, live: its parts pushed when the project changes, to its owner."""

from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import transaction
from django.test import Client

from artoo_web import projects, topics
from artoo_web.asgi import application
from artoo_web.handlers.projects import advance
from artoo_web.models import Project, Run, RunStatus
from roles.projects import new_project
from tests.ws.test_run_stream import ORIGIN, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

REMIT = "Notes a user can search by word"


@pytest.fixture
def project(user, tmp_path):
    state, _ = new_project("Make notes searchable")
    project = Project(owner=user, request="Make notes searchable", directory=tmp_path)
    project.keep_state(state)
    project.save()
    return project


def _communicator(project, user=None) -> WebsocketCommunicator:
    headers = [ORIGIN]
    if user is not None:
        headers.append(session_cookie(user))
    path = topics.ws_project_path(project.id)
    return WebsocketCommunicator(application, path, headers=headers)


communicator = sync_to_async(_communicator)


@sync_to_async
def scope_answers(project: Project) -> None:
    """The ScopeAgent's reply arrives and the Project steps on it."""
    request_id = Project.objects.get(id=project.id).load_state().awaiting
    milestone = {"description": "User can search notes", "areas": ["search"]}
    scope = {"remit": REMIT, "milestones": [milestone]}
    with transaction.atomic():
        reply = projects.send(
            project,
            "Scope",
            "Project",
            "ScopeReply",
            {"request_id": request_id, "scope": scope},
        )
        advance(reply)


@sync_to_async
def task_run(project: Project, user) -> Run:
    return Run.objects.create(
        owner=user, project=project, dispatch_id="t1-a1", raw_input="write notes.py"
    )


@sync_to_async
def finish(run: Run) -> None:
    run.status = RunStatus.DONE
    run.save()


@sync_to_async
def page(project: Project, user) -> str:
    client = Client()
    client.force_login(user)
    return client.get(f"/projects/{project.id}/").content.decode()


async def next_swaps(comm: WebsocketCommunicator) -> dict[str, str]:
    frame = json.loads(await comm.receive_from(timeout=10))
    assert frame["kind"] == "swaps"
    return frame["swaps"]


async def test_a_project_event_arrives_as_the_pages_updated_parts(project, user):
    comm = await communicator(project, user)
    connected, code = await comm.connect(timeout=5)
    assert connected, code
    try:
        whole = await next_swaps(comm)
        assert "has not answered yet" in whole["project-remit"]

        await scope_answers(project)

        swaps = await next_swaps(comm)
        assert REMIT in swaps["project-remit"]
        assert "User can search notes" in swaps["project-milestones"]
        assert 'id="project-milestones"' in swaps["project-milestones"]
        # The same fragments the page itself renders, but for the page's own
        # CSRF field (a pushed part goes to every viewer; htmx sends the token).
        html = re.sub(
            r'<input type="hidden" name="csrfmiddlewaretoken"[^>]*>',
            "",
            await page(project, user),
        )
        for part in ("project-remit", "project-milestones", "project-header"):
            assert swaps[part] in html
        assert 'id="cancel-project"' in swaps["project-header"]
    finally:
        await comm.disconnect()


async def test_a_change_of_the_projects_run_updates_its_link(project, user):
    comm = await communicator(project, user)
    connected, code = await comm.connect(timeout=5)
    assert connected, code
    try:
        await next_swaps(comm)
        run = await task_run(project, user)
        swaps = await next_swaps(comm)
        assert f'href="/runs/{run.id}/"' in swaps["project-runs"]
        assert "Queued" in swaps["project-runs"]

        await finish(run)

        swaps = await next_swaps(comm)
        assert "Done" in swaps["project-runs"]
    finally:
        await comm.disconnect()


async def test_another_users_connection_is_refused(project, other_user):
    comm = await communicator(project, other_user)
    connected, _ = await comm.connect(timeout=5)
    assert not connected
    await comm.disconnect()


async def test_an_anonymous_connection_is_refused(project):
    comm = await communicator(project)
    connected, _ = await comm.connect(timeout=5)
    assert not connected
    await comm.disconnect()
