"""The task an actor works on, read from a cache of rows: ``task_bundle(code)``.

The create and validate pages need the task, its current config, its open rounds and the
models in their loops on every request; these rows change rarely. ``task_bundle`` reads them
once into a ``TaskBundle`` and keeps it in Django's cache (Redis in production, shared by every
process) for ``TASK_BUNDLE_SECONDS``. Every write to those rows forgets the bundle once it
commits (``annotation.receivers``): saves and deletions of tasks, config versions, rounds,
loop memberships and models, owner changes, and the models hub's bulk updates, which send
``models_hub.signals.model_rows_changed``. The cache's timeout bounds what a write that slipped
past them could leave stale.

The objects of a bundle belong to the request that read it: every cache read returns new
ones.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from django.core.cache import cache

from annotation.campaigns.actors import Actor
from annotation.sampling import sample_context
from annotation.selectors.contexts import context_id_or_none, context_key, contexts_remember
from core.errors import NotFound, PermissionDenied
from models_hub.models import RegisteredModel
from models_hub.selectors import is_pickable, loop_members
from tasks.config import TaskConfig
from tasks.models import Context, Round, Task, TaskConfigVersion
from tasks.permissions import can_contribute, can_review_examples, can_view_task
from tasks.selectors import task_get_visible

TASK_BUNDLE_SECONDS = 60
# 3: model rows hold their endpoint token sealed (models_hub.fields.SealedTokenField).
_KEY_VERSION = 3

# What a round's loop can do now (``TaskBundle.loop_state``); the pages word each one.
LOOP_ANSWERING = "answering"
LOOP_SILENT = "silent"
LOOP_EMPTY = "empty"


@dataclass(frozen=True)
class TaskBundle:
    """A task with what its pages read on every request.

    ``task.owner_ids`` holds its owners' ids (``tasks.permissions.is_task_owner`` reads it);
    ``open_rounds`` are newest first, each with ``task`` set; ``loop_models`` maps a round's id
    to the models that may answer in its loop (healthy or not yet checked, with an endpoint);
    ``loop_sizes`` maps it to the number of models in its loop, answering or not.
    """

    task: Task
    open_rounds: tuple[Round, ...] = ()
    loop_models: dict[int, tuple[RegisteredModel, ...]] = field(default_factory=dict)
    loop_sizes: dict[int, int] = field(default_factory=dict)
    # The cached row of the context a request named (``task_bundle(context_id=...)``).
    requested_context: Context | None = None

    @property
    def version(self) -> TaskConfigVersion | None:
        return self.task.current_config

    @property
    def config(self) -> TaskConfig | None:
        return self.task.config

    @property
    def latest_round(self) -> Round | None:
        return self.open_rounds[0] if self.open_rounds else None

    def open_round(self, round_id: int) -> Round | None:
        return next((round_ for round_ in self.open_rounds if round_.pk == round_id), None)

    def pick_model(self, round_: Round, rng: random.Random | None = None) -> RegisteredModel | None:
        """A model of ``round_``'s loop at random (None when it has none)."""
        models = self.loop_models.get(round_.pk, ())
        return (rng or random).choice(models) if models else None

    def loop_state(self, round_id: int) -> str:
        """Return ``LOOP_ANSWERING`` when a model of round ``round_id``'s loop may answer,
        ``LOOP_SILENT`` when its loop has models but none may answer now, and ``LOOP_EMPTY``
        when it has none (or the round is not open)."""
        if self.loop_models.get(round_id):
            return LOOP_ANSWERING
        return LOOP_SILENT if self.loop_sizes.get(round_id) else LOOP_EMPTY


def bundle_key(code: str) -> str:
    return f"annotation:task-bundle:{_KEY_VERSION}:{code}"


def _read_bundle(code: str) -> TaskBundle | None:
    task = Task.objects.select_related("current_config").filter(code=code).first()
    if task is None:
        return None
    task.owner_ids = frozenset(task.owners.values_list("pk", flat=True))
    rounds = list(Round.objects.filter(task=task, is_open=True).order_by("-number"))
    models: dict[int, list[RegisteredModel]] = {round_.pk: [] for round_ in rounds}
    sizes: dict[int, int] = dict.fromkeys(models, 0)
    for model, round_id in loop_members(list(models)):
        sizes[round_id] += 1
        if is_pickable(model):
            model.task = task
            models[round_id].append(model)
    for round_ in rounds:
        round_.task = task
    return TaskBundle(
        task=task,
        open_rounds=tuple(rounds),
        loop_models={round_id: tuple(found) for round_id, found in models.items()},
        loop_sizes=sizes,
    )


def task_bundle(code: str, *, context_id=None) -> TaskBundle | None:
    """The bundle of task ``code`` from the cache, read and cached on a miss; None for no
    such task. With ``context_id``, that context's cached row comes in the same cache read
    (``bundle.requested_context``, see ``context_get``)."""
    key = bundle_key(code)
    wanted = context_id_or_none(context_id)
    keys = [key] if wanted is None else [key, context_key(wanted)]
    found = cache.get_many(keys)
    bundle = found.get(key)
    if bundle is None:
        bundle = _read_bundle(code)
        if bundle is None:
            return None
        cache.set(key, bundle, TASK_BUNDLE_SECONDS)
    if wanted is not None:
        bundle = replace(bundle, requested_context=found.get(context_key(wanted)))
    return bundle


def round_loop_state(code: str, round_id: int) -> str:
    """Return the ``loop_state`` of round ``round_id`` of task ``code`` from its bundle
    (``LOOP_EMPTY`` for a round that is not open or a task that is gone)."""
    bundle = task_bundle(code)
    return bundle.loop_state(round_id) if bundle is not None else LOOP_EMPTY


def task_bundle_forget(*codes: str) -> None:
    """Drop the cached bundles of tasks ``codes`` (the receivers call it after commits)."""
    cache.delete_many([bundle_key(code) for code in codes])


def _checked(bundle: TaskBundle | None, code: str, actor: Actor | None) -> TaskBundle:
    """``bundle`` if ``actor`` may work on its task, else raise."""
    if bundle is None:
        raise NotFound(f"no task {code!r}")
    task = bundle.task
    if actor is None:
        raise PermissionDenied("sign in to work on this task")
    if actor.user is not None:
        if not can_view_task(actor.user, task):
            raise NotFound(f"no task {code!r}")
        if not can_contribute(actor.user, task):
            raise PermissionDenied("this task takes no new work at the moment")
    elif not (task.active and actor.may_act_on(task)):
        raise PermissionDenied("your campaign link is for another task")
    if task.current_config_id is None:
        raise NotFound("this task has no config yet")
    return bundle


def bundle_for_actor(code: str, actor: Actor | None, *, context_id=None) -> TaskBundle:
    """The bundle of task ``code`` if ``actor`` may work on it (NotFound or
    PermissionDenied otherwise); with ``context_id``, see ``task_bundle``."""
    return _checked(task_bundle(code, context_id=context_id), code, actor)


def round_for_actor(bundle: TaskBundle, actor: Actor) -> Round | None:
    """The round ``actor`` writes in: a campaign's round (None once it is closed), else the
    task's latest open round."""
    if actor.campaign_worker is not None:
        return bundle.open_round(actor.campaign_worker.campaign.round_id)
    return bundle.latest_round


def task_for_reviewer(code: str, user) -> Task:
    """Task ``code`` for one of its owners (the review queue), else raise."""
    task = task_get_visible(code, user)
    if not can_review_examples(user, task):
        raise PermissionDenied("only the task's owners review examples")
    return task


def context_get(round_: Round, context_id, cached: Context | None = None) -> Context | None:
    """Context ``context_id`` of ``round_``; None for none, another round's, or a value that
    is not an id. ``cached``: its row as the cache held it (``bundle.requested_context``),
    used when it is that context; otherwise it is read and kept in the cache. A cached row's
    counters may be behind: only its data and keys are read here."""
    pk = context_id_or_none(context_id)
    if pk is None:
        return None
    context = cached if cached is not None and cached.pk == pk else None
    if context is None:
        try:
            context = Context.objects.get(pk=pk)
        except Context.DoesNotExist:
            return None
        contexts_remember([context])
    if context.round_id != round_.pk:
        return None
    context.round = round_
    return context


def context_sample(round_: Round, strategy: str, tag: str) -> Context | None:
    """A context of ``round_`` sampled by ``strategy`` (see ``annotation.sampling``)."""
    context = sample_context(round_, strategy, tag, random.Random())  # noqa: S311
    if context is not None:
        context.round = round_
    return context
