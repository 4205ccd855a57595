"""Fixtures shared by the unit tests of the prepared task suites."""

from pathlib import Path

import pytest

from devtools.tasks import prepare_dir


@pytest.fixture
def prepared(tmp_path, request):
    """Return a function that prepares a task of the test module's ``BY_NAME``
    by its name in a directory of its own, and returns that directory."""
    by_name = request.module.BY_NAME

    def make(name: str) -> Path:
        task_dir = tmp_path / name
        prepare_dir(by_name[name], task_dir)
        return task_dir

    return make
