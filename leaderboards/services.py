"""Writes of the leaderboards app: datasets, perturbed copies, evaluation runs, predictions files.

Datasets
    ``dataset_import`` streams a JSON Lines or CSV file (``tasks.uploads``), checks every line
    against the task config (``tasks.config.values.check_dataset_row``) and writes rows with
    ``bulk_create`` in batches inside one transaction. The first bad line stops the writing,
    not the checking; up to 100 problems are collected, each naming its line, and the
    transaction is rolled back (``InvalidUpload``). Re-uploading a slug replaces its rows and
    re-evaluates. ``DatasetExample.inputs`` holds exactly ``config.model_input_names`` (``uid``
    included, as a string); ``gold`` holds ``config.gold_fields``.

Perturbed copies
    A copy is uploaded (``perturbation_of`` + ``kind``: every line carries ``input_id``) or
    generated with ``dataset_generate_perturbation`` (``leaderboards.perturb``, seeded, so the
    same seed gives the same rows). Generated copies perturb the worker-written text fields
    (statement, hypothesis, question...), not the owner's contexts.

Evaluation design
    A perturbed copy is evaluated as its **own run**, created together with the original's
    run (``evaluation_run_create``). Each finalize (of the original's run or of a copy's run)
    recomputes the one ``Score`` of (model, original dataset) from the latest done runs, so
    the delta metrics appear as soon as the copy's run is done. Perturbed datasets never get
    a Score of their own.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import IO, Any

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from leaderboards import perturb
from leaderboards.models import (
    AccessType,
    Dataset,
    DatasetExample,
    EvaluationRun,
    EvaluationShard,
    PerturbationKind,
    Prediction,
    RunStatus,
    RunTrigger,
)
from models_hub.models import Model, ModelStatus
from models_hub.selectors import model_can_edit
from tasks.config.types import FieldType, TaskConfig
from tasks.config.values import check_dataset_row, check_prediction_row
from tasks.errors import InvalidUpload, NotFound, PermissionDenied, ServiceError
from tasks.models import Task
from tasks.permissions import can_manage_task
from tasks.uploads import (
    MAX_REPORTED_ERRORS,
    UploadLineError,
    detect_format,
    iter_records,
    parse_json_cell,
)

logger = logging.getLogger(__name__)

DATASET_BATCH_SIZE = 2000
PREDICTION_BATCH_SIZE = 2000
# A shard job ends by draining its requests and the next one starts from none in flight;
# at 2,000 examples (half a second against a local model) that drain and the job's fixed
# queries cost a tenth of the throughput. Shards resume where they stopped, so a larger
# shard loses nothing on a retry.
DEFAULT_SHARD_SIZE = 10_000
DEFAULT_PERTURBATION_SEED = "dynatask"
PERTURBATION_KINDS = (PerturbationKind.FAIRNESS.value, PerturbationKind.ROBUSTNESS.value)


# -- helpers ---------------------------------------------------------------------------------
def _config_or_raise(task: Task) -> TaskConfig:
    config = task.config
    if config is None:
        raise ServiceError("the task has no config yet", code="task.no_config")
    return config


def _require_task_owner(user, task: Task) -> None:
    if user is not None and not can_manage_task(user, task):
        raise PermissionDenied("only the task's owners can change its datasets")


def _csv_cell(spec_type: FieldType | None, value: Any) -> Any:
    """Decode one CSV cell: blank is missing; non-string fields and gold lists hold JSON."""
    if not isinstance(value, str):
        return value
    if value == "":
        return None
    if spec_type in (FieldType.STRING, FieldType.IMAGE, FieldType.MULTICLASS):
        # A list of acceptable answers is written as a JSON list.
        return parse_json_cell(value) if value[:1] == "[" else value
    if spec_type is None:
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _csv_tags(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if not value.strip():
        return []
    decoded = parse_json_cell(value)
    if isinstance(decoded, list):
        return decoded
    return [tag.strip() for tag in value.split(",") if tag.strip()]


def _normalise_csv_row(config: TaskConfig, record: dict) -> dict:
    row: dict[str, Any] = {}
    for key, value in record.items():
        if key == "tags":
            row[key] = _csv_tags(value)
        elif key in ("uid", "input_id"):
            row[key] = value
        else:
            spec = config.field(key)
            decoded = _csv_cell(spec.type if spec else None, value)
            if decoded is not None:
                row[key] = decoded
    return row


def _errors_to_upload(errors: list[UploadLineError], what: str) -> InvalidUpload:
    return InvalidUpload(
        f"{len(errors)} problem(s) in the {what}; nothing was imported",
        details={"errors": [error.as_dict() for error in errors]},
    )


# -- datasets --------------------------------------------------------------------------------
def _resolve_original(task: Task, perturbation_of: Dataset | str | None) -> Dataset | None:
    if perturbation_of is None or perturbation_of == "":
        return None
    if isinstance(perturbation_of, Dataset):
        original = perturbation_of
    else:
        original = Dataset.objects.filter(task=task, slug=perturbation_of).first()
        if original is None:
            raise NotFound(f"no dataset {perturbation_of!r} in task {task.code}")
    if original.task_id != task.pk:
        raise ServiceError("the original dataset belongs to another task", code="dataset.task")
    if original.perturbation_of_id is not None:
        raise ServiceError(
            "a perturbed copy cannot itself be perturbed", code="dataset.perturbation_nested"
        )
    return original


def _row_problems(line: int, row: dict, known: set[str], what: str, issues) -> list:
    """Return the line's problems: keys the config does not know, then the value checks."""
    problems = [
        UploadLineError(line, "upload.E010", f"{str(key)[:60]!r} is not {what}", key)
        for key in row
        if key not in known
    ]
    problems += [UploadLineError(line, i.code, i.message, i.path) for i in issues]
    return problems


def dataset_import(
    task: Task,
    stream: IO,
    *,
    name: str,
    slug: str = "",
    filename: str = "",
    fmt: str | None = None,
    access_type: str = AccessType.SCORING,
    round_number: int | None = None,
    description: str = "",
    source_url: str = "",
    weight: float | None = None,
    perturbation_of: Dataset | str | None = None,
    perturbation_kind: str = "",
    user=None,
    evaluate: bool = True,
) -> Dataset:
    """Import (or replace) a dataset of ``task`` from JSON Lines or CSV, all or nothing.

    ``user`` (when given) must own the task. With ``perturbation_of`` (a dataset or its slug)
    the file is a perturbed copy of that dataset: ``perturbation_kind`` is fairness or
    robustness and every line carries ``input_id``, the uid of an original example. With
    ``evaluate`` the dataset is evaluated on every model of the task that has an endpoint.
    """
    _require_task_owner(user, task)
    config = _config_or_raise(task)
    slug = slug or slugify(name)[:100]
    if not slug:
        raise ServiceError("the dataset needs a slug", code="dataset.slug_required")
    if access_type not in AccessType.values:
        raise ServiceError(f"unknown access type {access_type!r}", code="dataset.access_type")
    original = _resolve_original(task, perturbation_of)
    if original is not None and perturbation_kind not in PERTURBATION_KINDS:
        raise ServiceError(
            "a perturbed copy needs a kind: fairness or robustness", code="dataset.kind_required"
        )
    if original is None:
        perturbation_kind = ""
    round_ = None
    if round_number is not None:
        round_ = task.rounds.filter(number=round_number).first()
        if round_ is None:
            raise ServiceError(
                f"round {round_number} does not exist for task {task.code}", code="round.missing"
            )
    fmt = detect_format(filename, fmt)
    perturbed = original is not None

    errors: list[UploadLineError] = []
    with transaction.atomic():
        dataset = Dataset.objects.select_for_update().filter(task=task, slug=slug).first()
        replacing = dataset is not None
        if dataset is None:
            dataset = Dataset(task=task, slug=slug)
        elif (dataset.perturbation_of_id or None) != (original.pk if original else None):
            raise ServiceError(
                f"dataset {slug!r} exists and is "
                + ("a perturbed copy" if dataset.perturbation_of_id else "an original dataset"),
                code="dataset.slug_taken",
            )
        dataset.name = name
        dataset.access_type = access_type
        dataset.round = round_
        dataset.description = description
        dataset.source_url = source_url
        if weight is not None:
            dataset.weight = weight
        dataset.config_version_id = task.current_config_id
        dataset.perturbation_of = original
        dataset.perturbation_kind = perturbation_kind
        dataset.generated = False
        dataset.perturbation_seed = ""
        if user is not None and not replacing:
            dataset.created_by = user
        dataset.save()
        if replacing:
            # Predictions of the old rows go with them; scores are rebuilt by the new runs.
            dataset.examples.all().delete()
        original_uids = (
            set(original.examples.values_list("uid", flat=True)) if original is not None else None
        )
        count = _write_examples(
            dataset, config, iter_records(stream, fmt), fmt, errors, perturbed, original_uids
        )
        if not errors and count == 0:
            errors.append(UploadLineError(0, "upload.E008", "the file has no records"))
        if errors:
            transaction.set_rollback(True)
        else:
            dataset.row_count = count
            dataset.save(update_fields=["row_count", "updated_at"])
            if replacing and original is None:
                for copy in dataset.perturbations.filter(generated=True):
                    _regenerate(copy, config)
            if evaluate:
                evaluation_runs_for_dataset(dataset, trigger=RunTrigger.DATASET_ADDED, user=user)
    if errors:
        raise _errors_to_upload(errors, "upload")
    logger.info("dataset %s imported into %s: %s rows", slug, task.code, count)
    return dataset


def _write_examples(
    dataset: Dataset,
    config: TaskConfig,
    records: Iterable,
    fmt: str,
    errors: list[UploadLineError],
    perturbed: bool,
    original_uids: set[str] | None,
) -> int:
    """Check and bulk-write examples; append problems to ``errors``; return rows accepted."""
    input_names = config.model_input_names
    gold_names = tuple(spec.name for spec in config.gold_fields)
    known = set(input_names) | set(gold_names) | {"tags"}
    if perturbed:
        known.add("input_id")
    seen: set[str] = set()
    batch: list[DatasetExample] = []
    position = 0
    dataset_id = dataset.pk
    for line, record in records:
        if isinstance(record, UploadLineError):
            errors.append(record)
        else:
            row = _normalise_csv_row(config, record) if fmt == "csv" else record
            problems = _row_problems(
                line,
                row,
                known,
                "a dataset field",
                check_dataset_row(config, row, perturbed=perturbed),
            )
            uid = str(row.get("uid", ""))
            if uid and uid in seen:
                problems.append(
                    UploadLineError(line, "upload.E020", f"uid {uid[:60]!r} is repeated", "uid")
                )
            seen.add(uid)
            if len(uid) > 200:
                problems.append(UploadLineError(line, "upload.E021", "uid is too long", "uid"))
            input_id = str(row.get("input_id", "")) if perturbed else ""
            if perturbed and input_id and input_id not in original_uids:
                problems.append(
                    UploadLineError(
                        line,
                        "upload.E022",
                        f"input_id {input_id[:60]!r} is not a uid of the original dataset",
                        "input_id",
                    )
                )
            if problems:
                errors.extend(problems)
            elif not errors:
                inputs = {name: row[name] for name in input_names[1:] if name in row}
                inputs = {"uid": uid, **inputs}
                batch.append(
                    DatasetExample(
                        dataset_id=dataset_id,
                        position=position,
                        uid=uid,
                        inputs=inputs,
                        gold={name: row[name] for name in gold_names},
                        tags=row.get("tags") or [],
                        input_id=input_id,
                    )
                )
                position += 1
        if len(errors) >= MAX_REPORTED_ERRORS:
            del errors[MAX_REPORTED_ERRORS:]
            break
        if len(batch) >= DATASET_BATCH_SIZE:
            DatasetExample.objects.bulk_create(batch)
            batch = []
    if batch and not errors:
        DatasetExample.objects.bulk_create(batch)
    return position


def perturbation_text_fields(config: TaskConfig) -> tuple[str, ...]:
    """Return the fields a generated perturbation changes: the worker-written text fields.

    Contexts are the owner's material (a passage, a prompt) and stay as they are, so a QA
    answer span still exists; a task whose only text is in its contexts perturbs those.
    """
    worker = tuple(f.name for f in config.worker_input_fields if f.type == FieldType.STRING)
    if worker:
        return worker
    return tuple(f.name for f in config.context if f.type == FieldType.STRING)


def dataset_generate_perturbation(
    dataset: Dataset,
    kind: str,
    *,
    seed: str = DEFAULT_PERTURBATION_SEED,
    user=None,
    evaluate: bool = True,
) -> Dataset:
    """Generate (or regenerate) the ``kind`` copy of ``dataset`` deterministically from ``seed``.

    The copy is the dataset ``<slug>-<kind>``; its rows are ``perturb.perturb_row`` of the
    original rows (fairness skips rows with nothing to swap). Same seed, same rows.
    """
    task = dataset.task
    _require_task_owner(user, task)
    config = _config_or_raise(task)
    if kind not in PERTURBATION_KINDS:
        raise ServiceError(
            f"unknown perturbation kind {kind!r}; use fairness or robustness",
            code="dataset.kind_unknown",
        )
    if dataset.perturbation_of_id is not None:
        raise ServiceError(
            "a perturbed copy cannot itself be perturbed", code="dataset.perturbation_nested"
        )
    with transaction.atomic():
        copy = (
            Dataset.objects.select_for_update()
            .filter(perturbation_of=dataset, perturbation_kind=kind)
            .first()
        )
        if copy is None:
            slug = f"{dataset.slug}-{kind}"[:100]
            if Dataset.objects.filter(task=task, slug=slug).exists():
                raise ServiceError(f"dataset {slug!r} already exists", code="dataset.slug_taken")
            copy = Dataset(
                task=task,
                slug=slug,
                perturbation_of=dataset,
                perturbation_kind=kind,
                created_by=user,
            )
        copy.name = f"{dataset.name} ({kind})"
        copy.access_type = dataset.access_type
        copy.round = dataset.round
        copy.description = f"{kind.capitalize()} perturbation of {dataset.name}, seed {seed!r}."
        copy.config_version_id = task.current_config_id
        copy.generated = True
        copy.perturbation_seed = str(seed)[:64]
        copy.save()
        _regenerate(copy, config)
        if evaluate:
            evaluation_runs_for_dataset(copy, trigger=RunTrigger.DATASET_ADDED, user=user)
    return copy


def _regenerate(copy: Dataset, config: TaskConfig) -> int:
    """Rewrite the rows of a generated copy from its original and seed; return the count."""
    copy.examples.all().delete()
    fields = perturbation_text_fields(config)
    kind = copy.perturbation_kind
    seed = copy.perturbation_seed or DEFAULT_PERTURBATION_SEED
    originals = (
        DatasetExample.objects.filter(dataset_id=copy.perturbation_of_id)
        .order_by("position")
        .values_list("uid", "inputs", "gold", "tags")
    )
    batch: list[DatasetExample] = []
    position = 0
    for uid, inputs, gold, tags in originals.iterator(chunk_size=DATASET_BATCH_SIZE):
        row = perturb.perturb_row({**inputs, "uid": uid}, fields, kind, seed)
        if row is None:
            continue
        new_uid = str(row.pop("uid"))
        input_id = str(row.pop("input_id"))
        batch.append(
            DatasetExample(
                dataset_id=copy.pk,
                position=position,
                uid=new_uid[:200],
                inputs={**row, "uid": new_uid},
                gold=gold,
                tags=tags,
                input_id=input_id,
            )
        )
        position += 1
        if len(batch) >= DATASET_BATCH_SIZE:
            DatasetExample.objects.bulk_create(batch)
            batch = []
    if batch:
        DatasetExample.objects.bulk_create(batch)
    copy.row_count = position
    copy.save(update_fields=["row_count", "updated_at"])
    return position


# -- evaluation runs -------------------------------------------------------------------------
def _enqueue_after_commit(run: EvaluationRun) -> None:
    from leaderboards import jobs  # jobs call services: import at use to avoid a cycle

    run_id = run.pk
    transaction.on_commit(lambda: jobs.enqueue_run(run_id))


def _create_one_run(
    model: Model, dataset: Dataset, *, trigger: str, user, shard_size: int
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
    model: Model,
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
    own the task or the model. Shards are ``shard_size`` examples (default 10,000).
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
    shard_size = max(1, shard_size or DEFAULT_SHARD_SIZE)
    run = _create_one_run(model, dataset, trigger=trigger, user=user, shard_size=shard_size)
    if include_perturbations and dataset.perturbation_of_id is None:
        for copy in dataset.perturbations.filter(row_count__gt=0).order_by("pk"):
            _create_one_run(model, copy, trigger=trigger, user=user, shard_size=shard_size)
    return run


def _evaluable_models(task_id: int):
    return (
        Model.objects.filter(task_id=task_id)
        .exclude(protocol="none")
        .exclude(endpoint_url="")
        .exclude(status=ModelStatus.DISABLED)
        .order_by("pk")
    )


@transaction.atomic
def evaluation_runs_for_dataset(
    dataset: Dataset, *, trigger: str = RunTrigger.DATASET_ADDED, user=None
) -> list[EvaluationRun]:
    """Create a run of every model with an endpoint of the dataset's task on ``dataset``."""
    if dataset.row_count == 0:
        return []
    return [
        evaluation_run_create(model, dataset, trigger=trigger, include_perturbations=False)
        for model in _evaluable_models(dataset.task_id)
    ]


@transaction.atomic
def evaluation_runs_for_model(
    model: Model, *, trigger: str = RunTrigger.MODEL_REGISTERED, user=None
) -> list[EvaluationRun]:
    """Create runs of ``model`` on every original dataset of its task (copies come along)."""
    if not model.has_endpoint or model.status == ModelStatus.DISABLED:
        return []
    datasets = Dataset.objects.filter(
        task_id=model.task_id, perturbation_of__isnull=True, row_count__gt=0
    ).select_related("task")
    return [
        evaluation_run_create(model, dataset, trigger=trigger, user=user)
        for dataset in datasets.order_by("pk")
    ]


def run_can_manage(run: EvaluationRun, user) -> bool:
    """Return True for the model's owner and the task's owners."""
    return model_can_edit(run.model, user)


@transaction.atomic
def evaluation_run_retry(run: EvaluationRun, *, user=None) -> EvaluationRun:
    """Re-queue the unfinished shards of a failed run; stored predictions are kept (resume)."""
    run = EvaluationRun.objects.select_for_update().select_related("model__task").get(pk=run.pk)
    if user is not None and not run_can_manage(run, user):
        raise PermissionDenied("only the model's owner or the task's owners can retry this run")
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


# -- predictions files -----------------------------------------------------------------------
def predictions_import(
    model: Model,
    dataset: Dataset,
    stream: IO,
    *,
    filename: str = "",
    fmt: str | None = None,
    user=None,
) -> EvaluationRun:
    """Score ``model`` on ``dataset`` from an uploaded predictions file, all or nothing.

    Each line is ``{"uid": ..., <output fields>}`` (``check_prediction_row``); a uid must
    name an example of the dataset, once. Examples without a line count as wrong. The run is
    finalized at once, exactly like an evaluated one.
    """
    if model.task_id != dataset.task_id:
        raise ServiceError("the model and the dataset belong to different tasks", code="run.task")
    if user is not None and not model_can_edit(model, user):
        raise PermissionDenied("only the model's owner or the task's owners can upload for it")
    config = _config_or_raise(dataset.task)
    fmt = detect_format(filename, fmt)
    output_names = config.output_names
    known = set(output_names) | {"uid"}
    errors: list[UploadLineError] = []
    with transaction.atomic():
        example_ids = dict(dataset.examples.values_list("uid", "pk"))
        run = EvaluationRun.objects.create(
            model=model,
            dataset=dataset,
            config_version_id=dataset.task.current_config_id,
            trigger=RunTrigger.PREDICTIONS_UPLOAD,
            status=RunStatus.RUNNING,
            total=len(example_ids),
            shard_size=max(1, len(example_ids)),
            requested_by=user,
            started_at=timezone.now(),
        )
        seen: set[str] = set()
        batch: list[Prediction] = []
        count = 0
        for line, record in iter_records(stream, fmt):
            if isinstance(record, UploadLineError):
                errors.append(record)
            else:
                row = _normalise_csv_row(config, record) if fmt == "csv" else record
                problems = _row_problems(
                    line, row, known, "an output field", check_prediction_row(config, row)
                )
                uid = str(row.get("uid", ""))
                if uid and uid not in example_ids:
                    problems.append(
                        UploadLineError(
                            line, "upload.E023", f"uid {uid[:60]!r} is not in the dataset", "uid"
                        )
                    )
                elif uid in seen:
                    problems.append(
                        UploadLineError(line, "upload.E020", f"uid {uid[:60]!r} is repeated", "uid")
                    )
                seen.add(uid)
                if problems:
                    errors.extend(problems)
                elif not errors:
                    batch.append(
                        Prediction(
                            run=run,
                            example_id=example_ids[uid],
                            output={name: row[name] for name in output_names if name in row},
                        )
                    )
                    count += 1
            if len(errors) >= MAX_REPORTED_ERRORS:
                del errors[MAX_REPORTED_ERRORS:]
                break
            if len(batch) >= PREDICTION_BATCH_SIZE:
                Prediction.objects.bulk_create(batch)
                batch = []
        if not errors and count == 0:
            errors.append(UploadLineError(0, "upload.E008", "the file has no records"))
        if errors:
            transaction.set_rollback(True)
        else:
            if batch:
                Prediction.objects.bulk_create(batch)
            run.done = count
            run.failed_count = len(example_ids) - count
            run.status = RunStatus.FINALIZING
            run.save(update_fields=["done", "failed_count", "status", "updated_at"])
    if errors:
        raise _errors_to_upload(errors, "predictions file")
    from leaderboards import evaluation

    evaluation.run_finalize(run.pk)
    run.refresh_from_db()
    return run


# -- scores ----------------------------------------------------------------------------------
def scores_recompute_for_task(task: Task) -> int:
    """Recompute every Score of ``task`` from stored predictions; the models are not called.

    Used when the config changed (a metric added or re-weighted). Returns the number of
    scores written.
    """
    from leaderboards import evaluation

    pairs = (
        EvaluationRun.objects.filter(
            dataset__task=task, status=RunStatus.DONE, dataset__perturbation_of__isnull=True
        )
        .values_list("model_id", "dataset_id")
        .distinct()
    )
    written = 0
    for model_id, dataset_id in sorted(set(pairs)):
        if evaluation.score_refresh(model_id, dataset_id) is not None:
            written += 1
    if written:
        evaluation.board_cube_refresh(task.pk)
    return written
