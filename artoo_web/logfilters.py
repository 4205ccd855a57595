"""Logging filters named in settings.LOGGING."""

from __future__ import annotations

import logging


class ExpectedInOneLine(logging.Filter):
    """Log a refusal the client caused (a 4xx) in one line, without a traceback.

    Django attaches the exception to its ``django.request`` warnings for a 403
    and to every ``django.security`` record (a body over the limit, a bad host):
    they are answers, not faults, and a traceback per probe floods the log.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        expected = record.name.startswith("django.security") or (
            record.name == "django.request"
            and 400 <= getattr(record, "status_code", 500) < 500
        )
        if expected and record.exc_info:
            record.exc_info = None
            record.exc_text = None
        return True
