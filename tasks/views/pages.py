"""Pages of the tasks app: the task list, a task's page, proposals and the profile page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import Http404
from django.shortcuts import redirect
from django.views.generic import FormView, ListView, TemplateView

from core.errors import NotFound, ServiceError
from tasks import selectors, services
from tasks.forms import TaskProposalForm
from tasks.permissions import can_manage_task


class TaskListView(ListView):
    template_name = "tasks/task_list.html"
    context_object_name = "tasks"

    def get_queryset(self):
        return selectors.task_list_visible(self.request.user).filter(active=True)


class LeaderboardIndexView(TaskListView):
    template_name = "tasks/leaderboard_index.html"


class TaskDetailView(TemplateView):
    template_name = "tasks/task_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        try:
            task = selectors.task_get_visible(kwargs["code"], self.request.user)
        except NotFound as error:
            raise Http404(error.message) from None
        context.update(
            task=task,
            config=task.config,
            rounds=list(task.rounds.all()),
            current_round=selectors.round_current(task),
            is_owner=can_manage_task(self.request.user, task),
            round_warnings=selectors.round_warnings(task),
        )
        return context


class TaskProposalView(LoginRequiredMixin, FormView):
    template_name = "tasks/proposal_form.html"
    form_class = TaskProposalForm

    def form_valid(self, form):
        try:
            services.proposal_submit(proposer=self.request.user, **form.cleaned_data)
        except ServiceError as error:
            form.add_error(None, error.message)
            return self.form_invalid(form)
        messages.success(self.request, "Thank you: an admin will review your proposal.")
        return redirect("tasks:home")


class ProfileView(LoginRequiredMixin, TemplateView):
    template_name = "tasks/profile.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        user = self.request.user
        context["proposals"] = user.task_proposals.all()
        context["owned_tasks"] = user.owned_tasks.all()
        return context
