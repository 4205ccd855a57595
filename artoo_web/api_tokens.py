"""Per-user API tokens: shown once, stored as SHA-256, revocable."""

from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from artoo_web.models import ApiToken

PREFIX = "artoo_"


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
    ApiToken.objects.filter(id=row.id).update(last_used_at=timezone.now())
    return row.user


def revoke(prefix: str, user=None) -> int:
    """Revoke the live tokens starting with ``prefix``; return how many."""
    rows = ApiToken.objects.filter(prefix__startswith=prefix, revoked_at__isnull=True)
    if user is not None:
        rows = rows.filter(user=user)
    return rows.update(revoked_at=timezone.now())
