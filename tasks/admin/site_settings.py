"""The admin of the site's settings (one row: self-sign-up)."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.urls import reverse

from tasks.accounts import site_settings_get
from tasks.models import (
    SiteSettings,
)


@admin.register(SiteSettings)
class SiteSettingsAdmin(admin.ModelAdmin):
    """The site's switches: one row, which superusers change and nobody adds or deletes."""

    fields = ("signup_open", "updated_at")
    readonly_fields = ("updated_at",)

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        """The list of one row is its change form."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        row = site_settings_get()
        return redirect(reverse("admin:tasks_sitesettings_change", args=[row.pk]))
