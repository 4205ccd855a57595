"""The audit log: append-only, hash-chained, verified row by row."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.core.management import call_command
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from artoo_web import tasks
from artoo_web.auditlog import (
    GENESIS,
    AppendOnlyError,
    AuditEventRecord,
    ChainCheck,
    chain_hash,
    check_chain,
    verify_chain,
)
from roles.contracts import AuditEvent

pytestmark = pytest.mark.django_db


def append(n: int, start: int = 1) -> list[AuditEventRecord]:
    return [
        AuditEventRecord.append(
            AuditEvent(
                event_id=f"e{i}",
                message_id=i,
                run_id="r",
                from_role="R1",
                to_role="R2",
                message_type="TaskSpec",
                timestamp="2025-01-01T00:00:00+00:00",
            )
        )
        for i in range(start, start + n)
    ]


def run_verify(capsys) -> tuple[int, str, str]:
    try:
        call_command("audit", "--verify")
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_each_event_hashes_its_predecessor_and_its_content():
    first, second = append(2)
    assert first.prev_hash == GENESIS
    assert second.prev_hash == first.hash
    assert second.hash == chain_hash(first.hash, second.content())
    assert len({first.hash, second.hash}) == 2


def test_intact_chain_verifies(capsys):
    append(3)
    assert run_verify(capsys) == (0, "OK: 3 events verified\n", "")


def test_row_edited_in_the_database_is_named_by_verify(capsys):
    rows = append(4)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {AuditEventRecord._meta.db_table} SET anomaly = %s WHERE id = %s",
            ["none-at-all", rows[2].id],
        )
    code, out, err = run_verify(capsys)
    assert code == 1 and out == ""
    assert f"chain broken at audit event {rows[2].id} (message #3)" in err
    assert "content does not match its hash" in err


def test_row_removed_from_the_database_breaks_the_chain_at_its_successor():
    rows = append(3)
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {AuditEventRecord._meta.db_table} WHERE id = %s",
            [rows[1].id],
        )
    count, broken = verify_chain()
    assert count == 1
    assert broken.startswith(f"chain broken at audit event {rows[2].id}")
    assert "prev_hash does not match" in broken


def test_events_refuse_update_and_delete():
    [row] = append(1)
    row.detail = "rewritten"
    with pytest.raises(AppendOnlyError):
        row.save()
    with pytest.raises(AppendOnlyError):
        row.delete()
    with pytest.raises(AppendOnlyError):
        AuditEventRecord.objects.filter(id=row.id).update(detail="x")
    with pytest.raises(AppendOnlyError):
        AuditEventRecord.objects.all().delete()
    assert AuditEventRecord.objects.get(id=row.id).detail == ""


def test_admin_shows_audit_events_read_only(staff_user):
    request = RequestFactory().get("/")
    request.user = staff_user
    model_admin = admin.site._registry[AuditEventRecord]
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)


def test_a_break_past_the_first_page_is_found_and_counted_from_the_start():
    rows = append(7)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {AuditEventRecord._meta.db_table} SET detail = %s WHERE id = %s",
            ["rewritten", rows[4].id],
        )
    count, broken = verify_chain(page=2)
    assert count == 4
    assert broken.startswith(f"chain broken at audit event {rows[4].id} (message #5)")


def test_a_row_removed_at_a_page_boundary_breaks_the_chain_at_its_successor():
    rows = append(6)
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {AuditEventRecord._meta.db_table} WHERE id = %s",
            [rows[2].id],
        )
    assert verify_chain(page=3) == verify_chain(page=2)
    count, broken = verify_chain(page=2)
    assert count == 2
    assert broken.startswith(f"chain broken at audit event {rows[3].id}")


def rewrite(row: AuditEventRecord, detail: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {AuditEventRecord._meta.db_table} SET detail = %s WHERE id = %s",
            [detail, row.id],
        )


def audit_reads(call) -> tuple[object, list[str]]:
    """Return what ``call()`` returns and the SQL of its reads of audit events."""
    with CaptureQueriesContext(connection) as queries:
        value = call()
    table = AuditEventRecord._meta.db_table
    return value, [q["sql"] for q in queries if f'FROM "{table}"' in q["sql"]]


def test_a_check_walks_only_the_events_after_the_end_last_verified():
    rows = append(10)
    first, walked = audit_reads(lambda: check_chain(page=2))
    assert (first.verified, first.broken) == (10, None)
    assert len(walked) == 6  # five pages of two and the empty one after them
    assert first.full_at is not None
    more = append(3, start=11)
    second, walked = audit_reads(lambda: check_chain(page=2))
    assert (second.verified, second.broken, second.full_at) == (13, None, first.full_at)
    # The verified end re-read, then two pages after it and the empty one.
    assert len(walked) == 4
    assert f"> {rows[-1].id}" in walked[1] or f">= {rows[-1].id + 1}" in walked[1]
    assert ChainCheck.objects.get().through_id == more[-1].id


def test_a_check_finds_a_break_among_the_new_events():
    append(4)
    check_chain()
    new = append(3, start=5)
    rewrite(new[1], "forged")
    status = check_chain()
    assert status.verified == 5
    assert status.broken.startswith(f"chain broken at audit event {new[1].id}")
    assert ChainCheck.objects.get().count == 4


def test_a_changed_verified_end_makes_the_check_walk_in_full():
    rows = append(5)
    check_chain()
    rewrite(rows[-1], "forged")
    status = check_chain()
    assert status.verified == 4
    assert status.broken.startswith(f"chain broken at audit event {rows[-1].id}")


def test_an_edit_behind_the_verified_end_shows_at_the_next_full_walk():
    rows = append(5)
    check_chain()
    rewrite(rows[1], "forged")
    # The page's check reads from the verified end on: it does not see the edit.
    assert check_chain().broken is None
    count, broken = tasks.verify_audit_chain.apply().get(), check_chain().broken
    assert count == 1
    assert broken is None  # the failed walk left the verified end as it was
    assert verify_chain() == (
        1,
        f"chain broken at audit event {rows[1].id} (message #2): its content "
        "does not match its hash",
    )


def test_the_beat_task_records_a_full_walk():
    append(3)
    assert tasks.verify_audit_chain.apply().get() == 3
    mark = ChainCheck.objects.get()
    assert (mark.count, mark.full_at is not None) == (3, True)
