"""Settings for an Auditor subprocess that shares the test session's database.

The test process passes its test database's path in ``ARTOO_AUDIT_TEST_DB``.
"""

import os

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES

DATABASES["default"]["NAME"] = os.environ["ARTOO_AUDIT_TEST_DB"]
