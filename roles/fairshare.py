"""A fair share of the pipeline's subtask slots between users.

A slot is one subtask executing (R3 ⇄ R4a, its tool calls included). A subtask
that may not start waits in its user's queue, oldest first, and starts when a
slot frees. Users share the slots equally, and one slot is always kept for a
user who has nothing executing, so one user's long commands never make
another's first subtask wait on them::

    slots 9, alice alone with 10 subtasks     → alice 8 executing, 2 waiting
    bob submits one                           → bob 1 executing (the kept slot)
    alice's next start, bob still running     → waits: her share is (9 - 1) // 2

Nothing here is preemptive: a share that shrinks lets running subtasks finish
and holds back the user's next ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Waiting:
    """A subtask waiting for a slot: its key, its user, and since when."""

    key: str
    user: str
    since: float


def share(active_users: int, slots: int) -> int:
    """Return how many subtasks each of ``active_users`` may execute at once."""
    return max(1, (slots - 1) // max(1, active_users))


def may_start(user: str, running: Mapping[str, int], active: int, slots: int) -> bool:
    """Return True when ``user`` may start one more subtask now.

    ``running`` counts each user's executing subtasks, ``active`` the users
    with a subtask executing or waiting; ``slots`` 0 means no limit.
    """
    if slots <= 0:
        return True
    total = sum(running.values())
    mine = running.get(user, 0)
    if total >= slots:
        return False
    if mine == 0:
        return True
    # The last free slot is kept for a user with nothing executing.
    return total < slots - 1 and mine < share(active, slots)


def startable(
    running: Mapping[str, int], waiting: Iterable[Waiting], slots: int
) -> list[Waiting]:
    """Return the waiting subtasks that start now, in the order they start.

    Each step serves, among the users who may start one, the user with the
    fewest executing, then the one waiting longest; a user's own subtasks start
    oldest first.
    """
    counts = {user: n for user, n in running.items() if n > 0}
    queues: dict[str, list[Waiting]] = {}
    for item in sorted(waiting, key=lambda w: (w.since, w.key)):
        queues.setdefault(item.user, []).append(item)
    active = len(set(counts) | set(queues))
    started: list[Waiting] = []
    while True:
        ready = [
            user
            for user, queue in queues.items()
            if queue and may_start(user, counts, active, slots)
        ]
        if not ready:
            return started
        user = min(ready, key=lambda u: (counts.get(u, 0), queues[u][0].since, u))
        started.append(queues[user].pop(0))
        counts[user] = counts.get(user, 0) + 1


def starts_now(
    item: Waiting, running: Mapping[str, int], waiting: Iterable[Waiting], slots: int
) -> tuple[bool, list[Waiting]]:
    """Return whether ``item`` starts now, and the others that may start before it.

    ``item`` joins the waiting (or keeps its place there); it starts when the
    slots reach it in ``startable``'s order.
    """
    others = [w for w in waiting if w.key != item.key]
    order = startable(running, [*others, item], slots)
    keys = [w.key for w in order]
    if item.key not in keys:
        return False, order
    return True, order[: keys.index(item.key)]
