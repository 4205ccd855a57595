"""The device cookie: proof that this browser has logged in as a user before.

A successful password log-in sets ``artoo_device``, signed with the site's key
under a salt of its own, holding the username and a random nonce::

    {"u": "alice", "n": "Jx1v…"}

A later attempt for ``alice`` that presents it is counted against that browser
alone (OWASP's "device cookies"), so failures sent from elsewhere, the same
shared address included, cannot lock ``alice`` out of it.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse

COOKIE = "artoo_device"
SALT = "artoo_web.logins.device"


def max_age_s() -> int:
    """Return how long a device cookie is honoured, in seconds."""
    return settings.ARTOO_LOGIN_DEVICE_DAYS * 24 * 3600


def issue(username: str) -> str:
    """Return a new signed device cookie value for ``username``."""
    payload = {"u": username, "n": secrets.token_urlsafe(16)}
    return signing.dumps(payload, salt=SALT)


def nonce_for(request: HttpRequest, username: str) -> str | None:
    """Return the nonce of the request's device cookie if it is valid for
    ``username``, else None (no cookie, forged, expired, or another user's)."""
    raw = request.COOKIES.get(COOKIE)
    if not raw:
        return None
    try:
        payload = signing.loads(raw, salt=SALT, max_age=max_age_s())
    except signing.BadSignature:
        return None
    if not isinstance(payload, dict) or payload.get("u") != username:
        return None
    nonce = payload.get("n")
    return nonce if isinstance(nonce, str) and nonce else None


def set_cookie(response: HttpResponse, request: HttpRequest, value: str) -> None:
    """Set the device cookie: scripts cannot read it, other sites do not send it
    on their posts, and it travels over HTTPS only when the log-in did."""
    response.set_cookie(
        COOKIE,
        value,
        max_age=max_age_s(),
        httponly=True,
        samesite="Lax",
        secure=request.is_secure(),
    )
