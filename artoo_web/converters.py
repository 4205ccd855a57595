"""URL converters: a run's id in any letter case, as RFC 9562 allows."""

from __future__ import annotations

import uuid

from django.urls import register_converter
from django.urls.converters import get_converters

NAME = "anyuuid"


class AnyCaseUUID:
    """Match a UUID written in upper, lower or mixed case; give a ``UUID``."""

    regex = "(?i:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"

    def to_python(self, value: str) -> uuid.UUID:
        return uuid.UUID(value)

    def to_url(self, value) -> str:
        return str(value)


def register() -> None:
    """Make ``<anyuuid:…>`` usable in routes (HTTP and websocket), once."""
    if NAME not in get_converters():
        register_converter(AnyCaseUUID, NAME)
