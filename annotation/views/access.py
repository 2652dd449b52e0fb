"""Who acts on the annotation pages, and the pages shown when a service refuses."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from annotation.campaigns.actors import actor_from_request, campaign_session_unbound
from annotation.models import Campaign
from core.errors import PermissionDenied, ServiceError


def sync_wait_seconds() -> float:
    """How long a POST waits for the model before the page polls instead."""
    return float(getattr(settings, "ANNOTATION_SYNC_WAIT_SECONDS", 1.5))


def poll_wait_seconds() -> float:
    return float(getattr(settings, "ANNOTATION_POLL_WAIT_SECONDS", 2.0))


def slow_model_seconds() -> float:
    return float(getattr(settings, "ANNOTATION_SLOW_MODEL_SECONDS", 30.0))


def campaign_done_url(task) -> str:
    try:
        return reverse("annotation:campaign_done")
    except NoReverseMatch:  # the campaigns pages are not wired
        return reverse("tasks:detail", args=[task.code])


def campaign_kind_ok(actor, kind: str) -> bool:
    return actor.campaign_worker is None or actor.campaign_worker.campaign.kind == kind


def require_campaign_kind(actor, kind: str) -> None:
    if not campaign_kind_ok(actor, kind):
        other = "validation" if kind == Campaign.Kind.CREATE else "writing examples"
        raise PermissionDenied(f"your campaign is for {other}")


def no_actor_response(request):
    """A campaign session that lost its worker id gets a page saying so; others sign in."""
    if campaign_session_unbound(request):
        return render(
            request,
            "annotation/campaign_error.html",
            {
                "title": "This browser no longer works as your worker id",
                "message": (
                    "The campaign's owner released your worker id, another browser now uses "
                    "it, or the campaign is closed."
                ),
            },
            status=403,
        )
    return redirect_to_login(request.get_full_path())


def error_page(request, error: ServiceError):
    if isinstance(error, PermissionDenied) and actor_from_request(request) is None:
        return no_actor_response(request)
    return render(request, "annotation/error.html", {"message": error.message}, status=error.status)


def annotation_view(view):
    """Resolve the actor (``request.actor``; a login redirect for nobody) and turn
    ``ServiceError`` into an error page."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        actor = actor_from_request(request)
        if actor is None:
            return no_actor_response(request)
        request.actor = actor
        try:
            return view(request, *args, **kwargs)
        except ServiceError as error:
            return error_page(request, error)

    return wrapper


def int_or_none(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
