"""Bus handlers of every role, registered with ``bus.handler`` on import."""

from artoo_web import (  # noqa: F401
    effector,
    fanin,
    memory_worker,
    pipeline,
    planning,
    solver,
)
