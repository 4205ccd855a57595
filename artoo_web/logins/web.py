"""Join the throttle to Django's log-in, on every page that calls authenticate().

``ThrottleBackend`` (first in ``AUTHENTICATION_BACKENDS``) refuses a locked
attempt before any password is checked; the ``user_login_failed`` and
``user_logged_in`` receivers count failures, clear the user's key on success
and issue the device cookie; ``LoginLockout`` (a middleware) answers a refused
attempt with ``registration/locked.html`` (429) and sets the cookie. API tokens
never pass through authenticate(), so they are not throttled.
"""

from __future__ import annotations

import math

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.deprecation import MiddlewareMixin

from artoo_web.logins import device, throttle


def is_on(request: HttpRequest | None) -> bool:
    return request is not None and settings.ARTOO_LOGIN_THROTTLE


def address_of(request: HttpRequest) -> str:
    # The peer as the server sees it: behind a reverse proxy every client is
    # the proxy's address, which is why the device cookie exists.
    return request.META.get("REMOTE_ADDR") or ""


def keys_of(request: HttpRequest, username: str) -> list[throttle.Key]:
    nonce = device.nonce_for(request, username)
    return throttle.keys_for(username, address_of(request), nonce)


class ThrottleBackend:
    """Refuse a log-in attempt whose keys are locked; authenticate nobody.

    It has no ``get_user``, so Django never records it as the backend of a
    session (``login()`` and ``force_login()`` pick the first one with it).
    """

    def authenticate(self, request, username=None, **credentials):
        if not is_on(request) or not isinstance(username, str):
            return None
        lock = throttle.find_lock(keys_of(request, username), timezone.now())
        if lock is not None:
            request.login_lock = lock
            raise PermissionDenied  # no later backend checks the password
        return None


def on_login_failed(sender, credentials, request=None, **kwargs):
    """Count a wrong password; mark the request if that makes a lock."""
    username = credentials.get("username")
    if not is_on(request) or not isinstance(username, str):
        return
    if getattr(request, "login_lock", None) is not None:
        return  # refused by a lock: no password was tried
    keys = keys_of(request, username)
    lock = throttle.record_failure(keys, address_of(request), timezone.now())
    if lock is not None:
        request.login_lock = lock


def on_logged_in(sender, request, user, **kwargs):
    """Clear the user's own key and give the browser a new device cookie."""
    if not is_on(request):
        return
    username = user.get_username()
    # Only the user's key: an address's failures stand, or one account of
    # one's own would reset a password spray.
    throttle.clear(keys_of(request, username)[0])
    request.login_device_cookie = device.issue(username)


def connect_signals() -> None:
    """Connect the receivers (once, from the app's ready())."""
    user_login_failed.connect(on_login_failed, dispatch_uid="artoo-login-failed")
    user_logged_in.connect(on_logged_in, dispatch_uid="artoo-logged-in")


class LoginLockout(MiddlewareMixin):
    """Turn a refused log-in into the lockout page; set a new device cookie."""

    def __init__(self, get_response):
        super().__init__(get_response)
        # Built once per request handler: the log-in signals count from then.
        connect_signals()

    def process_response(self, request: HttpRequest, response: HttpResponse):
        lock = getattr(request, "login_lock", None)
        if lock is not None:
            return locked_page(request, lock)
        cookie = getattr(request, "login_device_cookie", None)
        if cookie is not None:
            device.set_cookie(response, request, cookie)
        return response


def locked_page(request: HttpRequest, lock: throttle.Lock) -> HttpResponse:
    """Return the 429 page that says who is locked, from where, for how long."""
    context = {
        "lock": lock,
        "username": lock.username,
        "minutes": math.ceil(lock.cooloff.total_seconds() / 60),
    }
    response = render(request, "registration/locked.html", context, status=429)
    wait_s = (lock.until - timezone.now()).total_seconds()
    response["Retry-After"] = str(max(1, math.ceil(wait_s)))
    return response
