"""Redis connections for publishing (sync) and subscribing (async)."""

from __future__ import annotations

import functools

import redis
import redis.asyncio
from django.conf import settings
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

SOCKET_TIMEOUT_S = 5


@functools.cache
def _pool(url: str) -> redis.ConnectionPool:
    return redis.ConnectionPool.from_url(
        url,
        socket_connect_timeout=SOCKET_TIMEOUT_S,
        socket_timeout=SOCKET_TIMEOUT_S,
        health_check_interval=30,
    )


def client() -> redis.Redis:
    """Return this process's Redis client (thread-safe, on the shared pool)."""
    return _client(settings.REDIS_URL)


@functools.cache
def _client(url: str) -> redis.Redis:
    # Building a client copies its ~170 response callbacks, about a third of
    # the CPU of a one-command call when every call built one.
    return redis.Redis(connection_pool=_pool(url))


def async_client(name: str | None = None) -> redis.asyncio.Redis:
    """Return a new asyncio Redis client that never reconnects on its own.

    A subscriber that reconnected silently would miss what was published while
    it was away; a lost connection raises instead, and its owner closes the
    websockets with ``CLOSE_BUS_LOST`` so that each client catches up from the
    table.
    """
    return redis.asyncio.Redis.from_url(
        settings.REDIS_URL,
        socket_connect_timeout=SOCKET_TIMEOUT_S,
        retry=Retry(NoBackoff(), 0),
        client_name=name,
    )
