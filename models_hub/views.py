"""Pages of the models hub: register a model, its card, edit it, choose the models in the loop."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect
from django.views.generic import FormView, TemplateView

from core.errors import NotFound, ServiceError
from models_hub import selectors, services
from models_hub.forms import LoopForm, ModelEditForm, ModelRegisterForm
from models_hub.models import Protocol, RegisteredModel
from tasks import selectors as task_selectors
from tasks.permissions import can_manage_task, can_register_model


def _visible_task(code: str, user):
    try:
        return task_selectors.task_get_visible(code, user)
    except NotFound as error:
        raise Http404(error.message) from None


def _visible_model(pk: int, user) -> RegisteredModel:
    try:
        return selectors.model_get_visible(pk, user)
    except NotFound as error:
        raise Http404(error.message) from None


def registered_message(model) -> str:
    """What a new model's owner is told: a model without an endpoint has no health checks,
    it is scored from uploaded predictions files."""
    if model.has_endpoint:
        return f"Model {model.name} registered; its health is checked."
    return f"Model {model.name} registered; upload its predictions files to score it."


class ModelRegisterView(LoginRequiredMixin, FormView):
    """Register a model for a task that accepts models."""

    template_name = "models_hub/register.html"
    form_class = ModelRegisterForm

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            self.task = _visible_task(kwargs["code"], request.user)
            if not can_register_model(request.user, self.task):
                raise PermissionDenied("this task does not accept models")
        return super().dispatch(request, *args, **kwargs)

    def get_form_kwargs(self):
        kwargs = super().get_form_kwargs()
        kwargs["instance"] = RegisteredModel(task=self.task, owner=self.request.user)
        if can_manage_task(self.request.user, self.task):
            kwargs["loop_round"] = task_selectors.round_current(self.task)
        return kwargs

    def get_context_data(self, **kwargs):
        return super().get_context_data(task=self.task, **kwargs)

    def form_valid(self, form):
        try:
            model = services.model_register(
                task=self.task, owner=self.request.user, **form.service_fields()
            )
        except ServiceError as error:
            form.add_error(None, error.message)
            return self.form_invalid(form)
        messages.success(self.request, registered_message(model))
        return redirect("models_hub:detail", pk=model.pk)


class ModelDetailView(TemplateView):
    """The model card page (the leaderboards app adds scores in ``model_extra``)."""

    template_name = "models_hub/detail.html"

    def get_context_data(self, **kwargs):
        model = _visible_model(kwargs["pk"], self.request.user)
        can_edit = selectors.model_can_edit(model, self.request.user)
        return super().get_context_data(
            model=model,
            task=model.task,
            can_edit=can_edit,
            token_unreadable=can_edit and selectors.model_token_unreadable(model),
            **kwargs,
        )


class ModelHealthView(TemplateView):
    """The model card's health line (htmx polls it)."""

    template_name = "models_hub/_health.html"

    def get_context_data(self, **kwargs):
        model = _visible_model(kwargs["pk"], self.request.user)
        can_edit = selectors.model_can_edit(model, self.request.user)
        return super().get_context_data(model=model, can_edit=can_edit, **kwargs)


class ModelEditView(LoginRequiredMixin, FormView):
    """The owner edits the card, the endpoint, the write-only token and publishing."""

    template_name = "models_hub/edit.html"
    form_class = ModelEditForm

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            self.model = _visible_model(kwargs["pk"], request.user)
            if not selectors.model_can_edit(self.model, request.user):
                raise PermissionDenied("only the model's owner can edit it")
        return super().dispatch(request, *args, **kwargs)

    def get_form_kwargs(self):
        kwargs = super().get_form_kwargs()
        # A copy: a refused edit must not leave half-applied values on the page's model.
        kwargs["instance"] = RegisteredModel.objects.get(pk=self.model.pk)
        kwargs["editor"] = self.request.user
        return kwargs

    def get_context_data(self, **kwargs):
        return super().get_context_data(
            model=self.model,
            token_unreadable=selectors.model_token_unreadable(self.model),
            **kwargs,
        )

    def form_valid(self, form):
        try:
            services.model_update_card(self.model, self.request.user, **form.card_fields())
            services.model_set_published(
                self.model, self.request.user, form.cleaned_data["is_published"]
            )
        except ServiceError as error:
            form.add_error(None, error.message)
            return self.form_invalid(form)
        messages.success(self.request, "Model saved.")
        return redirect("models_hub:detail", pk=self.model.pk)


class ModelLoopView(LoginRequiredMixin, FormView):
    """Task owners choose the models in the loop of each round."""

    template_name = "models_hub/loop.html"
    form_class = LoopForm

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            self.task = _visible_task(kwargs["code"], request.user)
            if not can_manage_task(request.user, self.task):
                raise PermissionDenied("only the task's owners choose the models in the loop")
        return super().dispatch(request, *args, **kwargs)

    def get_form_kwargs(self):
        kwargs = super().get_form_kwargs()
        kwargs["rounds_with_models"] = selectors.rounds_with_models(self.task)
        kwargs["models"] = [
            model
            for model in selectors.model_list_for_task(self.task, self.request.user)
            if model.protocol != Protocol.NONE
        ]
        return kwargs

    def get_context_data(self, **kwargs):
        return super().get_context_data(
            task=self.task,
            loop_rounds=selectors.loop_health(self.task),
            round_warnings=task_selectors.round_warnings(self.task),
            **kwargs,
        )

    def form_valid(self, form):
        try:
            for round, models in form.selections():
                services.model_set_in_loop(round, models, self.request.user)
        except ServiceError as error:
            form.add_error(None, error.message)
            return self.form_invalid(form)
        messages.success(self.request, "The models in the loop were saved.")
        return redirect("models_hub:loop", code=self.task.code)


class LoopHealthView(LoginRequiredMixin, TemplateView):
    """The health of the models in the loop of each open round (the task page's owner card
    loads it with htmx)."""

    template_name = "models_hub/_loop_health.html"

    def get_context_data(self, **kwargs):
        task = _visible_task(kwargs["code"], self.request.user)
        if not can_manage_task(self.request.user, task):
            raise PermissionDenied("only the task's owners see the loop")
        return super().get_context_data(
            task=task, loop_rounds=selectors.loop_health(task), **kwargs
        )
