from django.contrib import admin
from django.urls import path

from artoo_web import views
from artoo_web.models import Benchmark, BusMessage, Project, Run, TraceEvent


class RecordAdmin(admin.ModelAdmin):
    """Read-only admin for records: they are inspected, never edited."""

    show_full_result_count = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class BusMessageInline(admin.TabularInline):
    model = BusMessage
    fields = (
        "id",
        "round",
        "sender",
        "recipient",
        "type",
        "created_at",
        "delivered_at",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Run)
class RunAdmin(RecordAdmin):
    list_display = (
        "id",
        "task_id",
        "owner",
        "status",
        "control",
        "directive",
        "round",
        "project",
        "created_at",
    )
    list_filter = ("status", "control")
    list_select_related = ("owner",)
    search_fields = ("id", "task_id", "raw_input")
    inlines = [BusMessageInline]


@admin.register(Project)
class ProjectAdmin(RecordAdmin):
    list_display = ("id", "owner", "status", "short_request", "created_at")
    list_filter = ("status",)
    list_select_related = ("owner",)
    search_fields = ("id", "request", "directory")

    @admin.display(description="Request")
    def short_request(self, obj: Project) -> str:
        return obj.request[:80]


@admin.register(BusMessage)
class BusMessageAdmin(RecordAdmin):
    list_display = ("id", "run", "round", "sender", "recipient", "type", "delivered_at")
    list_filter = ("type", "sender", "recipient")
    list_select_related = ("run",)
    search_fields = ("run__id",)


@admin.register(TraceEvent)
class TraceEventAdmin(RecordAdmin):
    list_display = ("id", "run", "role", "kind", "tokens", "elapsed_ms", "created_at")
    list_filter = ("role", "kind")
    list_select_related = ("run",)


from artoo_web.auditlog import (  # noqa: E402
    AuditCursor,
    AuditEventRecord,
    AuditReportRecord,
)


@admin.register(AuditEventRecord)
class AuditEventRecordAdmin(RecordAdmin):
    list_display = (
        "id",
        "timestamp",
        "message_id",
        "run_id",
        "from_role",
        "to_role",
        "message_type",
        "anomaly",
        "detail",
    )
    list_filter = ("anomaly", "source", "message_type")
    search_fields = ("run_id", "message_id")
    readonly_fields = [f.name for f in AuditEventRecord._meta.fields]


@admin.register(AuditReportRecord)
class AuditReportRecordAdmin(RecordAdmin):
    list_display = ("id", "trigger", "period_from", "period_to", "in_reply_to")
    list_filter = ("trigger",)
    readonly_fields = [f.name for f in AuditReportRecord._meta.fields]


@admin.register(AuditCursor)
class AuditCursorAdmin(RecordAdmin):
    list_display = ("id", "last_message_id", "updated_at")
    readonly_fields = [f.name for f in AuditCursor._meta.fields]


from artoo_web.models import Approval  # noqa: E402


@admin.register(Approval)
class ApprovalAdmin(RecordAdmin):
    list_display = (
        "id",
        "run",
        "subtask_id",
        "tool",
        "command",
        "status",
        "decided_by",
        "created_at",
        "decided_at",
    )
    list_filter = ("status", "tool")
    list_select_related = ("run", "decided_by")
    search_fields = ("run__id", "command")
    readonly_fields = [f.name for f in Approval._meta.fields]


def _with_memory_view(get_urls):
    """Add the Megram browser (fed by the memory worker) to the admin's URLs."""

    def urls():
        view = admin.site.admin_view(views.admin_memory)
        return [path("memory/", view, name="memory"), *get_urls()]

    return urls


admin.site.get_urls = _with_memory_view(admin.site.get_urls)


@admin.register(Benchmark)
class BenchmarkAdmin(RecordAdmin):
    list_display = ("id", "name", "session", "model", "created_at")
    search_fields = ("session", "model")
    exclude = ("record",)
    readonly_fields = ("name", "session", "model", "report", "created_at")
