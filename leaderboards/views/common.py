"""What the leaderboards pages share: a visible task, model or run, or 404 (403)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404

from core.errors import NotFound
from leaderboards.selectors.runs import RunDetail, run_detail
from models_hub.models import RegisteredModel
from models_hub.selectors import model_can_edit, model_get_visible
from tasks.models import Task
from tasks.permissions import can_manage_task
from tasks.selectors import task_get_visible


def task_or_404(code: str, user) -> Task:
    """Return task ``code`` if ``user`` may see it, else raise Http404."""
    try:
        return task_get_visible(code, user)
    except NotFound as error:
        raise Http404(error.message) from None


def owned_task(code: str, user) -> Task:
    """Return task ``code`` if ``user`` owns it (403 for a visitor who may only see it)."""
    task = task_or_404(code, user)
    if not can_manage_task(user, task):
        raise PermissionDenied("only the task's owners can do this")
    return task


def model_or_404(pk: int, user) -> RegisteredModel:
    """Return model ``pk`` if ``user`` may see it, else raise Http404."""
    try:
        return model_get_visible(pk, user)
    except NotFound as error:
        raise Http404(error.message) from None


def editable_model(pk: int, user) -> RegisteredModel:
    """Return model ``pk`` if ``user`` may edit it (its owner, the task's owners), else 404/403."""
    model = model_or_404(pk, user)
    if not model_can_edit(model, user):
        raise PermissionDenied("only the model's owner can do this")
    return model


def run_detail_or_404(run_id: int, user) -> RunDetail:
    """Return run ``run_id`` with its progress and score if ``user`` may see it, else 404."""
    try:
        return run_detail(run_id, user)
    except NotFound as error:
        raise Http404(error.message) from None


def is_htmx_partial(request) -> bool:
    """Return True when htmx asks for a fragment (a history restore needs the whole page)."""
    return request.headers.get("HX-Request") == "true" and not request.headers.get(
        "HX-History-Restore-Request"
    )
