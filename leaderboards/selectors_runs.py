"""Reads for datasets and evaluation runs: progress of runs, dataset browsing.

Gold answers are owners-only: ``dataset_examples_page`` leaves them out for everyone else,
and hidden datasets (and their scores) are not visible to non-owners at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.paginator import Paginator
from django.db.models import Q
from django.utils import timezone

from leaderboards.models import AccessType, Dataset, DatasetExample, EvaluationRun, RunStatus
from models_hub.selectors import model_can_edit
from tasks.errors import NotFound
from tasks.models import Task
from tasks.permissions import can_manage_task, can_view_task

EXAMPLES_PER_PAGE = 25


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


def datasets_for_task(task: Task, user) -> list[Dataset]:
    """Return the task's datasets that ``user`` may see (hidden ones: owners only)."""
    datasets = Dataset.objects.filter(task=task).select_related("round", "perturbation_of")
    if not can_manage_task(user, task):
        datasets = datasets.filter(~Q(access_type=AccessType.HIDDEN))
    return list(datasets.order_by("perturbation_of_id", "name", "pk"))


def dataset_get_visible(task: Task, slug: str, user) -> Dataset:
    dataset = (
        Dataset.objects.select_related("task", "round", "perturbation_of")
        .filter(task=task, slug=slug)
        .first()
    )
    if dataset is None or not can_view_task(user, task):
        raise NotFound(f"no dataset {slug}")
    if dataset.access_type == AccessType.HIDDEN and not can_manage_task(user, task):
        raise NotFound(f"no dataset {slug}")
    return dataset


@dataclass(frozen=True)
class ExampleRow:
    position: int
    uid: str
    inputs: dict
    tags: list
    gold: dict | None  # None for non-owners
    input_id: str = ""
    original_inputs: dict | None = None  # perturbed copies: the original's inputs
    changed_fields: tuple[str, ...] = ()


def dataset_examples_page(dataset: Dataset, user, page: int = 1, per_page: int = EXAMPLES_PER_PAGE):
    """Return ``(page_object, rows)`` of examples; gold only for the task's owners.

    For a perturbed copy each row also carries the original example's inputs and the names
    of the fields the perturbation changed (the perturbation browser).
    """
    owner = can_manage_task(user, dataset.task)
    paginator = Paginator(
        DatasetExample.objects.filter(dataset=dataset)
        .order_by("position")
        .only("position", "uid", "inputs", "tags", "gold", "input_id"),
        per_page,
    )
    page_object = paginator.get_page(page)
    examples = list(page_object.object_list)
    originals: dict[str, dict] = {}
    if dataset.perturbation_of_id:
        originals = dict(
            DatasetExample.objects.filter(
                dataset_id=dataset.perturbation_of_id,
                uid__in=[example.input_id for example in examples],
            ).values_list("uid", "inputs")
        )
    rows = []
    for example in examples:
        original = originals.get(example.input_id)
        changed = ()
        if original is not None:
            changed = tuple(
                name
                for name, value in example.inputs.items()
                if name != "uid" and original.get(name) != value
            )
        rows.append(
            ExampleRow(
                position=example.position,
                uid=example.uid,
                inputs=example.inputs,
                tags=example.tags,
                gold=example.gold if owner else None,
                input_id=example.input_id,
                original_inputs=original,
                changed_fields=changed,
            )
        )
    return page_object, rows
