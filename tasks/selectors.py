"""Reads of the tasks app."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from django.db.models import Exists, OuterRef, Q, QuerySet

from tasks.errors import NotFound
from tasks.models import Context, Round, Task
from tasks.permissions import can_view_task


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
    says what is wrong and what happens meanwhile, without naming any model.
    """

    code: str
    round_number: int
    message: str


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
