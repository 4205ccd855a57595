from django.contrib import admin

from artoo_web.logins.models import LoginCounter


@admin.register(LoginCounter)
class LoginCounterAdmin(admin.ModelAdmin):
    """Failed log-in counters: inspected, and deleted to lift a lock early."""

    list_display = ("kind", "username", "address", "failures", "last_failure")
    list_filter = ("kind",)
    search_fields = ("username", "address")
    show_full_result_count = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False
