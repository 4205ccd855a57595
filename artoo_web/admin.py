from django.contrib import admin

from artoo_web.models import BusMessage, Run, TraceEvent


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
        "directive",
        "round",
        "created_at",
    )
    list_filter = ("status",)
    list_select_related = ("owner",)
    search_fields = ("id", "task_id", "raw_input")
    inlines = [BusMessageInline]


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
