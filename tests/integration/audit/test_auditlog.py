"""The audit log: append-only, hash-chained, verified row by row."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.core.management import call_command
from django.db import connection
from django.test import RequestFactory

from artoo_web.auditlog import (
    GENESIS,
    AppendOnlyError,
    AuditEventRecord,
    chain_hash,
    verify_chain,
)
from roles.contracts import AuditEvent

pytestmark = pytest.mark.django_db


def append(n: int) -> list[AuditEventRecord]:
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
        for i in range(1, n + 1)
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
