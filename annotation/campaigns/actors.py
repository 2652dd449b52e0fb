"""Who is acting on the create and validate pages: a signed-in user or a campaign worker.

A campaign worker has no account: the campaigns entry view checks the signed link and
stores ``campaign_worker_id`` and ``campaign_id`` in the session, next to the session's
binding token. The session acts as the worker only while the worker id is bound to that
token (``annotation.campaigns.identities``): once an owner releases the id, or another
session binds it, this one no longer does. A campaign worker only acts on its campaign's
task and round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotation.campaigns.identities import (
    SESSION_BINDING_KEY,
    binding_matches,
    campaign_worker_seen,
)
from annotation.models import CampaignWorker

SESSION_WORKER_KEY = "campaign_worker_id"
SESSION_CAMPAIGN_KEY = "campaign_id"


@dataclass(frozen=True)
class Actor:
    user: Any | None = None  # a User
    campaign_worker: CampaignWorker | None = None

    @property
    def is_authenticated(self) -> bool:
        return bool(self.user is not None and self.user.is_authenticated) or (
            self.campaign_worker is not None
        )

    @property
    def is_campaign(self) -> bool:
        return self.user is None and self.campaign_worker is not None

    @property
    def key(self) -> str:
        if self.user is not None:
            return f"u:{self.user.pk}"
        if self.campaign_worker is not None:
            return f"c:{self.campaign_worker.pk}"
        return "anonymous"

    def filter_kwargs(self) -> dict[str, Any]:
        if self.user is not None:
            return {"user": self.user}
        return {"campaign_worker": self.campaign_worker}

    def id_column(self) -> tuple[str, int]:
        """The owner column of the actor's rows and its value: ``("user_id", 7)`` or
        ``("campaign_worker_id", 3)``."""
        if self.user is not None:
            return "user_id", self.user.pk
        return "campaign_worker_id", self.campaign_worker.pk

    def create_kwargs(self) -> dict[str, Any]:
        """Both owner columns, for ``Model.objects.create(**actor.create_kwargs())``."""
        return {"user": self.user, "campaign_worker": self.campaign_worker}

    @property
    def campaign(self):
        return self.campaign_worker.campaign if self.campaign_worker is not None else None

    def may_act_on(self, task, round_=None) -> bool:
        """A campaign worker acts only on its campaign's task (and round); users anywhere."""
        if self.campaign_worker is None:
            return True
        campaign = self.campaign_worker.campaign
        if campaign.task_id != task.pk or not campaign.is_active:
            return False
        return round_ is None or campaign.round_id == round_.pk


def actor_from_request(request) -> Actor | None:
    """The signed-in user, else the session's campaign worker (while its worker id is bound
    to this session), else None."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return Actor(user=user)
    session = getattr(request, "session", None)
    if session is None:
        return None
    worker_id = session.get(SESSION_WORKER_KEY)
    campaign_id = session.get(SESSION_CAMPAIGN_KEY)
    if not worker_id or not campaign_id:
        return None
    worker = (
        CampaignWorker.objects.select_related("campaign")
        .filter(pk=worker_id, campaign_id=campaign_id, campaign__is_active=True)
        .first()
    )
    if worker is None or not binding_matches(worker, session.get(SESSION_BINDING_KEY)):
        return None
    campaign_worker_seen(worker)
    return Actor(campaign_worker=worker)


def campaign_session_unbound(request) -> bool:
    """Return True when the session entered a campaign but no longer acts as its worker
    (the id was released or is bound to another browser)."""
    session = getattr(request, "session", None)
    return bool(session is not None and session.get(SESSION_WORKER_KEY))
