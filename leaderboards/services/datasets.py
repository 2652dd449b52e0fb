"""Writes of datasets: uploads, and perturbed copies uploaded or generated.

Datasets
    ``dataset_import`` streams a JSON Lines or CSV file (``core.uploads``), checks every line
    against the task config (``tasks.config.values.check_dataset_row``) and writes rows with
    ``bulk_create`` in batches inside one transaction (at most ``UPLOAD_MAX_ROWS`` rows; a
    big file is imported by a job: ``leaderboards.services.dataset_uploads.dataset_upload``). The
    first bad line stops the writing,
    not the checking; up to 100 problems are collected, each naming its line, and the
    transaction is rolled back (``InvalidUpload``). Re-uploading a slug replaces its rows and
    re-evaluates. ``DatasetExample.inputs`` holds exactly ``config.model_input_names`` (``uid``
    included, as a string); ``gold`` holds ``config.gold_fields``.

Perturbed copies
    A copy is uploaded (``perturbation_of`` + ``kind``: every line carries ``input_id``) or
    generated with ``dataset_generate_perturbation`` (``leaderboards.perturb``, seeded, so the
    same seed gives the same rows). Generated copies perturb the worker-written text fields
    (statement, hypothesis, question...), not the owner's contexts. A copy is evaluated as
    its own run (``leaderboards.services.runs``). A copy of a hidden dataset is hidden, and
    every copy sends its inputs where its original does (``inputs_to_others``).

Inputs to others' models
    ``inputs_to_others`` says whether the inputs may go to the endpoints of models whose
    owner does not own the task. Left out (None), a new dataset takes the default of its
    access type (no for hidden, yes otherwise); a replaced one keeps its choice, except that
    it turns to no when the dataset becomes hidden.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import IO

from django.db import transaction
from django.utils.text import slugify

from core.errors import NotFound, PermissionDenied, ServiceError
from core.upload_streams import capped_records
from core.uploads import (
    UploadLineError,
    UploadProblems,
    detect_format,
    iter_records,
    no_records_error,
)
from leaderboards import perturb
from leaderboards.models import AccessType, Dataset, DatasetExample, PerturbationKind, RunTrigger
from leaderboards.services.runs import evaluation_runs_for_dataset
from leaderboards.services.uploads import (
    config_or_raise,
    normalise_csv_row,
    row_problems,
    upload_error,
)
from tasks.config.types import FieldType, TaskConfig
from tasks.config.values import check_dataset_row
from tasks.models import Round, Task
from tasks.permissions import can_manage_task
from tasks.upload_jobs import upload_max_rows

logger = logging.getLogger(__name__)

DATASET_BATCH_SIZE = 2000
DEFAULT_PERTURBATION_SEED = "dynatask"
PERTURBATION_KINDS = (PerturbationKind.FAIRNESS.value, PerturbationKind.ROBUSTNESS.value)


def _require_task_owner(user, task: Task) -> None:
    if user is not None and not can_manage_task(user, task):
        raise PermissionDenied("only the task's owners can change its datasets")


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
    inputs_to_others: bool | None = None,
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
    config = config_or_raise(task)
    slug, original, round_ = _checked_import_target(
        task, name, slug, access_type, perturbation_of, perturbation_kind, round_number
    )
    fmt = detect_format(filename, fmt)
    errors = UploadProblems()
    with transaction.atomic():
        dataset, replacing = _locked_dataset(task, slug, original)
        if original is not None and original.access_type == AccessType.HIDDEN:
            access_type = AccessType.HIDDEN
        dataset.inputs_to_others = _inputs_to_others(
            dataset if replacing else None, access_type, inputs_to_others
        )
        dataset.name = name
        dataset.access_type = access_type
        dataset.round = round_
        dataset.description = description
        dataset.source_url = source_url
        if weight is not None:
            dataset.weight = weight
        _mark_uploaded(dataset, task, original, perturbation_kind if original is not None else "")
        if user is not None and not replacing:
            dataset.created_by = user
        dataset.save()
        count = _replace_examples(dataset, config, stream, fmt, errors, original, replacing)
        if errors:
            transaction.set_rollback(True)
        else:
            _finish_import(dataset, config, count, replacing, evaluate, user)
    if errors:
        raise upload_error(errors, "upload")
    logger.info("dataset %s imported into %s: %s rows", slug, task.code, count)
    return dataset


def _checked_import_target(
    task: Task,
    name: str,
    slug: str,
    access_type: str,
    perturbation_of: Dataset | str | None,
    perturbation_kind: str,
    round_number: int | None,
) -> tuple[str, Dataset | None, Round | None]:
    """Check what an import names and return its slug, original dataset (if a copy), round."""
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
    round_ = None
    if round_number is not None:
        round_ = task.rounds.filter(number=round_number).first()
        if round_ is None:
            raise ServiceError(
                f"round {round_number} does not exist for task {task.code}", code="round.missing"
            )
    return slug, original, round_


def _locked_dataset(task: Task, slug: str, original: Dataset | None) -> tuple[Dataset, bool]:
    """Return the dataset at ``slug`` (locked; a new one if none) and whether it exists.

    An existing dataset can only be replaced by the same kind: an original by an original,
    a copy by a copy of the same original.
    """
    dataset = Dataset.objects.select_for_update().filter(task=task, slug=slug).first()
    if dataset is None:
        return Dataset(task=task, slug=slug), False
    if (dataset.perturbation_of_id or None) != (original.pk if original else None):
        raise ServiceError(
            f"dataset {slug!r} exists and is "
            + ("a perturbed copy" if dataset.perturbation_of_id else "an original dataset"),
            code="dataset.slug_taken",
        )
    return dataset, True


def _mark_uploaded(
    dataset: Dataset, task: Task, original: Dataset | None, perturbation_kind: str
) -> None:
    """Mark ``dataset`` as uploaded (not generated) for the task's current config."""
    dataset.config_version_id = task.current_config_id
    dataset.perturbation_of = original
    dataset.perturbation_kind = perturbation_kind
    dataset.generated = False
    dataset.perturbation_seed = ""


def _replace_examples(
    dataset: Dataset,
    config: TaskConfig,
    stream: IO,
    fmt: str,
    errors: UploadProblems,
    original: Dataset | None,
    replacing: bool,
) -> int:
    """Write the examples of ``stream`` in place of the dataset's; return how many.

    Problems go to ``errors`` (an empty file is one).
    """
    if replacing:
        # Predictions of the old rows go with them; scores are rebuilt by the new runs.
        dataset.examples.all().delete()
    original_uids = (
        set(original.examples.values_list("uid", flat=True)) if original is not None else None
    )
    records = capped_records(iter_records(stream, fmt), upload_max_rows())
    perturbed = original is not None
    count = _write_examples(dataset, config, records, fmt, errors, perturbed, original_uids)
    if not errors and count == 0:
        errors.append(no_records_error())
    return count


def _finish_import(
    dataset: Dataset, config: TaskConfig, count: int, replacing: bool, evaluate: bool, user
) -> None:
    """Record the row count, bring the perturbed copies along and queue the evaluations."""
    dataset.row_count = count
    dataset.save(update_fields=["row_count", "updated_at"])
    if dataset.perturbation_of_id is None:
        dataset_copies_follow(dataset)
        if replacing:
            for copy in dataset.perturbations.filter(generated=True):
                _regenerate(copy, config)
    if evaluate:
        evaluation_runs_for_dataset(dataset, trigger=RunTrigger.DATASET_ADDED, user=user)


def _inputs_to_others(existing: Dataset | None, access_type: str, choice: bool | None) -> bool:
    """Return the ``inputs_to_others`` of an uploaded dataset (see the module)."""
    if choice is not None:
        return bool(choice)
    if access_type == AccessType.HIDDEN and (
        existing is None or existing.access_type != AccessType.HIDDEN
    ):
        return False
    if existing is not None:
        return existing.inputs_to_others
    return access_type != AccessType.HIDDEN


def dataset_copies_follow(original: Dataset) -> None:
    """Make the perturbed copies of ``original`` hidden when it is, and share its inputs rule."""
    copies = original.perturbations.all()
    copies.update(inputs_to_others=original.inputs_to_others)
    if original.access_type == AccessType.HIDDEN:
        copies.exclude(access_type=AccessType.HIDDEN).update(access_type=AccessType.HIDDEN)


def _write_examples(
    dataset: Dataset,
    config: TaskConfig,
    records: Iterable,
    fmt: str,
    errors: UploadProblems,
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
            row = normalise_csv_row(config, record) if fmt == "csv" else record
            problems = row_problems(
                line,
                row,
                known,
                "a dataset field",
                check_dataset_row(config, row, perturbed=perturbed),
            )
            uid, input_id = _identity_problems(line, row, perturbed, seen, original_uids, problems)
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
        if len(batch) >= DATASET_BATCH_SIZE:
            DatasetExample.objects.bulk_create(batch)
            batch = []
    if batch and not errors:
        DatasetExample.objects.bulk_create(batch)
    return position


def _identity_problems(
    line: int,
    row: dict,
    perturbed: bool,
    seen: set[str],
    original_uids: set[str] | None,
    problems: list[UploadLineError],
) -> tuple[str, str]:
    """Return the row's uid and input id; append their problems to ``problems``.

    A uid is unique in the file (``seen``, which it joins) and at most 200 characters; a
    perturbed copy's ``input_id`` is a uid of the original dataset.
    """
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
    return uid, input_id


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
    config = config_or_raise(task)
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
        copy.inputs_to_others = dataset.inputs_to_others
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
