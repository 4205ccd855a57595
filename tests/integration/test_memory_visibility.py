"""One user's memory is not another's to see or to be planned with.

Bob's run runs a command no one else ran and reports a failing target, as GGS
does; Alice's memory page, its search and her own run's calibration never
show either, while Bob's next run and staff (on /memory/ and in the admin)
still do. The scripted model server records what R2 was told; memory is the
session's real LevelDB behind the memory worker.
"""

from __future__ import annotations

import json

import pytest
from django.db import transaction
from django.urls import reverse

from artoo_web import bus, runs
from artoo_web.handlers import memory as memory_worker
from roles.contracts import Megram
from roles.ggs.megrams import make_megram
from tests.conftest import wait_until
from tests.integration.test_pipeline_llm import (
    TASK_SPEC,
    accept,
    execute,
    judge,
    plan,
    text_of,
)
from tests.integration.test_pipeline_offline import finished
from tests.llm_server import ScriptedLLMServer

pytestmark = pytest.mark.slow

# The scripted executor echoes the first "out-" word of its subtask.
SECRET = "out-bobsecret4417"
SPACE = f"intent:{TASK_SPEC['task_id']}"


@pytest.fixture
def llm(monkeypatch):
    """Serve the scripted roles of the pipeline tests; R2's plans are queued."""
    with ScriptedLLMServer() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ARTOO_LLM_RETRIES", "1")
        server.default_reply(json.dumps(TASK_SPEC), role="R1")
        server.responder(execute, role="R3")
        server.responder(judge, role="R4a")
        server.responder(accept, role="R4b")
        yield server


def _secret_megrams() -> list[Megram]:
    return [
        m
        for g in memory_worker.store().groups()
        for m in g.megrams
        if SECRET in m.content or SECRET in g.entity
    ]


@pytest.fixture
def bobs_run(celery_worker, other_user, llm):
    """Bob's finished run, its accept Megram and a failing target of its command."""
    llm.reply("R2", plan(f"ok-step {SECRET}"))
    run = finished(runs.submit(other_user, "check the server"))
    assert run.status == "done"
    failing = make_megram(
        "tool:shell",
        f"target:cat {SECRET}.txt",
        "read it: wrong file",
        "change_approach",
    )
    with transaction.atomic():
        bus.send(run, "R7", "R5", "Megram", failing)
    wait_until(lambda: len(_secret_megrams()) == 2, what="Bob's two Megrams stored")
    yield run
    for megram in _secret_megrams():
        memory_worker.forget(megram.id)


def memory_page(client, who, **search) -> str:
    """Return what the memory page lists for ``who`` (the search form left out)."""
    client.force_login(who)
    response = client.get(reverse("memory"), search)
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="memory-counts"' in page
    return page.split('role="search"', 1)[1].split("</form>", 1)[1]


def test_a_users_megrams_are_on_their_memory_page_and_not_on_anothers(
    bobs_run, client, user, other_user
):
    assert SECRET in memory_page(client, other_user)
    assert SECRET in memory_page(client, other_user, content=SECRET)
    assert SECRET not in memory_page(client, user)
    assert SECRET not in memory_page(client, user, content=SECRET)
    assert SECRET not in memory_page(client, user, space="tool:shell")
    assert SECRET not in memory_page(client, user, entity=SECRET)
    assert {m.owner for m in _secret_megrams()} == {f"user:{other_user.pk}"}


def test_staff_see_every_users_megrams_on_the_memory_page_and_in_the_admin(
    bobs_run, client, staff_user
):
    assert SECRET in memory_page(client, staff_user, content=SECRET)
    # Staff without superuser reach the admin, whose Megram view follows the page.
    admin = client.get(reverse("admin:memory"), {"content": SECRET})
    assert admin.status_code == 200
    assert SECRET in admin.content.decode()


def test_another_users_run_is_not_calibrated_with_a_users_megrams(
    bobs_run, user, other_user, llm
):
    llm.reply("R2", plan("ok-step alice"))
    alices = finished(runs.submit(user, "check the server"))
    assert SECRET not in text_of(llm.requests_for("R2")[-1])
    assert SECRET not in json.dumps(alices.load_state().memory_targets, default=str)
    # Bob's own next run, on the same task, is told of his experience, and
    # his failed target is refused in it (it is told only to a task whose
    # intent names its file).
    llm.reply("R2", plan("ok-step again"))
    bobs = finished(runs.submit(other_user, "check the server"))
    told = text_of(llm.requests_for("R2")[-1])
    assert f"shell:echo {SECRET}" in told
    targets = json.dumps(bobs.load_state().memory_targets, default=str)
    assert f"cat {SECRET}.txt" in targets


def test_a_megram_stored_without_owner_is_shown_to_staff_only_unless_global(
    celery_worker, client, user, staff_user
):
    store = memory_worker.store()
    legacy = [
        store.write(make_megram(SPACE, "env:local", f"{SECRET} old run", "accept")),
        store.write(
            make_megram("global:user", "env:local", f"{SECRET} note", "accept")
        ),
    ]
    try:
        alice = memory_page(client, user, content=SECRET)
        staff = memory_page(client, staff_user, content=SECRET)
    finally:
        for megram in legacy:
            memory_worker.forget(megram.id)
    assert f"{SECRET} note" in alice and f"{SECRET} old run" not in alice
    assert f"{SECRET} note" in staff and f"{SECRET} old run" in staff


def test_a_megram_names_the_run_it_rests_on_and_the_next_runs_page_links_it(
    bobs_run, client, other_user, llm
):
    accepted = [m for m in _secret_megrams() if m.space == SPACE]
    assert [m.runs for m in accepted] == [[str(bobs_run.id)]]
    llm.reply("R2", plan("ok-step again"))
    bobs = finished(runs.submit(other_user, "check the server"))
    client.force_login(other_user)
    page = client.get(reverse("run-detail", args=[bobs.id])).content.decode()
    timeline = page.split('id="ggs-timeline"', 1)[1]
    assert f'href="{reverse("run-detail", args=[bobs_run.id])}"' in timeline
