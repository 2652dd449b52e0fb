"""Make one request per (route, role) and reduce the answer to a comparable outcome.

Outcomes: an HTTP status (``200``, ``403``, ``404``, ``405``...), ``"login"`` for a redirect
to a login page (the site's or the admin's), ``"302"`` for any other redirect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse

from tests.security.world import World

LOGIN_PATHS = ("/accounts/login/", "/admin/login/")


@dataclass(frozen=True)
class Check:
    """How to call one route: method, path arguments, body, and the outcome per role."""

    expect: dict[str, Any]
    method: str = "GET"
    kwargs: Callable[[World], dict] | None = None
    data: Callable[[World], dict] | None = None
    path: Callable[[World], str] | None = None  # for unnamed patterns
    headers: dict[str, str] = field(default_factory=dict)
    # A side effect (e.g. a row count) that only the ``allowed`` roles may change.
    effect: Callable[[World], Any] | None = None
    allowed: tuple[str, ...] = ()
    note: str = ""


def default_kwargs(world: World, key: str, pattern: str) -> dict[str, Any]:
    """Fill the path arguments of ``pattern`` from the world, by argument name."""
    names = re.findall(r"<(?:\w+:)?(\w+)>", pattern)
    values: dict[str, Any] = {}
    for name in names:
        if name == "code":
            values[name] = world.task.code
        elif name == "pk":
            if key.startswith("annotation:") or key.startswith("api:example"):
                values[name] = world.example.pk
            elif key.startswith("api:run"):
                values[name] = world.run.pk
            elif key.startswith("api:snapshot"):
                values[name] = world.snapshot.pk
            else:
                values[name] = world.model.pk
        elif name == "slug":
            values[name] = (
                world.datasets["scoring"].slug
                if "dataset" in key and world.datasets
                else world.fork.slug
                if world.fork
                else "none"
            )
        elif name == "snapshot_id":
            values[name] = world.snapshot.pk
        elif name == "campaign_id":
            values[name] = world.campaign.pk
        elif name == "run_id":
            values[name] = world.run.pk
        elif name in ("task_id",):
            values[name] = world.task.pk
        elif name == "number":
            values[name] = 1
        elif name == "job_id":
            values[name] = "0123abcd-job"
        elif name == "signed":
            from annotation.campaigns.links import campaign_signed_token

            values[name] = campaign_signed_token(world.campaign)
        elif name == "proposal_id":
            values[name] = world.proposal.pk
        elif name == "decision":
            values[name] = "accept"
        elif name == "id":
            values[name] = world.users["worker"].pk
        elif name == "uidb64":
            values[name] = "MQ"
        elif name == "token":
            values[name] = "set-password"
        else:
            raise KeyError(f"no default for path argument {name!r} of {key} ({pattern})")
    return values


def build_path(world: World, key: str, pattern: str, check: Check) -> str:
    if check.path is not None:
        return check.path(world)
    kwargs = check.kwargs(world) if check.kwargs else default_kwargs(world, key, pattern)
    return reverse(key, kwargs=kwargs)


def outcome(response) -> Any:
    if response.status_code in (301, 302, 303, 307, 308):
        location = response.get("Location", "")
        if any(part in location for part in LOGIN_PATHS):
            return "login"
        return "302"
    return response.status_code


def response_text(response) -> str:
    """Return the body of ``response`` as text (a streamed one drained)."""
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def probe(client, method: str, path: str, data: dict | None = None, headers=None) -> Any:
    call = getattr(client, method.lower())
    if method != "GET" and path.startswith("/api/"):
        response = call(
            path, json.dumps(data or {}), content_type="application/json", headers=headers or {}
        )
    else:
        response = call(path, data or {}, headers=headers or {})
    # Streaming answers (CSV, JSON Lines) are drained so the view's generator runs.
    if getattr(response, "streaming", False):
        b"".join(response.streaming_content)
    return outcome(response)
