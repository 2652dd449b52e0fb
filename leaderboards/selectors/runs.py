"""Reads of evaluation runs: a run as its viewer may see it, its progress, a model's runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from leaderboards.models import AccessType, EvaluationRun, RunStatus, Score
from models_hub.selectors import model_can_edit
from tasks.errors import NotFound
from tasks.permissions import can_view_task


@dataclass(frozen=True)
class RunProgress:
    """What the progress bar shows: done/total, rate, ETA and the state."""

    done: int
    total: int
    percent: float
    rate: float | None  # examples per second since the run started
    eta_seconds: float | None
    state: str
    state_label: str
    finished: bool
    failed: bool


def run_progress(run: EvaluationRun, now: datetime | None = None) -> RunProgress:
    """Return the progress of ``run`` from its counters (no query)."""
    now = now or timezone.now()
    total = run.total
    done = min(run.done, total) if total else run.done
    percent = round(100.0 * done / total, 1) if total else 100.0
    rate = eta = None
    if run.started_at is not None and done:
        end = run.finished_at or now
        elapsed = (end - run.started_at).total_seconds()
        if elapsed > 0:
            rate = round(done / elapsed, 2)
            if run.status in (RunStatus.QUEUED, RunStatus.RUNNING) and rate > 0:
                eta = round((total - done) / rate, 1)
    if run.status == RunStatus.DONE:
        percent = 100.0
        eta = 0.0
    return RunProgress(
        done=done,
        total=total,
        percent=percent,
        rate=rate,
        eta_seconds=eta,
        state=run.status,
        state_label=RunStatus(run.status).label,
        finished=run.status in (RunStatus.DONE, RunStatus.FAILED),
        failed=run.status == RunStatus.FAILED,
    )


def run_get_visible(run_id: int, user) -> EvaluationRun:
    """Return run ``run_id`` if ``user`` may see it, else raise NotFound.

    Visible to the task's owners and the model's owner; to others when the model is
    published and the dataset is not hidden.
    """
    run = (
        EvaluationRun.objects.select_related("model__task", "model__owner", "dataset__task")
        .filter(pk=run_id)
        .first()
    )
    if run is None or not can_view_task(user, run.dataset.task):
        raise NotFound(f"no run {run_id}")
    if model_can_edit(run.model, user):
        return run
    if run.model.is_published and run.dataset.access_type != AccessType.HIDDEN:
        return run
    raise NotFound(f"no run {run_id}")


def runs_for_model(model, user, *, limit: int = 50) -> list[tuple[EvaluationRun, RunProgress]]:
    """Return the latest run per dataset of ``model`` with its progress (owners see hidden)."""
    runs = EvaluationRun.objects.filter(model=model).select_related("dataset")
    if not model_can_edit(model, user):
        runs = runs.exclude(dataset__access_type=AccessType.HIDDEN)
    latest: dict[int, EvaluationRun] = {}
    for run in runs.order_by("-created_at", "-pk")[: limit * 4]:
        latest.setdefault(run.dataset_id, run)
    now = timezone.now()
    ordered = sorted(latest.values(), key=lambda run: (run.dataset.name, run.pk))[:limit]
    return [(run, run_progress(run, now)) for run in ordered]


def run_visible_score(run: EvaluationRun, user) -> Score | None:
    """Return the Score that ``run`` feeds (its original dataset's), unless hidden from ``user``.

    The model's owner and the task's owners see it; others not on a hidden dataset. One
    query, none when hidden.
    """
    if not model_can_edit(run.model, user) and run.dataset.access_type == AccessType.HIDDEN:
        return None
    return (
        Score.objects.filter(
            model_id=run.model_id, dataset_id=run.dataset.perturbation_of_id or run.dataset_id
        )
        .select_related("dataset")
        .first()
    )


@dataclass(frozen=True)
class RunDetail:
    """What the run page and its progress partial show."""

    run: EvaluationRun
    progress: RunProgress
    can_manage: bool
    score: Score | None


def run_detail(run_id: int, user) -> RunDetail:
    """Return run ``run_id`` with its progress and score as ``user`` may see them.

    Raises NotFound when the run does not exist or ``user`` may not see it.
    """
    run = run_get_visible(run_id, user)
    return RunDetail(
        run=run,
        progress=run_progress(run),
        can_manage=model_can_edit(run.model, user),
        score=run_visible_score(run, user),
    )
