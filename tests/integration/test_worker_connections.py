"""A worker thread keeps its database connection across tasks, as Django's
requests do: closed only when older than CONN_MAX_AGE or broken."""

import threading
from types import SimpleNamespace

import pytest
from django.db import connection, connections
from django.db.backends.signals import connection_created

from artoo_web.celery import app, close_old_connections

THREADS = 4  # the celery_worker fixture's concurrency
_closing = threading.Barrier(THREADS, timeout=20)


@app.task(name="tests.integration.touch_db")
def touch_db():
    from django.contrib.auth import get_user_model

    return get_user_model().objects.count()


@app.task(name="tests.integration.close_db")
def close_db():
    # Each of the pool's threads takes one of these, then closes its own.
    _closing.wait()
    connection.close()


def a_task(eager=False):
    return SimpleNamespace(request=SimpleNamespace(is_eager=eager))


@pytest.fixture
def max_age(monkeypatch):
    """Set CONN_MAX_AGE for every connection opened from now on, in any thread."""

    def set_max_age(seconds):
        monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", seconds)
        connection.close()
        connection.ensure_connection()

    return set_max_age


@pytest.mark.django_db(transaction=True)
def test_a_task_keeps_a_connection_younger_than_its_max_age(max_age):
    max_age(60)
    raw = connection.connection
    close_old_connections(sender=a_task())
    assert connection.connection is raw


@pytest.mark.django_db(transaction=True)
def test_a_task_closes_the_connection_when_its_max_age_is_zero(max_age):
    max_age(0)
    close_old_connections(sender=a_task())
    assert connection.connection is None


@pytest.mark.django_db(transaction=True)
def test_a_task_closes_a_broken_connection(max_age, monkeypatch):
    max_age(60)
    connection.errors_occurred = True
    monkeypatch.setattr(connection, "is_usable", lambda: False)
    close_old_connections(sender=a_task())
    assert connection.connection is None


@pytest.mark.django_db(transaction=True)
def test_an_eager_task_leaves_its_callers_connection_alone(max_age):
    max_age(0)
    raw = connection.connection
    close_old_connections(sender=a_task(eager=True))
    assert connection.connection is raw


def test_the_worker_opens_a_connection_per_thread_not_per_task(celery_worker, max_age):
    max_age(60)
    opened = []

    def count(sender, connection, **kwargs):
        opened.append(threading.get_ident())

    connection_created.connect(count)
    try:
        for _ in range(12):
            touch_db.delay().get(timeout=20)
        assert 1 <= len(opened) <= THREADS
        assert len(set(opened)) == len(opened)
    finally:
        connection_created.disconnect(count)
        # The database is flushed and dropped after the test: no thread may
        # keep a connection to it.
        results = [close_db.delay() for _ in range(THREADS)]
        for result in results:
            result.get(timeout=30)
