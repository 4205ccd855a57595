"""Tell who may read a Megram: its owner's runs, or everyone when it is shared.

A Megram a run wrote belongs to the run's user (``owner`` ``"user:7"``); one
tied to no run, as an operator's remembered rule, is shared (``"shared"``).
A Megram stored before owners were recorded has no owner: in a ``global:``
space it counts as shared, elsewhere as unknown, which only a reader without
restriction (``reader=None``: staff, the operator's CLI) sees. A reader
``"user:7"`` sees user 7's Megrams and the shared ones, nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

from roles.memory_contracts import SHARED_OWNER

Rec = TypeVar("Rec", bound=Mapping[str, Any])

GLOBAL_PREFIX = "global:"
UNKNOWN = ""


def owner_of(space: str, owner: str) -> str:
    """Return the owner a Megram counts as: its own, else by its space."""
    if owner:
        return owner
    return SHARED_OWNER if space.startswith(GLOBAL_PREFIX) else UNKNOWN


def can_read(reader: str | None, space: str, owner: str) -> bool:
    """Return whether ``reader`` may see a Megram of ``space`` and ``owner``."""
    if reader is None:
        return True
    counted = owner_of(space, owner)
    return counted == SHARED_OWNER or (counted != UNKNOWN and counted == reader)


def readable(reader: str | None, recs: Iterable[Rec]) -> Iterator[Rec]:
    """Yield the records of ``recs`` that ``reader`` may see."""
    for rec in recs:
        if can_read(reader, rec["space"], rec.get("owner", "")):
            yield rec


def weighs_on(rule_owner: str, owner: str) -> bool:
    """Return whether a Megram of ``owner`` counts against a rule of ``rule_owner``.

    A rule is judged by what its readers see: its owner's Megrams and the
    shared ones; a shared rule, which every run reads, by everyone's.
    """
    return rule_owner == SHARED_OWNER or owner in (rule_owner, SHARED_OWNER)
