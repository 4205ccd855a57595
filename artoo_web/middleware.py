"""Policies around every request: JSON errors under /api/, size limit, CSP.

``ApiErrors`` makes every error of the API JSON ``{"error": "…"}`` with its
status, Django's own answers included (no such path, a wrong method, a body over
the size limit, a server error), and answers an oversize body 413 on every path
before anything reads it. ``ContentSecurityPolicy`` adds the policy of
``ARTOO_CSP`` to every response.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import (
    BadRequest,
    PermissionDenied,
    RequestDataTooBig,
    SuspiciousOperation,
)
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.deprecation import MiddlewareMixin

API_PREFIX = "/api/"
MESSAGES = {
    400: "Bad request.",
    401: "A valid API token is required (Authorization: Bearer …).",
    403: "Forbidden.",
    404: "Not found: no API endpoint at this path (run ids are UUIDs).",
    500: "Internal server error; it has been logged.",
}
# Headers that still mean something on the JSON version of a response.
KEPT_HEADERS = ("Allow", "WWW-Authenticate", "Retry-After")


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


def is_too_big(request: HttpRequest) -> bool:
    """Return True when the declared body is over Django's in-memory limit.

    Multipart uploads are left to Django: file data does not count there.
    """
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is None or request.content_type == "multipart/form-data":
        return False
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) > limit
    except ValueError:
        return False


def too_big_message() -> str:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return f"The request body is larger than the limit of {limit:,} bytes."


def message_for(response: HttpResponse) -> str:
    status = response.status_code
    if status == 405:
        return f"Method not allowed; use {response.get('Allow', 'another method')}."
    if status in MESSAGES:
        return MESSAGES[status]
    return f"{response.reason_phrase}."


def as_json(response: HttpResponse) -> JsonResponse:
    """Return the JSON twin of a Django error page: same status, kept headers."""
    twin = JsonResponse({"error": message_for(response)}, status=response.status_code)
    for name in KEPT_HEADERS:
        if name in response:
            twin[name] = response[name]
    return twin


class ApiErrors(MiddlewareMixin):
    def process_request(self, request: HttpRequest):
        if not is_too_big(request):
            return None
        if is_api(request):
            return JsonResponse({"error": too_big_message()}, status=413)
        return HttpResponse(too_big_message(), status=413, content_type="text/plain")

    def process_exception(self, request: HttpRequest, exc: Exception):
        if not is_api(request):
            return None
        if isinstance(exc, RequestDataTooBig):
            return JsonResponse({"error": too_big_message()}, status=413)
        if isinstance(exc, SuspiciousOperation | BadRequest):
            return JsonResponse({"error": f"Bad request: {exc}"}, status=400)
        if isinstance(exc, PermissionDenied):
            return JsonResponse({"error": str(exc) or MESSAGES[403]}, status=403)
        if isinstance(exc, Http404):
            return JsonResponse({"error": MESSAGES[404]}, status=404)
        return None

    def process_response(self, request: HttpRequest, response: HttpResponse):
        if not is_api(request) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        return as_json(response)


class ContentSecurityPolicy(MiddlewareMixin):
    def process_response(self, request: HttpRequest, response: HttpResponse):
        if settings.ARTOO_CSP and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = settings.ARTOO_CSP
        return response
