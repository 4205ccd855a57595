"""Who executes next: the fair share of the subtask slots between users."""

from roles.fairshare import Waiting, may_start, share, startable, starts_now


def queue(user: str, count: int, since: float = 0.0) -> list[Waiting]:
    return [Waiting(f"{user}{n}", user, since + n) for n in range(count)]


def started_by(order: list[Waiting]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in order:
        counts[item.user] = counts.get(item.user, 0) + 1
    return counts


def test_a_lone_user_takes_every_slot_but_one():
    assert started_by(startable({}, queue("a", 10), slots=9)) == {"a": 8}


def test_the_kept_slot_starts_another_users_first_subtask_at_once():
    assert may_start("b", {"a": 8}, active=2, slots=9)
    ok, ahead = starts_now(Waiting("b0", "b", 50.0), {"a": 8}, queue("a", 2), 9)
    assert ok and ahead == []


def test_a_user_over_their_share_waits_while_another_is_active():
    # bob executes one: alice, at 8, is past her share of (9 - 1) // 2.
    assert share(2, 9) == 4
    assert not may_start("a", {"a": 7, "b": 1}, active=2, slots=9)
    assert startable({"a": 7, "b": 1}, queue("a", 3), slots=9) == []


def test_a_freed_slot_goes_to_the_user_with_fewest_executing():
    running = {"a": 3, "b": 1}
    waiting = [*queue("a", 3, since=0.0), *queue("b", 3, since=100.0)]
    order = startable(running, waiting, slots=9)
    # b catches up to a first, then they alternate; one slot stays free.
    assert [w.user for w in order] == ["b", "b", "a", "b"]
    assert started_by(order) == {"b": 3, "a": 1}


def test_a_users_own_subtasks_start_oldest_first():
    waiting = [Waiting("late", "a", 9.0), Waiting("early", "a", 1.0)]
    assert [w.key for w in startable({}, waiting, slots=9)] == ["early", "late"]


def test_among_equals_the_longest_waiting_user_goes_first():
    waiting = [Waiting("b0", "b", 5.0), Waiting("c0", "c", 2.0)]
    assert [w.key for w in startable({"a": 8}, waiting, slots=9)] == ["c0"]


def test_no_slot_is_taken_past_the_total():
    running = {"a": 4, "b": 4, "c": 1}
    assert startable(running, queue("d", 1), slots=9) == []
    assert not may_start("d", running, active=4, slots=9)


def test_every_active_user_gets_at_least_one_slot():
    assert share(20, 9) == 1
    running = {f"u{n}": 1 for n in range(5)}
    assert started_by(startable(running, queue("new", 2), slots=9)) == {"new": 1}


def test_a_waiting_subtask_starts_when_the_slots_reach_it():
    waiting = queue("a", 3)
    ok, ahead = starts_now(waiting[2], {"a": 6}, waiting, slots=9)
    assert not ok
    assert [w.key for w in ahead] == ["a0", "a1"]
    ok, ahead = starts_now(waiting[1], {"a": 6}, waiting, slots=9)
    assert ok and [w.key for w in ahead] == ["a0"]


def test_a_subtask_arriving_keeps_its_place_behind_those_waiting():
    waiting = queue("b", 1, since=10.0)
    late = Waiting("c0", "c", 20.0)
    ok, ahead = starts_now(late, {"a": 8}, waiting, slots=9)
    assert not ok and [w.key for w in ahead] == ["b0"]


def test_zero_slots_means_no_limit():
    assert may_start("a", {"a": 500}, active=1, slots=0)
    assert len(startable({"a": 500}, queue("a", 30), slots=0)) == 30


def test_one_slot_runs_one_subtask_at_a_time():
    assert started_by(startable({}, queue("a", 3), slots=1)) == {"a": 1}
    assert startable({"a": 1}, queue("b", 1), slots=1) == []
