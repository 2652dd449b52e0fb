"""Reads of the tasks app."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import django_rq
from django.db.models import Exists, OuterRef, Q, QuerySet
from redis.exceptions import RedisError

from core.errors import NotFound
from tasks.models import Context, Round, Task, UploadJob, UploadStatus
from tasks.permissions import can_manage_task, can_view_task
from tasks.progress import progress_percent
from tasks.upload_jobs import UPLOAD_PROGRESS_KEY


def task_list_visible(user) -> QuerySet[Task]:
    """Tasks a user may see: public ones, plus hidden ones they own (all for admins)."""
    tasks = Task.objects.select_related("current_config")
    if user.is_authenticated and user.is_superuser:
        return tasks
    if user.is_authenticated:
        return tasks.filter(Q(hidden=False) | Q(owners=user)).distinct()
    return tasks.filter(hidden=False)


def with_owner_ids(task: Task) -> Task:
    """Set ``task.owner_ids``, the ids of its owners, which ``is_task_owner`` reads (one
    query); return the task."""
    task.owner_ids = frozenset(task.owners.values_list("pk", flat=True))
    return task


def task_get_visible(code: str, user) -> Task:
    """Task ``code`` with its config and ``owner_ids``, if ``user`` may see it."""
    task = Task.objects.select_related("current_config").filter(code=code).first()
    if task is None:
        raise NotFound(f"no task {code!r}")
    with_owner_ids(task)
    if not can_view_task(user, task):
        raise NotFound(f"no task {code!r}")
    return task


def round_current(task: Task) -> Round | None:
    """The latest open round (None when every round is closed), with ``task`` as its task."""
    round_ = Round.objects.filter(task=task, is_open=True).order_by("-number").first()
    if round_ is not None:
        round_.task = task
    return round_


@dataclass(frozen=True)
class RoundWarning:
    """A problem of an open round that stops workers or the model in the loop.

    ``code`` is stable (``round.no_contexts``, ``loop.empty``, ``loop.silent``); ``message``
    says what is wrong and what happens meanwhile, without naming any model. ``fix_url``,
    when set, is the page where it is put right, named by ``fix_label``.
    """

    code: str
    round_number: int
    message: str
    fix_url: str = ""
    fix_label: str = ""


# ``check(task, open_rounds) -> warnings``: the apps above ``tasks`` register theirs (the
# models hub checks the loops), since this app may not import them.
RoundCheck = Callable[[Task, Sequence[Round]], Iterable[RoundWarning]]
_round_checks: list[RoundCheck] = []


def register_round_check(check: RoundCheck) -> RoundCheck:
    """Add ``check`` to those ``round_warnings`` runs (once, however often it is added)."""
    if check not in _round_checks:
        _round_checks.append(check)
    return check


def round_warnings(task: Task) -> list[RoundWarning]:
    """Return the warnings of the open rounds of ``task``, by round number, the round's own
    before its loop's.

    A round of a task whose config has context fields warns when it has no context; the
    registered checks add theirs. One query, plus those of the checks (one for the loops).
    """
    rounds = list(
        Round.objects.filter(task=task, is_open=True)
        .annotate(has_contexts=Exists(Context.objects.filter(round=OuterRef("pk"))))
        .order_by("number")
    )
    if not rounds:
        return []
    config = task.config
    warnings = [
        RoundWarning(
            "round.no_contexts",
            round_.number,
            f"Round {round_.number} has no contexts: workers cannot write examples until "
            "contexts are uploaded.",
        )
        for round_ in rounds
        if config is not None and config.context and not round_.has_contexts
    ]
    for check in _round_checks:
        warnings.extend(check(task, rounds))
    # A round's own problems (no contexts: nobody can write) before its loop's.
    return sorted(
        warnings,
        key=lambda w: (w.round_number, not w.code.startswith("round."), w.code),
    )


# -- big uploads ------------------------------------------------------------------------------
@dataclass(frozen=True)
class UploadProgress:
    """What the upload's progress bar shows: bytes read of the file, rate, ETA, state."""

    done: int
    total: int
    percent: float
    rate: float | None  # bytes per second since the import started
    eta_seconds: float | None
    state: str
    state_label: str
    finished: bool
    failed: bool


def upload_job_get_visible(pk: int, user) -> UploadJob:
    """Return upload job ``pk`` if ``user`` may see it (the task's owners), else NotFound."""
    upload = UploadJob.objects.select_related("task", "user").filter(pk=pk).first()
    if upload is None or not can_manage_task(user, upload.task):
        raise NotFound(f"no upload {pk}")
    return upload


def upload_progress(upload: UploadJob, *, now: float | None = None, connection=None):
    """Return the progress of ``upload`` (bytes read, from Redis while the job runs)."""
    total = upload.size
    done = 0
    if upload.status == UploadStatus.DONE:
        done = total
    elif upload.status == UploadStatus.RUNNING:
        with contextlib.suppress(RedisError):
            connection = connection or django_rq.get_connection("default")
            done = int(connection.hget(UPLOAD_PROGRESS_KEY.format(upload.pk), "bytes") or 0)
    done = min(done, total)
    rate = eta = None
    if upload.started_at is not None and done:
        end = upload.finished_at.timestamp() if upload.finished_at else (now or time.time())
        elapsed = end - upload.started_at.timestamp()
        if elapsed > 0:
            rate = round(done / elapsed, 1)
            if upload.status == UploadStatus.RUNNING:
                eta = round((total - done) / rate, 1)
    return UploadProgress(
        done=done,
        total=total,
        percent=progress_percent(done, total),
        rate=rate,
        eta_seconds=eta,
        state=upload.status,
        state_label=UploadStatus(upload.status).label,
        finished=upload.status in (UploadStatus.DONE, UploadStatus.FAILED),
        failed=upload.status == UploadStatus.FAILED,
    )
