"""Human waits are counted once, however many overlap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from roles.humantime import paired, union_ms

T0 = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_overlapping_waits_count_once():
    assert union_ms([(at(0), at(10)), (at(5), at(15))]) == 15_000


def test_separate_waits_add_up():
    assert union_ms([(at(20), at(25)), (at(0), at(10))]) == 15_000


def test_a_wait_inside_another_adds_nothing():
    assert union_ms([(at(0), at(60)), (at(10), at(20)), (at(59), at(60))]) == 60_000


def test_waits_are_clipped_to_the_window():
    waits = [(at(-30), at(10)), (at(50), at(90))]
    assert union_ms(waits, since=at(0), until=at(60)) == 20_000


def test_no_waits_is_no_time():
    assert union_ms([]) == 0
    assert union_ms([(at(10), at(5))]) == 0


def test_an_unanswered_question_waits_until_now():
    asked = [at(30), at(0)]
    answered = [at(10)]
    assert paired(asked, answered, at(40)) == [(at(0), at(10)), (at(30), at(40))]
