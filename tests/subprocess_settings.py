"""Settings for worker subprocesses that share the test session's database.

The test process passes its test database's name in ``ARTOO_TEST_DB_NAME``.
"""

import os

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES

DATABASES["default"]["NAME"] = os.environ["ARTOO_TEST_DB_NAME"]
