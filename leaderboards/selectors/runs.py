"""Reads of evaluation runs: a run as its viewer may see it, its progress, a model's runs.

Who sees a run: the task's owners (superusers among them) and the model's owner, always;
others when the model is published and the dataset is not sealed.

What a model's owner who does not own the task sees of a run on a sealed dataset
(``leaderboards.selectors.datasets.dataset_is_sealed``) is the **sealed view**: that the
model was evaluated on a hidden dataset, the run's state, trigger and times, and its
progress in examples sent and answered (done/total, rate, ETA). Never the dataset's name or
slug, a score, a CI, a per-tag value, a count of failed examples, nor an error message
other than their own endpoint's (codes ``model.*``: the model's failures, which its owner
needs to fix it). The selectors return such runs **masked** (``run.sealed`` is True and the
figures are blanked on the instance), so every page, partial and API body built from them
shows the same thing; a masked run is never saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from core.errors import NotFound
from leaderboards.models import AccessType, EvaluationRun, RunStatus, Score
from leaderboards.selectors.datasets import dataset_is_sealed
from models_hub.selectors import model_can_edit
from tasks.permissions import can_manage_task, can_view_task
from tasks.progress import progress_percent

SEALED_DATASET_LABEL = "a hidden dataset"
SEALED_ERROR_MESSAGE = "the evaluation on a hidden dataset stopped; the task's owners see why"
# Errors of the model's own endpoint, whose messages its owner sees on a sealed run.
MODEL_ERROR_PREFIX = "model."
# Runs on a sealed dataset (``dataset_is_sealed`` as a filter).
SEALED_RUN = Q(dataset__access_type=AccessType.HIDDEN) | Q(
    dataset__perturbation_of__access_type=AccessType.HIDDEN
)


@dataclass(frozen=True)
class RunProgress:
    """What the progress bar shows: done/total, rate, ETA and the state.

    ``percent`` is floored (``tasks.progress``): it is 100 only when ``done == total``.
    ``partial`` is a done run that holds fewer predictions than the dataset has examples
    (a predictions file accepted as partial); ``counts`` says so in words.
    """

    done: int
    total: int
    percent: float
    rate: float | None  # examples per second since the run started
    eta_seconds: float | None
    state: str
    state_label: str
    finished: bool
    failed: bool
    partial: bool
    counts: str


def coverage_text(covered: int, total: int, *, partial: bool) -> str:
    """Return ``"300 of 400 examples"``, with ``" (partial)"`` when ``partial``."""
    text = f"{covered} of {total} example{'' if total == 1 else 's'}"
    return f"{text} (partial)" if partial else text


def run_progress(run: EvaluationRun, now: datetime | None = None) -> RunProgress:
    """Return the progress of ``run`` from its counters (no query)."""
    now = now or timezone.now()
    total = run.total
    done = min(run.done, total) if total else run.done
    percent = progress_percent(done, total)
    partial = run.status == RunStatus.DONE and done < total
    rate = eta = None
    if run.started_at is not None and done:
        end = run.finished_at or now
        elapsed = (end - run.started_at).total_seconds()
        if elapsed > 0:
            rate = round(done / elapsed, 2)
            if run.status in (RunStatus.QUEUED, RunStatus.RUNNING) and rate > 0:
                eta = round((total - done) / rate, 1)
    if run.status == RunStatus.DONE:
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
        partial=partial,
        counts=coverage_text(done, total, partial=True)
        if partial
        else f"{done} / {total} examples",
    )


def run_seal(run: EvaluationRun) -> EvaluationRun:
    """Mask ``run`` in place for a viewer who may not see its dataset's figures; return it.

    Sets ``run.sealed``; blanks the failed count and any error text that is not the
    model's own (see the module). Never save a masked run.
    """
    run.sealed = True
    run.failed_count = None
    if not run.error_code.startswith(MODEL_ERROR_PREFIX):
        run.error_message = SEALED_ERROR_MESSAGE if run.error_code else ""
        run.first_bad_response = ""
    return run


def _viewed(run: EvaluationRun, user, manages: bool) -> EvaluationRun:
    """Return ``run`` as ``user`` sees it: masked on a sealed dataset unless ``manages``."""
    run.sealed = False
    if not manages and dataset_is_sealed(run.dataset):
        run_seal(run)
    return run


def run_get_visible(run_id: int, user) -> EvaluationRun:
    """Return run ``run_id`` as ``user`` may see it (masked when sealed), else raise NotFound.

    Visible to the task's owners and the model's owner; to others when the model is
    published and the dataset is not sealed.
    """
    run = (
        EvaluationRun.objects.select_related(
            "model__task", "model__owner", "dataset__task", "dataset__perturbation_of"
        )
        .filter(pk=run_id)
        .first()
    )
    if run is None or not can_view_task(user, run.dataset.task):
        raise NotFound(f"no run {run_id}")
    manages = can_manage_task(user, run.dataset.task)
    if manages or model_can_edit(run.model, user):
        return _viewed(run, user, manages)
    if run.model.is_published and not dataset_is_sealed(run.dataset):
        return _viewed(run, user, manages)
    raise NotFound(f"no run {run_id}")


def runs_visible_for_model(model, user):
    """Return the queryset of ``model``'s runs that ``user`` may see (not masked yet).

    The task's owners and the model's owner see every run (sealed ones masked by
    ``runs_viewed``); others none on a sealed dataset.
    """
    runs = EvaluationRun.objects.filter(model=model).select_related("dataset__perturbation_of")
    if not model_can_edit(model, user):
        runs = runs.exclude(SEALED_RUN)
    return runs


def runs_viewed(runs, model, user) -> list[EvaluationRun]:
    """Return ``runs`` of ``model`` as ``user`` sees them (masked where sealed)."""
    manages = can_manage_task(user, model.task)
    for run in runs:
        _viewed(run, user, manages)
    return list(runs)


def runs_for_model(model, user, *, limit: int = 50) -> list[tuple[EvaluationRun, RunProgress]]:
    """Return the latest run per dataset of ``model`` with its progress, as ``user`` may see
    them (sealed ones masked, ordered after the others)."""
    latest: dict[int, EvaluationRun] = {}
    for run in runs_visible_for_model(model, user).order_by("-created_at", "-pk")[: limit * 4]:
        latest.setdefault(run.dataset_id, run)
    runs = runs_viewed(list(latest.values()), model, user)
    now = timezone.now()
    # Sealed runs last, by id: their datasets' names are not shown, nor used.
    ordered = sorted(
        runs, key=lambda run: (run.sealed, "" if run.sealed else run.dataset.name, run.pk)
    )
    return [(run, run_progress(run, now)) for run in ordered[:limit]]


def run_visible_score(run: EvaluationRun, user) -> Score | None:
    """Return the Score that ``run`` feeds (its original dataset's), unless sealed for ``user``.

    Pass a run from ``run_get_visible`` (masked for its viewer). One query, none when sealed.
    """
    if getattr(run, "sealed", False) or (
        dataset_is_sealed(run.dataset) and not can_manage_task(user, run.dataset.task)
    ):
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
