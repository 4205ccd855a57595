"""Settings for the test session: environment defaults, then the real settings.

Tests use REDIS_URL when it answers, else the machine's Redis on a database of
their own, else an embedded redis-server started here and stopped at exit.
"""

import atexit
import os
import tempfile
from pathlib import Path

from devtools import launcher

_root = Path(__file__).resolve().parent.parent
os.environ.setdefault("SECRET_KEY", "artoo-tests-only-not-secret")
os.environ.setdefault("ARTOO_DATA_DIR", str(_root / ".artoo" / "test"))
Path(os.environ["ARTOO_DATA_DIR"]).mkdir(parents=True, exist_ok=True)
# Each session gets its own LevelDB: only one process may open one.
os.environ.setdefault(
    "ARTOO_MEMORY_PATH", str(Path(tempfile.mkdtemp(prefix="artoo-mem-")) / "memory")
)
atexit.register(
    launcher.stop,
    launcher.ensure_redis(
        os.environ, Path(os.environ["ARTOO_DATA_DIR"]), for_tests=True
    ),
)

from artoo_web.settings import *  # noqa: E402, F403

# Worker threads close their connection after each task, so the test database
# can be dropped at the end of the session.
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405
