"""The admin of task proposals: accept (a task is made) or reject them."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse

from core.errors import ServiceError
from tasks import services
from tasks.config import TaskConfigError, parse_task_config
from tasks.forms import (
    ProposalDecisionForm,
    config_check_context,
)
from tasks.models import (
    ProposalStatus,
    TaskProposal,
)


def config_listing(yaml_text: str) -> str:
    """Return the HTML of a read-only YAML listing: line numbers, indentation kept, escaped.

    The text is parsed too, so that the lines with problems are marked and listed.
    """
    try:
        parse_task_config(yaml_text)
    except TaskConfigError as error:
        check = config_check_context(error.issues)
    else:
        check = config_check_context(())
    marked = {int(line) for line in check["error_lines"].split(",") if line}
    lines = yaml_text.rstrip("\n").split("\n")
    return render_to_string(
        "tasks/config_listing.html",
        {
            "text": "\n".join(lines),
            "numbers": [(number, number in marked) for number in range(1, len(lines) + 1)],
            "check": {**check, "anchor_lines": True},
        },
    )


@admin.register(TaskProposal)
class TaskProposalAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "proposer", "status", "created_at", "decided_by"]
    list_filter = ["status"]
    fields = [
        "proposer",
        "code",
        "name",
        "description",
        "proposed_config",
        "status",
        "reason",
        "decided_by",
        "decided_at",
        "task",
    ]
    readonly_fields = [
        "proposer",
        "code",
        "name",
        "description",
        "proposed_config",
        "status",
        "reason",
        "decided_by",
        "decided_at",
        "task",
    ]
    actions = ["accept_selected"]
    change_form_template = "admin/tasks/taskproposal/change_form.html"

    class Media:
        css = {"all": ["tasks/config_editor.css"]}

    def has_add_permission(self, request):
        return False

    @admin.display(description="Config (YAML)")
    def proposed_config(self, obj):
        if not obj.config_yaml.strip():
            return (
                "No config proposed: accepting creates the task with a default "
                "two-label classification config."
            )
        return config_listing(obj.config_yaml)

    def get_urls(self):
        own = [
            path(
                "<int:proposal_id>/decide/<str:decision>/",
                self.admin_site.admin_view(self.decide_view),
                name="tasks_taskproposal_decide",
            )
        ]
        return own + super().get_urls()

    @admin.action(description="Accept the selected proposals")
    def accept_selected(self, request, queryset):
        accepted = 0
        for proposal in queryset.filter(status=ProposalStatus.PENDING):
            try:
                services.proposal_accept(proposal, decided_by=request.user)
                accepted += 1
            except ServiceError as error:
                messages.error(request, f"{proposal.code}: {error.message}")
        if accepted:
            messages.success(request, f"Accepted {accepted} proposal(s).")

    def decide_view(self, request, proposal_id, decision):
        if not request.user.is_superuser or decision not in {"accept", "reject"}:
            raise PermissionDenied
        proposal = get_object_or_404(TaskProposal, pk=proposal_id)
        form = ProposalDecisionForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            reason = form.cleaned_data["reason"]
            try:
                if decision == "accept":
                    task = services.proposal_accept(
                        proposal, decided_by=request.user, reason=reason
                    )
                    messages.success(request, f"Accepted: task {task.code} created with round 1.")
                else:
                    services.proposal_reject(proposal, decided_by=request.user, reason=reason)
                    messages.success(request, f"Rejected proposal {proposal.code}.")
                return redirect(reverse("admin:tasks_taskproposal_changelist"))
            except ServiceError as error:
                messages.error(request, error.message)
        context = {
            **self.admin_site.each_context(request),
            "title": f"{decision.capitalize()} proposal {proposal.code}",
            "proposal": proposal,
            "decision": decision,
            "config_listing": config_listing(proposal.config_yaml)
            if proposal.config_yaml.strip()
            else "",
            "form": form,
            "opts": self.model._meta,
            "original": proposal,
        }
        return TemplateResponse(request, "admin/tasks/taskproposal/decide.html", context)
