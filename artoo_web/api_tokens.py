"""Per-user API tokens: shown once, stored as SHA-256, revocable.

A token reads ``artoo_`` and 64 hex digits; its first 8 digits are its prefix,
kept in clear so a person can tell their tokens apart. Nothing else of the
secret is kept: a lost token is revoked and replaced, never shown again.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from artoo_web.models import ApiToken

PREFIX = "artoo_"
# Tokens one user may hold at once (revoked ones do not count).
MAX_LIVE = 20
NAME_CHARS = ApiToken._meta.get_field("name").max_length
# A token's last use is recorded at most this often: the list shows it to the
# minute, and a write per API call would be load for nothing.
LAST_USED_EVERY = timedelta(minutes=1)


class Refused(ValueError):
    """A token cannot be created as asked; the message says why."""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create(user, name: str = "") -> tuple[ApiToken, str]:
    """Create a token for ``user``; return the row and the secret (shown once)."""
    # Hex, so a prefix never starts with "-" and reads as an option on a CLI.
    secret = PREFIX + secrets.token_hex(32)
    row = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=secret[len(PREFIX) : len(PREFIX) + 8],
        digest=digest(secret),
    )
    return row, secret


def clean_name(name: str) -> str:
    """Return a token's name stripped, or raise Refused saying what is wrong."""
    name = (name or "").strip()
    if not name:
        raise Refused("Name the token: the name is empty.")
    if len(name) > NAME_CHARS:
        raise Refused(
            f"The name is {len(name):,} characters; the limit is {NAME_CHARS}."
        )
    if any(not c.isprintable() for c in name):
        raise Refused("The name holds a control character; use plain text.")
    return name


def issue(user, name: str) -> tuple[ApiToken, str]:
    """Create a named token for ``user`` within the rules, or raise Refused.

    A name is unique among the user's live tokens, and a user holds at most
    MAX_LIVE of them. The user's row is locked so two requests at once cannot
    both pass the checks (PostgreSQL; SQLite runs one writer at a time).
    """
    name = clean_name(name)
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        live = live_for(user)
        if live.filter(name=name).exists():
            raise Refused(
                f"You already have a token named {name!r}: "
                "pick another name or revoke that one first."
            )
        if live.count() >= MAX_LIVE:
            raise Refused(
                f"You hold {MAX_LIVE} tokens, the most one user may: "
                "revoke one you no longer use first."
            )
        return create(user, name)


def live_for(user):
    """Return ``user``'s tokens that still work, newest first."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).order_by(
        "-created_at", "-id"
    )


def authenticate(header: str):
    """Return the user of a valid ``Bearer`` token, or None."""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.startswith(PREFIX):
        return None
    row = (
        ApiToken.objects.select_related("user")
        .filter(digest=digest(token.strip()), revoked_at__isnull=True)
        .first()
    )
    if row is None or not row.user.is_active:
        return None
    note_use(row)
    return row.user


def note_use(row: ApiToken) -> None:
    """Record that ``row`` was used, unless that was done in the last minute."""
    now = timezone.now()
    since = now - LAST_USED_EVERY
    if row.last_used_at is not None and row.last_used_at > since:
        return
    # The filter again in the UPDATE: of simultaneous first calls, one writes.
    ApiToken.objects.filter(id=row.id).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lte=since)
    ).update(last_used_at=now)


def revoke(prefix: str, user=None) -> int:
    """Revoke the live tokens starting with ``prefix``; return how many."""
    rows = ApiToken.objects.filter(prefix__startswith=prefix, revoked_at__isnull=True)
    if user is not None:
        rows = rows.filter(user=user)
    return rows.update(revoked_at=timezone.now())


def revoke_one(row: ApiToken) -> bool:
    """Revoke one token now; return False when it was revoked already."""
    live = ApiToken.objects.filter(id=row.id, revoked_at__isnull=True)
    return live.update(revoked_at=timezone.now()) == 1
