"""Failed-log-in counters and the locks they make.

A failed password is counted under the keys of its attempt:

* with a valid device cookie for the username: (username, that browser) only;
* without one: (username, address), and (address) across every username.

A key is locked once its failures in a row reach its limit, until its
cool-off has passed since the last of them; attempts refused by a lock are not
counted, so a lock lasts one cool-off. The user keys use
``ARTOO_LOGIN_FAILURE_LIMIT``/``ARTOO_LOGIN_COOLOFF_S``, the address key
``ARTOO_LOGIN_ADDRESS_FAILURE_LIMIT``/``ARTOO_LOGIN_ADDRESS_COOLOFF_S``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Case, F, Q, Value, When

from artoo_web.logins.models import Kind, LoginCounter


@dataclass(frozen=True)
class Key:
    """One thing failures are counted against."""

    kind: str
    username: str
    where: str  # the device's nonce, or the address

    @property
    def digest(self) -> str:
        text = "\0".join((self.kind, self.username, self.where))
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Lock:
    """A refusal: which user (none for an address lock), for how long, until when."""

    kind: str
    username: str
    cooloff: timedelta
    until: datetime


def keys_for(username: str, address: str, nonce: str | None) -> list[Key]:
    """Return the keys of an attempt, the user's own key first."""
    if nonce is not None:
        return [Key(Kind.DEVICE, username, nonce)]
    return [Key(Kind.USER, username, address), Key(Kind.ADDRESS, "", address)]


def limits(kind: str) -> tuple[int, timedelta]:
    """Return the failure limit and cool-off of a kind of key."""
    if kind == Kind.ADDRESS:
        limit = settings.ARTOO_LOGIN_ADDRESS_FAILURE_LIMIT
        seconds = settings.ARTOO_LOGIN_ADDRESS_COOLOFF_S
    else:
        limit = settings.ARTOO_LOGIN_FAILURE_LIMIT
        seconds = settings.ARTOO_LOGIN_COOLOFF_S
    return limit, timedelta(seconds=seconds)


def lock_of(row: LoginCounter, now: datetime) -> Lock | None:
    """Return the lock a counter holds at ``now``, if any."""
    limit, cooloff = limits(row.kind)
    until = row.last_failure + cooloff
    if row.failures < limit or until <= now:
        return None
    return Lock(row.kind, row.username, cooloff, until)


def find_lock(keys: list[Key], now: datetime) -> Lock | None:
    """Return the first lock among ``keys`` at ``now``, the user's own first."""
    rows = LoginCounter.objects.in_bulk([k.digest for k in keys], field_name="digest")
    for key in keys:
        row = rows.get(key.digest)
        lock = lock_of(row, now) if row is not None else None
        if lock is not None:
            return lock
    return None


def record_failure(keys: list[Key], address: str, now: datetime) -> Lock | None:
    """Count one failure under each key; return the lock it makes, if any."""
    for key in keys:
        count(key, address[:64], now)
    return find_lock(keys, now)


def count(key: Key, address: str, now: datetime) -> None:
    defaults = {
        "kind": key.kind,
        "username": key.username[:150],
        "address": address,
        "failures": 1,
        "last_failure": now,
    }
    _, created = LoginCounter.objects.get_or_create(
        digest=key.digest, defaults=defaults
    )
    if created:
        return
    # One statement, so that concurrent failures are all counted; failures
    # older than a cool-off no longer run "in a row".
    stale = Q(last_failure__lte=now - limits(key.kind)[1])
    LoginCounter.objects.filter(digest=key.digest).update(
        failures=Case(When(stale, then=Value(1)), default=F("failures") + 1),
        last_failure=now,
        address=address,
    )


def clear(key: Key) -> None:
    """Forget the failures under ``key`` (a success)."""
    LoginCounter.objects.filter(digest=key.digest).delete()


def unlock(username: str) -> int:
    """Forget every failure counted against ``username``; return how many keys."""
    deleted, _ = LoginCounter.objects.filter(username=username).delete()
    return deleted
