"""The pure core never imports Django, Channels or Celery."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import importlib, pkgutil, sys
import roles, memory
for package in (roles, memory):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
bad = sorted(
    name for name in sys.modules
    if name.split(".")[0] in {"django", "channels", "celery"}
)
print(",".join(bad))
"""


def test_roles_and_memory_import_no_django_channels_or_celery():
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
