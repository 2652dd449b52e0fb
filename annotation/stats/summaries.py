"""Reads of the crowdworker statistics: round summaries, per-worker numbers, the workers'
board, agreement between validators, and a round by its number."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, Q, Sum

from annotation.agreement import category_counts, fleiss_kappa, krippendorff_alpha
from annotation.models import RoundStats, Validation, ValidationLabel, WorkerStats
from annotation.stats.counters import ROUND_FIELDS, WORKER_FIELDS
from core.errors import NotFound, ServiceError
from tasks.models import Round, Task


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass(frozen=True)
class RoundSummary:
    """The public numbers of one round (MER = model error rate, vMER = verified MER)."""

    round_id: int
    number: int
    collected: int
    fooled: int
    verified_fooled: int
    validated: int
    retracted: int

    @property
    def model_error_rate(self) -> float | None:
        return _rate(self.fooled, self.collected)

    @property
    def verified_model_error_rate(self) -> float | None:
        return _rate(self.verified_fooled, self.collected)


def _summary(round_: Round, stats: RoundStats | None) -> RoundSummary:
    return RoundSummary(
        round_id=round_.pk,
        number=round_.number,
        **{field: getattr(stats, field, 0) if stats else 0 for field in ROUND_FIELDS},
    )


def round_stats(round: Round) -> RoundSummary:
    """The cached counters of a round and its (verified) model error rates."""
    return _summary(round, RoundStats.objects.filter(round=round).first())


def task_round_stats(task: Task) -> list[RoundSummary]:
    """Every round of a task with its numbers, oldest first (one query)."""
    rounds = Round.objects.filter(task=task).select_related("stats").order_by("number")
    return [_summary(round_, getattr(round_, "stats", None)) for round_ in rounds]


@dataclass(frozen=True)
class WorkerSummary:
    """One worker's counters over a task (or one round) and the rates the page shows."""

    user_id: int | None
    campaign_worker_id: int | None
    name: str
    examples: int
    fooled: int
    verified_fooled: int
    rejected: int
    retracted: int
    validations: int
    time_spent_ms: int

    @property
    def fooled_rate(self) -> float | None:
        return _rate(self.fooled, self.examples)

    @property
    def verified_fooled_rate(self) -> float | None:
        return _rate(self.verified_fooled, self.examples)

    @property
    def rejected_rate(self) -> float | None:
        return _rate(self.rejected, self.examples)

    @property
    def retracted_rate(self) -> float | None:
        return _rate(self.retracted, self.examples + self.retracted)


def _worker_rows(task: Task, round_: Round | None):
    rows = WorkerStats.objects.filter(task=task)
    if round_ is not None:
        rows = rows.filter(round=round_)
    return rows.order_by().values("user_id", "campaign_worker_id")


def _worker_totals():
    return {field: Sum(field) for field in WORKER_FIELDS}


def _board_order(rows):
    return rows.order_by(
        "-verified_fooled", "-fooled", "-examples", "user_id", "campaign_worker_id"
    )


def worker_stats(task: Task, round: Round | None = None) -> list[WorkerSummary]:
    """Per worker (user or campaign worker) counters and rates, best first (for owners)."""
    rows = list(
        _board_order(
            _worker_rows(task, round).annotate(
                **_worker_totals(),
                username=F("user__username"),
                external_id=F("campaign_worker__external_id"),
            )
        )
    )
    return [_worker_summary(row) for row in rows]


def _worker_summary(row: dict) -> WorkerSummary:
    if row["user_id"] is not None:
        name = row.get("username") or f"user {row['user_id']}"
    else:
        name = f"campaign worker {row.get('external_id') or row['campaign_worker_id']}"
    return WorkerSummary(
        user_id=row["user_id"],
        campaign_worker_id=row["campaign_worker_id"],
        name=name,
        **{field: row[field] or 0 for field in WORKER_FIELDS},
    )


LEADERBOARD_PAGE_SIZE = 25


def user_leaderboard(
    task: Task,
    round: Round | None = None,
    page: int | str | None = 1,
    per_page: int = LEADERBOARD_PAGE_SIZE,
):
    """A page of signed-in users ranked by verified fooling examples (then fooled, examples).

    Returns a ``django.core.paginator.Page`` of ``WorkerSummary``; a bad or out-of-range
    page number gives the nearest valid page. Two queries (count and page).
    """
    from django.core.paginator import Paginator

    rows = _board_order(
        WorkerStats.objects.filter(task=task, user__isnull=False)
        .filter(**({"round": round} if round is not None else {}))
        .order_by()
        .values("user_id", "campaign_worker_id")
        .annotate(**_worker_totals(), username=F("user__username"))
        .filter(Q(examples__gt=0) | Q(validations__gt=0) | Q(retracted__gt=0))
    )
    paginator = Paginator(rows, per_page)
    board_page = paginator.get_page(page)
    board_page.object_list = [_worker_summary(row) for row in board_page.object_list]
    return board_page


@dataclass(frozen=True)
class Agreement:
    """Inter-annotator agreement over the crowd validations of a round."""

    examples: int  # examples with at least two validations
    validations: int  # validations on those examples
    fleiss_kappa: float | None
    krippendorff_alpha: float | None


def round_agreement(round: Round) -> Agreement:
    """Fleiss' kappa and Krippendorff's alpha (nominal) over the round's crowd validations.

    Owner verdicts are not ratings by independent annotators and are left out, as are
    retracted examples. One streamed query, grouped in Python by example.
    """
    labels = (
        Validation.objects.filter(
            example__round=round, example__retracted=False, is_owner_verdict=False
        )
        .order_by("example_id")
        .values_list("example_id", "label")
    )
    units: list[list[str]] = []
    current_id, current = None, []
    for example_id, label in labels.iterator(chunk_size=5000):
        if example_id != current_id:
            if len(current) >= 2:
                units.append(current)
            current_id, current = example_id, []
        current.append(label)
    if len(current) >= 2:
        units.append(current)
    return Agreement(
        examples=len(units),
        validations=sum(len(unit) for unit in units),
        fleiss_kappa=fleiss_kappa(category_counts(units, ValidationLabel.values)),
        krippendorff_alpha=krippendorff_alpha(units),
    )


AGREEMENT_CACHE_SECONDS = 60


def round_agreement_cached(round_id: int) -> Agreement:
    """``round_agreement`` for pages: it reads every validation of the round, so cache it
    for a minute (the default cache) instead of recomputing it on every view."""
    from django.core.cache import cache

    key = f"annotation:round_agreement:{round_id}"
    agreement = cache.get(key)
    if agreement is None:
        agreement = round_agreement(round_id)
        cache.set(key, agreement, AGREEMENT_CACHE_SECONDS)
    return agreement


def round_by_number(task: Task, value) -> Round | None:
    """Return the task's round numbered ``value`` (None for an empty value).

    Raises ServiceError (400) for a value that is not a number, NotFound for an unknown round.
    """
    if value is None or str(value).strip() == "":
        return None
    text = str(value).strip()
    if not text.isdigit() or len(text) > 9:
        raise ServiceError(f"round must be a number, not {text[:20]!r}", code="round.bad_number")
    round_ = Round.objects.filter(task=task, number=int(text)).first()
    if round_ is None:
        raise NotFound(f"round {text} does not exist for task {task.code}", code="round.missing")
    return round_
