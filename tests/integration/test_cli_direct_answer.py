"""The artoo command prints R1's direct answer as a bus line, then the report."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from roles.llm.offline_roles import OFFLINE_GREETING

pytestmark = pytest.mark.slow


def test_the_cli_prints_the_direct_answer_from_the_bus(celery_worker, user):
    out = StringIO()

    with pytest.raises(SystemExit) as exit_:
        call_command(
            "artoo", "hello", "--user", user.username, "--timeout", "60", stdout=out
        )

    lines = out.getvalue().splitlines()
    answers = [line for line in lines if "R1 → User DirectResponse" in line]
    assert exit_.value.code == 0
    assert len(answers) == 1
    assert answers[0].endswith(f"  {OFFLINE_GREETING[:100]}")
    assert "done: direct" in lines
