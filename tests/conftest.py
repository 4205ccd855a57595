"""Shared fixtures: real Redis, a real Celery worker, users and runs."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker

QUEUE_KEYS = ("pipeline", "memory", "unacked", "unacked_index", "unacked_mutex")
# The only workspace a session clears: the test data dir's (tests/settings.py).
TEST_WORKSPACE = Path(__file__).resolve().parent.parent / ".artoo/test/workspace"


def pytest_configure(config):
    """Clear the test workspace once, before the session's first test.

    A session cut short leaves ``user-N`` directories behind, and the next
    session's fresh database gives its users the same ids. An xdist worker
    leaves this to the controller, which runs it before it starts the workers.
    """
    if hasattr(config, "workerinput"):
        return
    from django.conf import settings

    clear_workspace(settings.WORKSPACE)


def clear_workspace(workspace: Path, test_area: Path = TEST_WORKSPACE) -> bool:
    """Empty ``workspace`` when it is ``test_area``, and say whether it was."""
    from roles.tools.sandbox import remove_tree

    if Path(workspace).resolve() != test_area.resolve() or not test_area.is_dir():
        return False
    for entry in test_area.iterdir():
        # remove_tree would open up test_area itself to unlink a top-level link.
        if entry.is_dir() and not entry.is_symlink():
            remove_tree(entry)
        else:
            entry.unlink()
    return True


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup):
    """pytest-django's test databases; before they go, the connections that
    worker threads keep are closed (PostgreSQL refuses to drop a database in use):
    the render thread's, and that of asgiref's thread for the consumers' queries."""
    yield
    from asgiref.sync import SyncToAsync
    from django.db import connection

    from artoo_web import frames

    frames.close_render_connection()
    # ``connection`` is looked up in that thread: it is the thread's own.
    SyncToAsync.single_thread_executor.submit(lambda: connection.close()).result()


@pytest.fixture
def redis_client():
    from artoo_web import redisconn

    return redisconn.client()


@pytest.fixture
def purge_queues(redis_client):
    """Empty the broker queues so a test sees only the tasks it enqueued."""
    redis_client.delete(*QUEUE_KEYS)
    yield redis_client
    redis_client.delete(*QUEUE_KEYS)


@pytest.fixture
def celery_worker(transactional_db, purge_queues):
    """Run a real Celery worker (thread pool) on every queue, in this process."""
    from artoo_web.celery import app

    with start_worker(
        app,
        pool="threads",
        concurrency=4,
        perform_ping_check=False,
        queues=["pipeline", "memory"],
        shutdown_timeout=30,
    ) as worker:
        yield worker
        # A follow-up a test did not wait for (the next moves after an abandon)
        # must not hold a transaction while the database is flushed: on
        # PostgreSQL the flush then deadlocks with it.
        # A task still running after the deadline is the test's own (a run it
        # left hanging on purpose); it is stopped with the worker, as before.
        from celery.worker import state

        with contextlib.suppress(AssertionError):
            wait_until(
                lambda: not state.active_requests and not state.reserved_requests,
                timeout=30,
            )


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-pass-123")


@pytest.fixture
def seed(user, settings):
    """Return a function that puts a file where ``user``'s runs may change it
    (their shared area) before a run starts, and returns its path: Law 1 asks
    before a run changes a file that was there before it."""
    from artoo_web import runtime
    from roles.tools.sandbox import give_to_sandbox

    settings.ARTOO_USER_SHARED = True
    area = runtime.shared_area(user.id)

    def seed(name: str, text: str = "seed\n") -> Path:
        path = area / name
        path.write_text(text)
        if settings.ARTOO_SANDBOX == "on":
            give_to_sandbox(path, runtime.sandbox_policy())
        return path

    return seed


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user("bob", password="bob-pass-123")


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_user(
        "carol", password="carol-pass-123", is_staff=True
    )


@pytest.fixture
def run(user):
    from artoo_web.models import Run

    return Run.objects.create(owner=user, raw_input="echo hello")


def wait_until(
    predicate, timeout: float = 10.0, interval: float = 0.02, what: str = ""
):
    """Poll ``predicate`` until it returns a truthy value or the timeout passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what or 'condition'} not met within {timeout} s")
        time.sleep(interval)
