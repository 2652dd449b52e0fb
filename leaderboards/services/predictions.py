"""Writes of predictions files: score a model from uploaded outputs, without calling it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import IO

from django.db import transaction
from django.utils import timezone

from core.errors import InvalidUpload, PermissionDenied, ServiceError
from core.uploads import (
    UploadLineError,
    UploadProblems,
    detect_format,
    iter_records,
    no_records_error,
)
from leaderboards.models import Dataset, EvaluationRun, Prediction, RunStatus, RunTrigger
from leaderboards.services.runs import run_budget_charge
from leaderboards.services.scores import run_finalize
from leaderboards.services.uploads import (
    config_or_raise,
    normalise_csv_row,
    row_problems,
    upload_error,
)
from models_hub.models import RegisteredModel
from models_hub.selectors import model_can_edit
from tasks.config.types import TaskConfig
from tasks.config.values import check_prediction_row

PREDICTION_BATCH_SIZE = 2000
# How many of the uids a file misses its refusal names.
MISSING_IDS_NAMED = 5
MISSING_IDS = "upload.E024"


def missing_ids_error(missing: list[str], total: int) -> InvalidUpload:
    """Return the refusal of a file that misses ``missing`` (in position order) of ``total``."""
    named = ", ".join(uid[:60] for uid in missing[:MISSING_IDS_NAMED])
    more = ", …" if len(missing) > MISSING_IDS_NAMED else ""
    message = (
        f"the predictions file is missing {len(missing)} of {total} ids: {named}{more}; "
        "add them, or accept the file as partial (partial=true): the missing examples then "
        "count as wrong and the score is marked partial"
    )
    error = UploadLineError(1, MISSING_IDS, message, "uid")  # the whole file: its line 1
    return InvalidUpload(
        message,
        details={
            "errors": [error.as_dict()],
            "missing_count": len(missing),
            "total": total,
            "missing_ids": missing[:MISSING_IDS_NAMED],
        },
    )


def predictions_import(
    model: RegisteredModel,
    dataset: Dataset,
    stream: IO,
    *,
    filename: str = "",
    fmt: str | None = None,
    user=None,
    partial: bool = False,
) -> EvaluationRun:
    """Score ``model`` on ``dataset`` from an uploaded predictions file, all or nothing.

    Each line is ``{"uid": ..., <output fields>}`` (``check_prediction_row``); a uid must
    name an example of the dataset, once. A file that misses examples is refused
    (``upload.E024``, naming the first missing uids and their count) unless ``partial``:
    then the missing examples count as wrong and the run and its Score keep the coverage
    (``done`` of ``total``; ``Score.covered_count`` of ``example_count``), shown as
    partial wherever the score is. The run is finalized at once, exactly like an
    evaluated one. ``user`` spends a unit of their daily budget on the dataset
    (``run_budget_charge``); a refused file spends none.
    """
    config = _checked_predictions_upload(model, dataset, user)
    fmt = detect_format(filename, fmt)
    errors = UploadProblems()
    with transaction.atomic():
        run_budget_charge(user, dataset)
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
        records = iter_records(stream, fmt)
        count, missing = _write_predictions(
            run, config, records, fmt, example_ids, errors, partial=partial
        )
        if errors or missing:
            transaction.set_rollback(True)
        else:
            run.done = count
            run.failed_count = len(example_ids) - count
            run.status = RunStatus.FINALIZING
            run.save(update_fields=["done", "failed_count", "status", "updated_at"])
    if errors:
        raise upload_error(errors, "predictions file")
    if missing:
        raise missing_ids_error(missing, len(example_ids))
    run_finalize(run.pk)
    run.refresh_from_db()
    return run


def _checked_predictions_upload(model: RegisteredModel, dataset: Dataset, user) -> TaskConfig:
    """Check that ``user`` may upload predictions of ``model`` on ``dataset``; return the
    task's config."""
    if model.task_id != dataset.task_id:
        raise ServiceError("the model and the dataset belong to different tasks", code="run.task")
    if user is not None and not model_can_edit(model, user):
        raise PermissionDenied("only the model's owner or the task's owners can upload for it")
    return config_or_raise(dataset.task)


def _write_predictions(
    run: EvaluationRun,
    config: TaskConfig,
    records: Iterable,
    fmt: str,
    example_ids: Mapping[str, int],
    errors: UploadProblems,
    *,
    partial: bool,
) -> tuple[int, list[str]]:
    """Check and bulk-write the predictions of ``records``; append problems to ``errors``.

    Return the count of predictions and the uids the file misses (none when ``partial``,
    or when there are errors, an empty file being one). Nothing more is written once there
    is a problem.
    """
    output_names = config.output_names
    known = set(output_names) | {"uid"}
    seen: set[str] = set()
    batch: list[Prediction] = []
    count = 0
    for line, record in records:
        if isinstance(record, UploadLineError):
            errors.append(record)
        else:
            row = normalise_csv_row(config, record) if fmt == "csv" else record
            problems = row_problems(
                line, row, known, "an output field", check_prediction_row(config, row)
            )
            uid = str(row.get("uid", ""))
            problems += _uid_problems(line, uid, example_ids, seen)
            seen.add(uid)
            if problems:
                errors.extend(problems)
            elif not errors:
                output = {name: row[name] for name in output_names if name in row}
                batch.append(Prediction(run=run, example_id=example_ids[uid], output=output))
                count += 1
        if len(batch) >= PREDICTION_BATCH_SIZE:
            Prediction.objects.bulk_create(batch)
            batch = []
    if not errors and count == 0:
        errors.append(no_records_error())
    missing = [] if errors or partial else [uid for uid in example_ids if uid not in seen]
    if batch and not errors and not missing:
        Prediction.objects.bulk_create(batch)
    return count, missing


def _uid_problems(
    line: int, uid: str, example_ids: Mapping[str, int], seen: set[str]
) -> list[UploadLineError]:
    """Return the problem of a line's uid: not an example of the dataset, or already seen."""
    if uid and uid not in example_ids:
        return [
            UploadLineError(line, "upload.E023", f"uid {uid[:60]!r} is not in the dataset", "uid")
        ]
    if uid in seen:
        return [UploadLineError(line, "upload.E020", f"uid {uid[:60]!r} is repeated", "uid")]
    return []
