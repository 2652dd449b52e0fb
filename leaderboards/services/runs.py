"""Writes of evaluation runs: create them (sharded, enqueued after commit) and retry them.

A perturbed copy of a dataset is evaluated as its **own run**, created together with the
original's run (``evaluation_run_create``). Each finalize (of the original's run or of a
copy's run) recomputes the one ``Score`` of (model, original dataset) from the latest done
runs (``leaderboards.services.scores``), so the delta metrics appear as soon as the copy's
run is done. Perturbed datasets never get a Score of their own.

The inputs of a dataset go to a model's endpoint only when the dataset allows it
(``leaderboards.selectors.datasets.dataset_inputs_go_to``): a model whose owner does not own
the task gets no run of a dataset that keeps its inputs to the owners' models (hidden
datasets by default). Bulk creation leaves those pairs out; asking for one is refused with
``run.inputs_private``; a shard that finds the rule changed since its run was queued fails
with the same code (``leaderboards.services.scheduling``).
"""

from __future__ import annotations

from django.db import transaction

from core.errors import PermissionDenied, ServiceError
from leaderboards.models import (
    AccessType,
    Dataset,
    EvaluationRun,
    EvaluationShard,
    RunStatus,
    RunTrigger,
)
from leaderboards.selectors.datasets import (
    INPUTS_PRIVATE,
    INPUTS_PRIVATE_MESSAGE,
    dataset_inputs_go_to,
    task_owner_ids,
)
from leaderboards.services.scheduling import enqueue_run
from models_hub.budget import budget_charge
from models_hub.models import BudgetKind, ModelStatus, RegisteredModel
from models_hub.selectors import model_can_edit

# A shard job ends by draining its requests and the next one starts from none in flight;
# at 2,000 examples (half a second against a local model) that drain and the job's fixed
# queries cost a tenth of the throughput. Shards resume where they stopped, so a larger
# shard loses nothing on a retry.
DEFAULT_SHARD_SIZE = 10_000


def _require_inputs_allowed(model: RegisteredModel, dataset: Dataset) -> None:
    if not dataset_inputs_go_to(dataset, model, task_owner_ids(dataset.task)):
        raise PermissionDenied(INPUTS_PRIVATE_MESSAGE, code=INPUTS_PRIVATE)


def run_budget_charge(user, dataset: Dataset) -> None:
    """Spend a unit of ``user``'s daily budget on ``dataset`` for a run they asked for
    (``models_hub.budget``: 429 ``run.daily_limit``); a ``public`` dataset's runs are free,
    its gold being published."""
    if user is not None and dataset.access_type != AccessType.PUBLIC:
        budget_charge(user, dataset.task, BudgetKind.RUN, dataset_id=dataset.pk)


def _enqueue_after_commit(run: EvaluationRun) -> None:
    run_id = run.pk
    transaction.on_commit(lambda: enqueue_run(run_id))


def _create_one_run(
    model: RegisteredModel, dataset: Dataset, *, trigger: str, user, shard_size: int
) -> EvaluationRun:
    total = dataset.row_count
    run = EvaluationRun.objects.create(
        model=model,
        dataset=dataset,
        config_version_id=dataset.task.current_config_id,
        trigger=trigger,
        total=total,
        shard_size=shard_size,
        requested_by=user,
    )
    shards = [
        EvaluationShard(run=run, index=index, start=start, end=min(start + shard_size, total))
        for index, start in enumerate(range(0, total, shard_size))
    ]
    EvaluationShard.objects.bulk_create(shards)
    _enqueue_after_commit(run)
    return run


@transaction.atomic
def evaluation_run_create(
    model: RegisteredModel,
    dataset: Dataset,
    *,
    trigger: str = RunTrigger.RERUN,
    user=None,
    shard_size: int | None = None,
    include_perturbations: bool = True,
) -> EvaluationRun:
    """Create and enqueue a run of ``model`` on ``dataset``; return it.

    For an original dataset the runs of its perturbed copies are created too (their
    predictions feed the delta metrics of the original's Score). ``user`` (when given) must
    own the task or the model, and spends a unit of their daily budget on the dataset
    (``run_budget_charge``). Shards are ``shard_size`` examples (default 10,000).
    """
    if model.task_id != dataset.task_id:
        raise ServiceError("the model and the dataset belong to different tasks", code="run.task")
    if user is not None and not model_can_edit(model, user):
        raise PermissionDenied("only the model's owner or the task's owners can run it")
    if not model.has_endpoint:
        raise ServiceError(
            "this model has no endpoint: upload a predictions file instead",
            code="run.no_endpoint",
        )
    _require_inputs_allowed(model, dataset)
    run_budget_charge(user, dataset)
    shard_size = max(1, shard_size or DEFAULT_SHARD_SIZE)
    run = _create_one_run(model, dataset, trigger=trigger, user=user, shard_size=shard_size)
    if include_perturbations and dataset.perturbation_of_id is None:
        for copy in dataset.perturbations.filter(row_count__gt=0).order_by("pk"):
            _create_one_run(model, copy, trigger=trigger, user=user, shard_size=shard_size)
    return run


def _evaluable_models(task_id: int):
    return (
        RegisteredModel.objects.filter(task_id=task_id)
        .exclude(protocol="none")
        .exclude(endpoint_url="")
        .exclude(status=ModelStatus.DISABLED)
        .select_related("owner")
        .order_by("pk")
    )


@transaction.atomic
def evaluation_runs_for_dataset(
    dataset: Dataset, *, trigger: str = RunTrigger.DATASET_ADDED, user=None
) -> list[EvaluationRun]:
    """Create a run of every model with an endpoint of the dataset's task on ``dataset``
    (the models its inputs may go to)."""
    if dataset.row_count == 0:
        return []
    owner_ids = task_owner_ids(dataset.task)
    return [
        evaluation_run_create(model, dataset, trigger=trigger, include_perturbations=False)
        for model in _evaluable_models(dataset.task_id)
        if dataset_inputs_go_to(dataset, model, owner_ids)
    ]


@transaction.atomic
def evaluation_runs_for_model(
    model: RegisteredModel, *, trigger: str = RunTrigger.MODEL_REGISTERED, user=None
) -> list[EvaluationRun]:
    """Create runs of ``model`` on every original dataset of its task (copies come along)
    whose inputs may go to it."""
    if not model.has_endpoint or model.status == ModelStatus.DISABLED:
        return []
    datasets = Dataset.objects.filter(
        task_id=model.task_id, perturbation_of__isnull=True, row_count__gt=0
    ).select_related("task")
    owner_ids = task_owner_ids(model.task)
    return [
        evaluation_run_create(model, dataset, trigger=trigger, user=user)
        for dataset in datasets.order_by("pk")
        if dataset_inputs_go_to(dataset, model, owner_ids)
    ]


def run_can_manage(run: EvaluationRun, user) -> bool:
    """Return True for the model's owner and the task's owners."""
    return model_can_edit(run.model, user)


@transaction.atomic
def evaluation_run_retry(run: EvaluationRun, *, user=None) -> EvaluationRun:
    """Re-queue the unfinished shards of a failed run; stored predictions are kept (resume)."""
    run = (
        EvaluationRun.objects.select_for_update(of=("self",))
        .select_related("model__task", "model__owner", "dataset__task", "dataset__perturbation_of")
        .get(pk=run.pk)
    )
    if user is not None and not run_can_manage(run, user):
        raise PermissionDenied("only the model's owner or the task's owners can retry this run")
    _require_inputs_allowed(run.model, run.dataset)
    if run.trigger == RunTrigger.PREDICTIONS_UPLOAD:
        raise ServiceError("upload the predictions file again instead", code="run.not_retryable")
    if run.status != RunStatus.FAILED:
        raise ServiceError(f"the run is {run.status}, not failed", code="run.not_failed")
    if not run.model.has_endpoint:
        raise ServiceError("this model has no endpoint", code="run.no_endpoint")
    run.shards.exclude(status=RunStatus.DONE).update(
        status=RunStatus.QUEUED, error_code="", error_message=""
    )
    run.status = RunStatus.QUEUED if run.shards.exists() else RunStatus.FINALIZING
    run.error_code = ""
    run.error_message = ""
    run.first_bad_response = ""
    run.finished_at = None
    run.save(
        update_fields=[
            "status",
            "error_code",
            "error_message",
            "first_bad_response",
            "finished_at",
            "updated_at",
        ]
    )
    _enqueue_after_commit(run)
    return run
