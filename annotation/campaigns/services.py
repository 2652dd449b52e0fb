"""Crowd campaigns (Prolific-style): campaign workers, quotas, time and the CSV.

A campaign worker has no account. The link ``/c/<signed token>/?<worker_id_param>=<id>``
carries a token signed with the site's secret (``django.core.signing``), so a link cannot be
forged from a guessed token, and the platform's worker id. The pair (campaign, external id)
is the worker. Counts in the bonus CSV come from the data (examples and validations), not
from cached counters, because money depends on them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotation.campaigns import identities
from annotation.campaigns.actors import Actor
from annotation.campaigns.links import (
    EXTERNAL_ID_PATTERN,
    PARAM_NAME_PATTERN,
)
from annotation.models import Campaign, CampaignWorker, Example, Validation, ValidationState
from annotation.stats import counters
from annotation.stats.buffer import counters_add_on_commit
from core.csv_export import csv_lines
from core.errors import NotFound, PermissionDenied, ServiceError
from tasks.models import Round, Task

# Longer than this is a worker who left the tab open; cap it so bonuses stay fair.
MAX_RECORDED_MS = 60 * 60 * 1000


# --------------------------------------------------------------------------------------------
# Services
# --------------------------------------------------------------------------------------------


@transaction.atomic
def campaign_create(
    *,
    task: Task,
    round: Round,
    name: str,
    completion_code: str,
    quota: int = 10,
    kind: str = Campaign.Kind.CREATE,
    worker_id_param: str = "PROLIFIC_PID",
    signed_worker_links: bool = False,
    created_by=None,
) -> Campaign:
    """Create a campaign for a task's round; every problem is reported with a code."""
    errors = []
    if round.task_id != task.pk:
        errors.append({"field": "round", "code": "campaign.round_of_other_task"})
    if not PARAM_NAME_PATTERN.match(worker_id_param or ""):
        errors.append({"field": "worker_id_param", "code": "campaign.bad_param_name"})
    if quota is None or quota < 1:
        errors.append({"field": "quota", "code": "campaign.bad_quota"})
    if not (completion_code or "").strip():
        errors.append({"field": "completion_code", "code": "campaign.no_completion_code"})
    if kind not in Campaign.Kind.values:
        errors.append({"field": "kind", "code": "campaign.bad_kind"})
    if errors:
        raise ServiceError(
            "The campaign is not valid.", code="campaign.invalid", details={"errors": errors}
        )
    return Campaign.objects.create(
        task=task,
        round=round,
        name=name.strip() or f"{task.code} round {round.number}",
        completion_code=completion_code.strip(),
        quota=quota,
        kind=kind,
        worker_id_param=worker_id_param,
        signed_worker_links=signed_worker_links,
        created_by=created_by,
    )


def campaign_set_active(campaign: Campaign, active: bool) -> None:
    Campaign.objects.filter(pk=campaign.pk).update(is_active=active)
    campaign.is_active = active


def campaign_worker_enter(
    campaign: Campaign,
    external_id: str | None,
    *,
    binding_token: str,
    signature: str | None = None,
) -> CampaignWorker:
    """Return the campaign's worker for ``external_id`` (created on first visit), bound to
    the session of ``binding_token``.

    Refused when the campaign needs signed worker links and ``signature`` is not the id's
    (``BadWorkerSignature``), and when another session holds the id (``WorkerIdInUse``).
    """
    external_id = (external_id or "").strip()
    if not EXTERNAL_ID_PATTERN.match(external_id):
        raise ServiceError(
            f"The link must carry your worker id in the {campaign.worker_id_param} parameter "
            "(1 to 128 letters, digits or _ . : @ -).",
            code="campaign.bad_worker_id",
        )
    identities.campaign_worker_check_signature(campaign, external_id, signature)
    now = timezone.now()
    digest = identities.binding_digest(binding_token)
    try:
        with transaction.atomic():
            # A new worker is bound from the start to the session that created it.
            worker, _ = CampaignWorker.objects.get_or_create(
                campaign=campaign,
                external_id=external_id,
                defaults={"binding_hash": digest, "bound_at": now, "last_seen_at": now},
            )
    except IntegrityError:  # a concurrent first visit created it
        worker = CampaignWorker.objects.get(campaign=campaign, external_id=external_id)
    worker.campaign = campaign
    return identities.campaign_worker_bind(worker, binding_token)


def campaign_worker_progress(worker: CampaignWorker) -> int:
    """Examples (create campaigns) or validations (validate campaigns) the worker has done."""
    campaign = worker.campaign
    if campaign.kind == Campaign.Kind.VALIDATE:
        return Validation.objects.filter(campaign_worker=worker, is_owner_verdict=False).count()
    return Example.objects.filter(campaign_worker=worker, retracted=False).count()


def campaign_quota_reached(actor: Actor | None) -> bool:
    """Return True when a campaign worker has done the campaign's quota (users: never)."""
    if actor is None or not actor.is_campaign:
        return False
    worker = actor.campaign_worker
    return campaign_worker_progress(worker) >= worker.campaign.quota


def campaign_worker_complete(worker: CampaignWorker) -> bool:
    """Record that a worker finished (once); return whether the quota is reached."""
    if campaign_worker_progress(worker) < worker.campaign.quota:
        return False
    if worker.completed_at is None:
        now = timezone.now()
        CampaignWorker.objects.filter(pk=worker.pk, completed_at__isnull=True).update(
            completed_at=now
        )
        worker.completed_at = now
    return True


def campaign_record_time(actor: Actor | None, milliseconds: int) -> None:
    """Record the time spent on the actor's latest example or validation.

    The time goes on the newest example (create campaigns, users) or validation (validate
    campaigns, users) that has no time yet, and into the worker's cached time. If the
    service already stored ``time_spent_ms`` when creating the row, this is a no-op, so the
    time is never counted twice. Values are capped at one hour; zero or less is ignored.
    """
    if actor is None or not actor.is_authenticated or not milliseconds or milliseconds <= 0:
        return
    milliseconds = min(int(milliseconds), MAX_RECORDED_MS)
    owner = actor.filter_kwargs()
    candidates = []
    kind = actor.campaign.kind if actor.is_campaign else None
    if kind in (None, Campaign.Kind.CREATE):
        example = Example.objects.filter(**owner).order_by("-id").first()
        if example is not None:
            candidates.append(example)
    if kind in (None, Campaign.Kind.VALIDATE):
        validation = (
            Validation.objects.select_related("example")
            .filter(**owner, is_owner_verdict=False)
            .order_by("-id")
            .first()
        )
        if validation is not None:
            candidates.append(validation)
    if not candidates:
        return
    latest = max(candidates, key=lambda item: item.created_at)
    if latest.time_spent_ms is not None:
        return
    with transaction.atomic():
        updated = (
            type(latest)
            .objects.filter(pk=latest.pk, time_spent_ms__isnull=True)
            .update(time_spent_ms=milliseconds)
        )
        if updated:
            latest.time_spent_ms = milliseconds
            example = latest.example if isinstance(latest, Validation) else latest
            counters_add_on_commit(
                counters.time_spent(
                    example,
                    user_id=latest.user_id,
                    campaign_worker_id=latest.campaign_worker_id,
                    milliseconds=milliseconds,
                )
            )


# --------------------------------------------------------------------------------------------
# Selectors and the bonus CSV
# --------------------------------------------------------------------------------------------


def campaign_list(task: Task):
    """The task's campaigns with their number of workers (one query)."""
    return (
        Campaign.objects.filter(task=task)
        .select_related("round")
        .annotate(worker_count=Count("workers"))
        .order_by("-created_at")
    )


def campaign_get(task: Task, campaign_id) -> Campaign:
    campaign = (
        Campaign.objects.select_related("task", "round").filter(task=task, pk=campaign_id).first()
        if str(campaign_id).isdigit()
        else None
    )
    if campaign is None:
        raise NotFound(f"no campaign {campaign_id!r} in task {task.code}")
    return campaign


@dataclass(frozen=True)
class CampaignWorkerRow:
    external_id: str
    examples: int
    verified_fooling_examples: int
    validations: int
    time_spent_ms: int
    completed_at: object


def campaign_worker_rows(campaign: Campaign) -> Iterator[CampaignWorkerRow]:
    """Per worker, from the data: examples, verified fooling examples, validations, time.

    Three grouped queries whatever the number of workers.
    """
    examples = {
        row["campaign_worker_id"]: row
        for row in Example.objects.filter(campaign_worker__campaign=campaign)
        .order_by()
        .values("campaign_worker_id")
        .annotate(
            examples=Count("id", filter=Q(retracted=False)),
            verified=Count(
                "id",
                filter=Q(
                    retracted=False, model_wrong=True, validation_state=ValidationState.CORRECT
                ),
            ),
            time=Sum("time_spent_ms"),
        )
    }
    validations = {
        row["campaign_worker_id"]: row
        for row in Validation.objects.filter(
            campaign_worker__campaign=campaign, is_owner_verdict=False
        )
        .order_by()
        .values("campaign_worker_id")
        .annotate(count=Count("id"), time=Sum("time_spent_ms"))
    }
    workers = (
        CampaignWorker.objects.filter(campaign=campaign)
        .order_by("id")
        .values_list("id", "external_id", "completed_at")
    )
    for worker_id, external_id, completed_at in workers.iterator(chunk_size=2000):
        example_row = examples.get(worker_id, {})
        validation_row = validations.get(worker_id, {})
        yield CampaignWorkerRow(
            external_id=external_id,
            examples=example_row.get("examples", 0),
            verified_fooling_examples=example_row.get("verified", 0),
            validations=validation_row.get("count", 0),
            time_spent_ms=(example_row.get("time") or 0) + (validation_row.get("time") or 0),
            completed_at=completed_at,
        )


CSV_HEADER = (
    "worker_id",
    "examples",
    "verified_fooling_examples",
    "validations",
    "time_spent_seconds",
    "completed_at",
)


def campaign_csv_lines(campaign: Campaign) -> Iterator[str]:
    """Yield the bonus CSV of a campaign, line by line (header first); cells are made safe."""
    rows = (
        [
            row.external_id,
            row.examples,
            row.verified_fooling_examples,
            row.validations,
            round(row.time_spent_ms / 1000, 1),
            row.completed_at.isoformat() if row.completed_at else "",
        ]
        for row in campaign_worker_rows(campaign)
    )
    return csv_lines(itertools.chain([CSV_HEADER], rows))


def campaign_require_worker(actor: Actor | None, campaign: Campaign) -> CampaignWorker:
    """Return the actor's worker if it belongs to ``campaign``; PermissionDenied otherwise."""
    if actor is None or not actor.is_campaign or actor.campaign_worker.campaign_id != campaign.pk:
        raise PermissionDenied("This page belongs to another campaign.")
    return actor.campaign_worker
