"""The settings of the claims engine's levers, read from the environment."""

from __future__ import annotations

import pytest

from roles.llm.config import LLMConfigError, load_settings


def test_the_levers_are_on_by_default_and_each_can_be_turned_off():
    plain = load_settings({})
    assert (plain.cookbook, plain.nudges, plain.rederive) == (True, True, "on")
    assert (plain.plan_steps, plain.retry_temperature) == ("show", None)
    off = load_settings(
        {
            "ARTOO_COOKBOOK": "off",
            "ARTOO_NUDGES": "off",
            "ARTOO_REDERIVE": "off",
            "ARTOO_PLAN_STEPS": "drop",
            "ARTOO_RETRY_TEMPERATURE": "0.3",
        }
    )
    assert (off.cookbook, off.nudges, off.rederive) == (False, False, "off")
    assert (off.plan_steps, off.retry_temperature) == ("drop", 0.3)
    assert load_settings({"ARTOO_REDERIVE": "strict"}).rederive == "strict"
    assert load_settings({"ARTOO_REDERIVE": "true"}).rederive == "on"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ARTOO_REDERIVE", "sometimes"),
        ("ARTOO_PLAN_STEPS", "all"),
        ("ARTOO_COOKBOOK", "maybe"),
        ("ARTOO_RETRY_TEMPERATURE", "hot"),
        ("ARTOO_RETRY_TEMPERATURE", "5"),
    ],
)
def test_a_malformed_lever_is_a_clear_error(name, value):
    with pytest.raises(LLMConfigError, match=name):
        load_settings({name: value})
