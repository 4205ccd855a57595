#!/usr/bin/env python
"""Django's command-line utility for artoo_web.

Beside ``make run`` it needs no environment: settings read the key and the
service URLs from the live file the launcher leaves in the data dir.
"""

import os
import sys
from pathlib import Path

# Commands that hand work to the running workers through Redis.
NEEDS_SERVICES = {"artoo", "memory"}
NOT_RUNNING = "artoo is not running: start it with make run"


def services_problem(env=os.environ) -> str:
    """Return why the running services cannot be reached, or "" when they can."""
    import redis

    from artoo_web import livefile

    data_dir = Path(env.get("ARTOO_DATA_DIR") or Path(__file__).parent / ".artoo")
    if not env.get("REDIS_URL"):
        if not livefile.read(data_dir):
            return f"{NOT_RUNNING} (no live file in {data_dir.resolve()})"
        if not livefile.is_running(data_dir):
            return f"{NOT_RUNNING} (make run has stopped)"
    url = livefile.environ(data_dir, env).get("REDIS_URL", "")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2).ping()
    except (redis.RedisError, OSError, ValueError):
        return f"{NOT_RUNNING} (its Redis does not answer)"
    return ""


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "artoo_web.settings")
    if len(sys.argv) > 1 and sys.argv[1] in NEEDS_SERVICES:
        if problem := services_problem():
            sys.exit(problem)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
