"""Admin for crowd campaigns (with the bonus CSV), their workers (release a worker id from
its browser) and the read-only cached stats.

Owners see only their tasks' rows (``OwnerScopedAdmin``).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import StreamingHttpResponse
from django.utils.html import format_html

from annotation.campaigns import identities as campaign_identities
from annotation.campaigns import links
from annotation.campaigns import services as campaigns
from annotation.models import Campaign, CampaignWorker, RoundStats, WorkerStats
from annotation.stats.recompute import stats_recompute
from core.admin import OwnerScopedAdmin
from tasks.models import Round, Task
from tasks.permissions import can_manage_campaigns, is_task_owner


class CampaignAdminForm(forms.ModelForm):
    class Meta:
        model = Campaign
        fields = [
            "task",
            "round",
            "name",
            "kind",
            "quota",
            "worker_id_param",
            "completion_code",
            "is_active",
            "signed_worker_links",
        ]

    def clean(self):
        cleaned = super().clean()
        task, round_ = cleaned.get("task"), cleaned.get("round")
        if task and round_ and round_.task_id != task.pk:
            self.add_error("round", "This round belongs to another task.")
        param = cleaned.get("worker_id_param")
        if param and not links.PARAM_NAME_PATTERN.match(param):
            self.add_error("worker_id_param", "Use letters, digits, _ or - (a URL parameter).")
        return cleaned


@admin.register(Campaign)
class CampaignAdmin(OwnerScopedAdmin):
    form = CampaignAdminForm
    list_display = [
        "name",
        "task",
        "round",
        "kind",
        "quota",
        "is_active",
        "signed_worker_links",
        "created_at",
    ]
    list_filter = ["is_active", "kind", "signed_worker_links"]
    search_fields = ["name", "task__code"]
    readonly_fields = ["link", "created_by", "created_at"]
    actions = ["download_csv"]

    def has_add_permission(self, request):
        return self._owns_any(request)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if not request.user.is_superuser:
            if db_field.name == "task":
                kwargs["queryset"] = Task.objects.filter(owners=request.user)
            elif db_field.name == "round":
                kwargs["queryset"] = Round.objects.filter(task__owners=request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        if not is_task_owner(request.user, obj.task):
            raise PermissionDenied  # the form already limits the tasks
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    @admin.display(description="Link for the crowd platform")
    def link(self, obj):
        if obj.pk is None:
            return "—"
        return format_html("<code>{}</code>", links.campaign_link_path(obj))

    @admin.action(description="Download the bonus CSV (one campaign)")
    def download_csv(self, request, queryset):
        selected = list(queryset.select_related("task")[:2])
        if len(selected) != 1:
            self.message_user(request, "Select exactly one campaign.", messages.ERROR)
            return None
        campaign = selected[0]
        if not can_manage_campaigns(request.user, campaign.task):
            self.message_user(request, "Only the task's owners download it.", messages.ERROR)
            return None
        response = StreamingHttpResponse(
            campaigns.campaign_csv_lines(campaign), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = (
            f'attachment; filename="{campaign.task.code}-campaign-{campaign.pk}-workers.csv"'
        )
        return response


@admin.register(CampaignWorker)
class CampaignWorkerAdmin(OwnerScopedAdmin):
    """A campaign's workers and the browser binding of each id; rows come from the links."""

    task_lookup = "campaign__task"
    list_display = [
        "external_id",
        "campaign",
        "is_bound",
        "created_at",
        "bound_at",
        "last_seen_at",
        "completed_at",
    ]
    list_filter = ["campaign__task"]
    list_select_related = ["campaign__task"]
    search_fields = ["external_id", "campaign__name"]
    fields = [
        "campaign",
        "external_id",
        "is_bound",
        "created_at",
        "bound_at",
        "last_seen_at",
        "completed_at",
    ]
    readonly_fields = fields
    actions = ["release"]

    def has_add_permission(self, request):
        return False

    @admin.display(boolean=True, description="bound to a browser")
    def is_bound(self, obj):
        return bool(obj.binding_hash)

    @admin.action(description="Release these worker ids (the next browser binds each)")
    def release(self, request, queryset):
        released = campaign_identities.campaign_workers_release(queryset)
        self.message_user(request, f"Released {released} worker id(s).")


class ReadOnlyStatsAdmin(OwnerScopedAdmin):
    """Cached counters are written by the services only; the admin can rebuild them."""

    actions = ["recompute"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def _tasks_of(self, queryset):
        raise NotImplementedError

    @admin.action(description="Recompute the counters of these tasks from the data")
    def recompute(self, request, queryset):
        tasks = [task for task in self._tasks_of(queryset) if is_task_owner(request.user, task)]
        for task in tasks:
            stats_recompute(task)
        self.message_user(request, f"Recomputed the counters of {len(tasks)} task(s).")


@admin.register(RoundStats)
class RoundStatsAdmin(ReadOnlyStatsAdmin):
    task_lookup = "round__task"
    list_display = ["round", "collected", "fooled", "verified_fooled", "validated", "retracted"]
    list_select_related = ["round__task"]

    def _tasks_of(self, queryset):
        return Task.objects.filter(rounds__stats__in=queryset).distinct()


@admin.register(WorkerStats)
class WorkerStatsAdmin(ReadOnlyStatsAdmin):
    list_display = [
        "task",
        "round",
        "user",
        "campaign_worker",
        "examples",
        "fooled",
        "verified_fooled",
        "rejected",
        "retracted",
        "validations",
        "time_spent_ms",
    ]
    list_filter = ["task"]
    list_select_related = ["task", "round__task", "user", "campaign_worker"]

    def _tasks_of(self, queryset):
        return Task.objects.filter(pk__in=queryset.values("task_id"))
