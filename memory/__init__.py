"""R5 MKCT memory on LevelDB, free of Django and Celery.

``MegramStore`` keeps Megrams, answers QueryMK / QueryC / QueryRecent and runs
the Dreamer; only the memory worker process opens it.
"""

from .dreamer import DreamReport
from .overview import MemoryGroup, MemorySummary
from .store import MegramStore, MemoryLockedError

__all__ = [
    "DreamReport",
    "MegramStore",
    "MemoryGroup",
    "MemoryLockedError",
    "MemorySummary",
]
