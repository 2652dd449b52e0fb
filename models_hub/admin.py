"""Admin for registered models: owners of a task see its models; superusers see all.

The token is write-only (a password input that never renders its value), saving goes through
``models_hub.services``, and "Check health now" enqueues health checks on the health queue.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import models
from django.db.models import Q
from django.utils import timezone
from redis.exceptions import RedisError

from core.admin import OwnerScopedAdmin
from core.errors import ServiceError
from models_hub import queues, selectors, services
from models_hub.forms import ModelAdminForm
from models_hub.models import ModelStatus, RegisteredModel
from tasks.models import Task
from tasks.permissions import can_manage_task
from tasks.templatetags.dynatask import latency

HEALTH_FIELDS = (
    "status",
    "last_health_at",
    "health_latency",
    "last_health_error",
    "model_version",
    "memory_gb",
    "created_at",
    "updated_at",
)


@admin.register(RegisteredModel)
class RegisteredModelAdmin(OwnerScopedAdmin):
    form = ModelAdminForm
    list_display = (
        "name",
        "task",
        "owner",
        "protocol",
        "status",
        "last_health_at",
        "health_latency",
        "is_published",
    )
    list_filter = ("status", "protocol", "is_published", "task")

    @admin.display(description="Stored token")
    def token_state(self, obj) -> str:
        # Whether a token is stored and can be decrypted; never the token itself.
        if obj is None or not obj.has_token:
            return "none"
        if selectors.model_token_unreadable(obj):
            return (
                "cannot be decrypted with this site's keys (DYNATASK_SECRET_KEYS): enter the "
                "token again"
            )
        return "stored, encrypted (leave the field blank to keep it)"

    @admin.display(description="Health latency", ordering="last_health_latency_ms")
    def health_latency(self, obj) -> str:
        return latency(obj.last_health_latency_ms) or "-"

    search_fields = ("name", "description")
    list_select_related = ("task", "owner")
    raw_id_fields = ("owner",)
    readonly_fields = (*HEALTH_FIELDS, "token_state")
    actions = ["check_health_now", "disable_models", "enable_models"]
    fieldsets = (
        (
            None,
            {"fields": ("task", "owner", "name", "description", "is_published", "is_anonymous")},
        ),
        ("Model card", {"fields": ("params", "languages", "license", "source_url", "card")}),
        (
            "Endpoint",
            {
                "fields": (
                    "protocol",
                    "endpoint_url",
                    "token_state",
                    "auth_token",
                    "clear_auth_token",
                    "connect_timeout",
                    "read_timeout",
                    "read_timeout_cap",
                    "batch_size",
                    "max_concurrency",
                    "options",
                )
            },
        ),
        ("In the loop", {"fields": ("loop_rounds",)}),
        ("Health", {"fields": HEALTH_FIELDS}),
    )
    # Adding a model asks whether it joins the current round's loop (off unless ticked).
    add_fieldsets = (
        *fieldsets[:3],
        ("In the loop", {"fields": ("in_loop",)}),
    )

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return list(self.add_fieldsets)
        fieldsets = list(super().get_fieldsets(request, obj))
        # The rounds to choose from are the task's: unknown until the model exists.
        if not can_manage_task(request.user, obj.task):
            fieldsets = [fs for fs in fieldsets if fs[0] != "In the loop"]
        return fieldsets

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        # The form refuses moving a stored token to another address or owner unless the
        # editor is the model's owner (``services.token_move_problem``).
        return type(form.__name__, (form,), {"editor": request.user})

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if isinstance(db_field, models.URLField):
            kwargs.setdefault("assume_scheme", "https")
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def has_add_permission(self, request):
        return self._owns_any(request)

    def get_readonly_fields(self, request, obj=None):
        # The task is fixed once registered: scores and rounds hang off it.
        fields = (*HEALTH_FIELDS, "token_state")
        if obj is not None:
            fields = (*fields, "task")
        # A model's read-timeout cap is the site's staff's to raise, not its owner's.
        if not request.user.has_perm("models_hub.raise_read_timeout"):
            fields = (*fields, "read_timeout_cap")
        return fields

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "task" and not request.user.is_superuser:
            kwargs["queryset"] = Task.objects.filter(owners=request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_changeform_initial_data(self, request):
        return {"owner": request.user.pk, **super().get_changeform_initial_data(request)}

    def _fields(self, form) -> dict:
        names = [*services.CARD_FIELDS, *services.ENDPOINT_FIELDS, *services.FLAG_FIELDS]
        return {name: form.cleaned_data[name] for name in names if name in form.cleaned_data}

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        try:
            if not change:
                owner = data.get("owner") or request.user
                if not request.user.is_superuser:
                    owner = request.user
                created = services.model_register(
                    task=data["task"],
                    owner=owner,
                    auth_token=data.get("auth_token", ""),
                    is_published=data.get("is_published", False),
                    in_loop=bool(data.get("in_loop")) and can_manage_task(owner, data["task"]),
                    trial=False,  # the form's clean() has sent the trial request
                    **self._fields(form),
                )
                if data.get("read_timeout_cap") is not None:
                    services.model_set_read_timeout_cap(
                        created, request.user, data["read_timeout_cap"]
                    )
                # The admin goes on with ``obj`` (related saves, the log entry, the redirect).
                obj.pk, obj.owner = created.pk, created.owner
                obj.created_at, obj.updated_at = created.created_at, created.updated_at
                obj._state.adding, obj._state.db = False, created._state.db
                return
            current = RegisteredModel.objects.select_related("task").get(pk=obj.pk)
            if "read_timeout_cap" in data:
                services.model_set_read_timeout_cap(current, request.user, data["read_timeout_cap"])
            services.model_update_card(
                current,
                request.user,
                auth_token=data.get("auth_token", ""),
                clear_auth_token=data.get("clear_auth_token", False),
                **self._fields(form),
            )
            services.model_set_published(current, request.user, data.get("is_published", False))
            if data.get("owner") and data["owner"] != current.owner and request.user.is_superuser:
                # ``updated_at`` too: the leaderboards' data version reads it.
                RegisteredModel.objects.filter(pk=obj.pk).update(
                    owner=data["owner"], updated_at=timezone.now()
                )
        except ServiceError as error:
            # The form's clean() already checked the endpoint; this is a race, told plainly.
            self.message_user(request, f"Not saved: {error.message}", messages.ERROR)

    def save_related(self, request, form, formsets, change):
        # No super(): the only relation edited here (the loop) goes through the service.
        if change and "loop_rounds" in form.cleaned_data and form.instance.pk:
            model = RegisteredModel.objects.select_related("task").get(pk=form.instance.pk)
            if can_manage_task(request.user, model.task):
                try:
                    services.model_set_rounds(model, form.cleaned_data["loop_rounds"], request.user)
                except ServiceError as error:
                    self.message_user(request, error.message, messages.ERROR)

    @admin.action(description="Check health now")
    def check_health_now(self, request, queryset):
        model_ids = list(
            queryset.exclude(Q(protocol="none") | Q(endpoint_url="")).values_list("pk", flat=True)
        )
        try:
            for model_id in model_ids:
                queues.enqueue_health_check(model_id)
        except RedisError as error:
            self.message_user(request, f"The queue is unreachable: {error}", messages.ERROR)
            return
        self.message_user(
            request,
            f"Health checks queued for {len(model_ids)} model(s); reload in a few seconds.",
            messages.SUCCESS,
        )

    @admin.action(description="Disable (take out of the loop picks and health checks)")
    def disable_models(self, request, queryset):
        count = 0
        for model in queryset.select_related("task"):
            if selectors.model_can_edit(model, request.user):
                services.model_set_status(model, request.user, ModelStatus.DISABLED)
                count += 1
        self.message_user(request, f"{count} model(s) disabled.", messages.SUCCESS)

    @admin.action(description="Re-enable (status unknown until the next health check)")
    def enable_models(self, request, queryset):
        count = 0
        for model in queryset.select_related("task"):
            if selectors.model_can_edit(model, request.user):
                services.model_set_status(model, request.user, ModelStatus.UNKNOWN)
                queues.enqueue_health_check(model.pk)
                count += 1
        self.message_user(request, f"{count} model(s) re-enabled.", messages.SUCCESS)
