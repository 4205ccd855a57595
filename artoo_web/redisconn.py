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
    """Return a Redis client sharing this process's pool."""
    return redis.Redis(connection_pool=_pool(settings.REDIS_URL))


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
