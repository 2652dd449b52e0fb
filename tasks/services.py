"""Writes of the tasks app: tasks, config versions, rounds, contexts, proposals, and the
jobs that import big uploads.

Big uploads
    A file over ``UPLOAD_INLINE_MAX_BYTES`` is not imported in its request: it is stored
    (the default storage) with an ``UploadJob`` row, and an RQ job imports it
    (``upload_job_run``, the same all-or-nothing importers), reporting the bytes read to
    Redis for the progress page. Every upload is refused over ``UPLOAD_MAX_BYTES``
    (``upload.too_large``, 413) and over ``UPLOAD_MAX_ROWS`` rows (``upload.E030``, the
    line named). The apps above give their own importer and job function (the datasets'
    are in ``leaderboards``); the contexts' are here and in ``tasks.jobs``.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import PurePath
from typing import IO, Any

import django_rq
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.urls import reverse
from django.utils import timezone
from redis.exceptions import RedisError

from tasks.config import TaskConfigError, parse_task_config
from tasks.config.values import check_context
from tasks.errors import Conflict, InvalidConfig, InvalidUpload, ServiceError, UploadTooLarge
from tasks.models import (
    Context,
    ProposalStatus,
    Round,
    Task,
    TaskConfigVersion,
    TaskProposal,
    UploadJob,
    UploadKind,
    UploadStatus,
)
from tasks.signals import round_opened, task_config_changed
from tasks.upload_streams import ProgressReader, capped_records
from tasks.uploads import (
    UploadLineError,
    UploadProblems,
    detect_format,
    iter_records,
    no_records_error,
    parse_json_cell,
)

logger = logging.getLogger(__name__)

CONTEXT_BATCH_SIZE = 1000


def config_issues_as_dicts(error: TaskConfigError) -> list[dict]:
    return [
        {"code": i.code, "path": i.path, "line": i.line, "column": i.column, "message": i.message}
        for i in error.issues
    ]


def _parse_or_raise(yaml_text: str):
    try:
        return parse_task_config(yaml_text)
    except TaskConfigError as error:
        raise InvalidConfig(
            f"the task config has {len(error.issues)} problem(s)",
            details={"issues": config_issues_as_dicts(error)},
        ) from error


@transaction.atomic
def task_create(
    *,
    code: str,
    name: str,
    yaml_text: str,
    owners: Iterable[AbstractBaseUser] = (),
    description: str = "",
    instructions: str = "",
    created_by: AbstractBaseUser | None = None,
    **settings_fields,
) -> Task:
    """Create a task with config version 1 and an open round 1."""
    _parse_or_raise(yaml_text)
    if Task.objects.filter(code=code).exists():
        raise Conflict(f"a task with code {code!r} already exists", code="task.code_taken")
    task = Task.objects.create(
        code=code, name=name, description=description, instructions=instructions, **settings_fields
    )
    version = TaskConfigVersion.objects.create(
        task=task, version=1, yaml_text=yaml_text, created_by=created_by
    )
    task.current_config = version
    task.save(update_fields=["current_config"])
    owners = list(owners)
    if owners:
        task.owners.add(*owners)
    Round.objects.create(task=task, number=1, is_open=True)
    return task


def _version_has_data(version: TaskConfigVersion) -> bool:
    """Return True when any row (context, example, dataset...) was made under ``version``.

    Apps above ``tasks`` point at versions with foreign keys; walking the reverse relations
    lets this layer ask without importing them.
    """
    # The reverse relations (not hidden ones: ``Task.current_config`` names a version as the
    # task's current one, which is no row made under it).
    for relation in TaskConfigVersion._meta.get_fields():
        if (
            relation.is_relation
            and relation.auto_created
            and not relation.concrete
            and (relation.one_to_many or relation.one_to_one)
        ):
            accessor = relation.related_model._default_manager.filter(
                **{relation.field.name: version}
            )
            if accessor.exists():
                return True
    return False


@transaction.atomic
def task_update_config(
    task: Task, yaml_text: str, *, user: AbstractBaseUser | None = None
) -> TaskConfigVersion:
    """Set a task's config; a version that already has data is never rewritten.

    Unchanged text is a no-op. A version nothing refers to yet is edited in place; otherwise
    a new version is created and becomes current.
    """
    _parse_or_raise(yaml_text)
    task = Task.objects.select_for_update().get(pk=task.pk)
    current = task.current_config
    if current is not None and current.yaml_text == yaml_text:
        return current
    if current is not None and not _version_has_data(current):
        current.yaml_text = yaml_text
        current.created_by = user
        current.save(update_fields=["yaml_text", "created_by"])
        current.__dict__.pop("_parsed", None)
        _announce_config_change(task, current, current)
        return current
    latest = task.config_versions.aggregate(latest=Max("version"))["latest"] or 0
    version = TaskConfigVersion.objects.create(
        task=task, version=latest + 1, yaml_text=yaml_text, created_by=user
    )
    task.current_config = version
    task.save(update_fields=["current_config"])
    _announce_config_change(task, version, current)
    return version


def _announce_config_change(task, version, previous) -> None:
    # After commit, so that receivers (e.g. re-scoring) see the new version.
    transaction.on_commit(
        lambda: task_config_changed.send(sender=Task, task=task, version=version, previous=previous)
    )


@transaction.atomic
def round_open(
    task: Task, *, description: str = "", close_previous: bool = True, carry_over: bool = True
) -> Round:
    """Open the next round of ``task`` and return it.

    ``close_previous`` closes the earlier rounds. ``carry_over`` copies the contexts of the
    previous round (the highest-numbered one) into the new round, and sends ``round_opened``
    inside the same transaction, so that the models hub puts the previous round's loop models
    in the new loop too: all of it commits or none of it.
    """
    locked = Task.objects.select_for_update().get(pk=task.pk)
    previous = locked.rounds.order_by("-number").first()
    if close_previous:
        locked.rounds.filter(is_open=True).update(is_open=False)
    new_round = Round.objects.create(
        task=locked, number=(previous.number if previous else 0) + 1, description=description
    )
    if carry_over and previous is not None:
        contexts_copy(previous, new_round)
    round_opened.send(
        sender=Round, round=new_round, previous=previous, carry_over=carry_over and bool(previous)
    )
    return new_round


def contexts_copy(source: Round, target: Round) -> int:
    """Copy the contexts of round ``source`` into round ``target``; return how many.

    A copy keeps the data, tag, metadata and config version, and starts with zeroed usage
    counters: the new round's numbers are its own, and ``source`` keeps its rows untouched.
    Rows are read and written in batches of ``CONTEXT_BATCH_SIZE``.
    """
    rows = (
        Context.objects.filter(round=source)
        .order_by("pk")
        .values_list("config_version_id", "data", "tag", "metadata")
    )
    count = 0
    batch: list[Context] = []
    for version_id, data, tag, metadata in rows.iterator(chunk_size=CONTEXT_BATCH_SIZE):
        batch.append(
            Context(
                task_id=target.task_id,
                round=target,
                config_version_id=version_id,
                data=data,
                tag=tag,
                metadata=metadata,
            )
        )
        if len(batch) >= CONTEXT_BATCH_SIZE:
            Context.objects.bulk_create(batch)
            count += len(batch)
            batch = []
    if batch:
        Context.objects.bulk_create(batch)
        count += len(batch)
    return count


# Keys of a flat JSON context line that are not context fields (unless a field has the name).
FLAT_RECORD_KEYS = ("tag", "metadata")


def _is_nested_record(config, record: dict) -> bool:
    """Tell the two forms of a JSON context line apart.

    Nested: ``{"context": {<fields>}, "tag": ..., "metadata": ...}``. Flat: the fields as
    keys, ``{"passage": "...", "tag": ...}``. A line is nested when it has a ``context`` key,
    unless ``context`` is itself a context field that holds no object (a context value is
    never an object, so ``{"context": "..."}`` is the flat form of a field named context).
    """
    if "context" not in record:
        return False
    names = {field.name for field in config.context}
    return "context" not in names or isinstance(record["context"], dict)


def _context_from_record(config, record: dict, fmt: str) -> tuple[dict, str, dict]:
    names = {field.name for field in config.context}
    if fmt == "csv":
        data = {key: value for key, value in record.items() if key in names}
        extra = {key: value for key, value in record.items() if key not in names | {"tag"}}
        metadata = parse_json_cell(record.get("metadata", "")) if "metadata" in record else {}
        if not isinstance(metadata, dict):
            metadata = {"metadata": metadata}
        for key, value in extra.items():
            if key != "metadata":
                # Unknown columns are reported like unknown JSON keys.
                data[key] = value
        return data, record.get("tag", "") or "", metadata
    if _is_nested_record(config, record):
        data = record.get("context")
        return data, record.get("tag") or "", record.get("metadata") or {}
    data = {
        key: value for key, value in record.items() if key in names or key not in FLAT_RECORD_KEYS
    }
    tag = record.get("tag") if "tag" not in names else ""
    metadata = record.get("metadata") if "metadata" not in names else {}
    return data, tag or "", metadata or {}


def contexts_import(
    task: Task,
    stream: IO,
    *,
    filename: str = "",
    fmt: str | None = None,
    round_number: int | None = None,
    tag: str = "",
) -> int:
    """Import contexts from JSON Lines or CSV: all or nothing, every bad line reported.

    A JSON line is flat (``{"passage": "...", "tag": "..."}``: the config's context fields as
    keys) or nested (``{"context": {"passage": "..."}, "tag": "..."}``); a file may mix them.
    Rows are validated against the task's current config and written in batches inside one
    transaction; the first bad line stops the writing (not the checking), and the
    transaction is rolled back, so nothing of a bad file is kept.
    """
    config = task.config
    if config is None:
        raise ServiceError("the task has no config yet", code="task.no_config")
    fmt = detect_format(filename, fmt)
    errors = UploadProblems()
    count = 0
    with transaction.atomic():
        rounds = task.rounds.all()
        round_ = (
            rounds.filter(number=round_number).first()
            if round_number is not None
            else rounds.filter(is_open=True).order_by("-number").first() or rounds.last()
        )
        if round_ is None:
            raise ServiceError(
                f"round {round_number} does not exist for task {task.code}", code="round.missing"
            )
        batch: list[Context] = []
        for line, record in capped_records(iter_records(stream, fmt), upload_max_rows()):
            if isinstance(record, UploadLineError):
                errors.append(record)
            else:
                issues = _check_context_record(config, record, fmt)
                if issues:
                    errors.extend(UploadLineError(line, *issue) for issue in issues)
                elif not errors:
                    data, row_tag, metadata = _context_from_record(config, record, fmt)
                    batch.append(
                        Context(
                            task=task,
                            round=round_,
                            config_version_id=task.current_config_id,
                            data=data,
                            tag=(tag or row_tag or "")[:100],
                            metadata=metadata,
                        )
                    )
                    count += 1
            if len(batch) >= CONTEXT_BATCH_SIZE:
                Context.objects.bulk_create(batch)
                batch = []
        if not errors and count == 0:
            errors.append(no_records_error())
        if errors:
            transaction.set_rollback(True)
        elif batch:
            Context.objects.bulk_create(batch)
    if errors:
        raise InvalidUpload(errors.summary("upload"), details=errors.details())
    return count


def _check_context_record(config, record: dict, fmt: str) -> list[tuple[str, str, str]]:
    """Return ``(code, message, path)`` for each problem of one context record."""
    problems: list[tuple[str, str, str]] = []
    nested = fmt == "jsonl" and _is_nested_record(config, record)
    names = {field.name for field in config.context}
    if nested:
        unknown = set(record) - {"context", "tag", "metadata"}
        for key in sorted(unknown):
            problems.append(("upload.E010", f"unknown key {key!r}", key))
        if not isinstance(record.get("context"), dict):
            problems.append(("upload.E011", "'context' must be an object", "context"))
            return problems
    if fmt == "jsonl":
        if "tag" not in names and not isinstance(record.get("tag"), str | type(None)):
            problems.append(("upload.E012", "'tag' must be a string", "tag"))
        if "metadata" not in names and not isinstance(record.get("metadata"), dict | type(None)):
            problems.append(("upload.E013", "'metadata' must be an object", "metadata"))
    data, _, _ = _context_from_record(config, record, fmt)
    prefix = "context." if nested else ""
    for issue in check_context(config, data):
        problems.append((issue.code, issue.message, f"{prefix}{issue.path}".rstrip(".")))
    return problems


# --- proposals ------------------------------------------------------------------------------


def proposal_submit(
    *, proposer: AbstractBaseUser, code: str, name: str, description: str, config_yaml: str = ""
) -> TaskProposal:
    if config_yaml.strip():
        _parse_or_raise(config_yaml)
    if Task.objects.filter(code=code).exists():
        raise Conflict(f"a task with code {code!r} already exists", code="task.code_taken")
    try:
        return TaskProposal.objects.create(
            proposer=proposer,
            code=code,
            name=name,
            description=description,
            config_yaml=config_yaml,
        )
    except IntegrityError:
        raise Conflict(
            f"a proposal for {code!r} is already pending", code="proposal.duplicate"
        ) from None


DEFAULT_PROPOSAL_CONFIG = """\
input:
  - name: statement
    type: string
  - name: label
    type: multiclass
    labels: [positive, negative]
    as_goal_message: true
output:
  - name: label
model_wrong_metric:
  type: exact_match
  reference_names: [label]
perf_metric:
  type: accuracy
  reference_name: label
"""


@transaction.atomic
def proposal_accept(
    proposal: TaskProposal, *, decided_by: AbstractBaseUser, reason: str = ""
) -> Task:
    """Create the proposed task, make the proposer an owner and open round 1."""
    proposal = TaskProposal.objects.select_for_update().get(pk=proposal.pk)
    if proposal.status != ProposalStatus.PENDING:
        raise Conflict(f"the proposal is already {proposal.status}", code="proposal.decided")
    task = task_create(
        code=proposal.code,
        name=proposal.name,
        description=proposal.description,
        yaml_text=proposal.config_yaml or DEFAULT_PROPOSAL_CONFIG,
        owners=[proposal.proposer],
        created_by=decided_by,
    )
    proposal.status = ProposalStatus.ACCEPTED
    proposal.reason = reason
    proposal.decided_by = decided_by
    proposal.decided_at = timezone.now()
    proposal.task = task
    proposal.save()
    # An owner works in the admin builder.
    if not proposal.proposer.is_staff:
        proposal.proposer.is_staff = True
        proposal.proposer.save(update_fields=["is_staff"])
    return task


@transaction.atomic
def proposal_reject(
    proposal: TaskProposal, *, decided_by: AbstractBaseUser, reason: str
) -> TaskProposal:
    if not reason.strip():
        raise ServiceError("a rejection needs a reason", code="proposal.reason_required")
    proposal = TaskProposal.objects.select_for_update().get(pk=proposal.pk)
    if proposal.status != ProposalStatus.PENDING:
        raise Conflict(f"the proposal is already {proposal.status}", code="proposal.decided")
    proposal.status = ProposalStatus.REJECTED
    proposal.reason = reason
    proposal.decided_by = decided_by
    proposal.decided_at = timezone.now()
    proposal.save()
    return proposal


# -- big uploads ----------------------------------------------------------------------------
UPLOAD_PROGRESS_KEY = "dynatask:upload:{}"
UPLOAD_PROGRESS_TTL = 86_400


def upload_max_rows() -> int:
    """Return the most rows an upload may have (``UPLOAD_MAX_ROWS``; 0: no cap)."""
    return int(getattr(settings, "UPLOAD_MAX_ROWS", 0) or 0)


def upload_check_size(size: int) -> None:
    """Refuse a file over ``UPLOAD_MAX_BYTES`` (``upload.too_large``, 413)."""
    limit = int(getattr(settings, "UPLOAD_MAX_BYTES", 0) or 0)
    if limit and size > limit:
        raise UploadTooLarge(
            f"the file has {size:,} bytes; an upload may have {limit:,} at most (UPLOAD_MAX_BYTES)",
            details={"size": size, "max_bytes": limit},
        )


def upload_runs_as_job(size: int) -> bool:
    """Return True when a file of ``size`` bytes is imported by a job, not in its request
    (over ``UPLOAD_INLINE_MAX_BYTES``)."""
    return size > int(getattr(settings, "UPLOAD_INLINE_MAX_BYTES", 0) or 0)


def upload_job_create(
    task: Task,
    upload,
    *,
    kind: str,
    user=None,
    options: dict[str, Any],
    job_function: Callable[[int], Any],
) -> UploadJob:
    """Store ``upload`` (an uploaded file) and queue ``job_function(upload job id)`` after
    the commit; return the ``UploadJob``. ``options`` (JSON) go to the importer."""
    upload_check_size(upload.size)
    name = PurePath(upload.name or "upload").name[-100:]
    stored = default_storage.save(f"uploads/{uuid.uuid4().hex}/{name}", upload)
    job = UploadJob.objects.create(
        task=task,
        kind=kind,
        user=user if user is not None and user.is_authenticated else None,
        filename=name,
        stored_name=stored,
        size=upload.size,
        options=options,
    )
    from tasks import jobs  # the jobs call services: imported at use

    job_id = job.pk
    transaction.on_commit(lambda: jobs.enqueue_upload(job_function, job_id))
    return job


def upload_progress_record(upload_id: int, bytes_read: int, connection=None) -> None:
    """Note in Redis that upload ``upload_id`` has read ``bytes_read`` bytes (best effort)."""
    key = UPLOAD_PROGRESS_KEY.format(upload_id)
    with contextlib.suppress(RedisError):
        connection = connection or django_rq.get_connection("default")
        connection.hset(key, mapping={"bytes": bytes_read, "at": time.time()})
        connection.expire(key, UPLOAD_PROGRESS_TTL)


def upload_job_run(
    upload_id: int, importer: Callable[[UploadJob, IO[bytes]], tuple[int, str]]
) -> dict[str, Any]:
    """Import stored upload ``upload_id`` with ``importer(upload, stream) -> (rows, url)``.

    Idempotent: an upload that is done or failed is skipped. A ``ServiceError`` of the
    importer (a bad line, a bad option) fails the upload with its code, message and line
    errors; anything else fails it as ``upload.job_failed`` and is raised again (RQ keeps
    it). The stored file is deleted once the import is over.
    """
    upload = (
        UploadJob.objects.select_related("task__current_config", "user")
        .filter(pk=upload_id)
        .first()
    )
    if upload is None or upload.status in (UploadStatus.DONE, UploadStatus.FAILED):
        return {"status": "skipped"}
    UploadJob.objects.filter(pk=upload.pk).update(
        status=UploadStatus.RUNNING, started_at=timezone.now()
    )
    connection = django_rq.get_connection("default")
    outcome: dict[str, Any]
    try:
        with default_storage.open(upload.stored_name, "rb") as handle:
            stream = ProgressReader(
                handle, lambda done: upload_progress_record(upload.pk, done, connection)
            )
            rows, url = importer(upload, stream)
    except ServiceError as error:
        errors = error.details.get("errors", []) if isinstance(error.details, dict) else []
        _upload_finish(upload, UploadStatus.FAILED, code=error.code, message=error.message)
        UploadJob.objects.filter(pk=upload.pk).update(errors=errors)
        outcome = {"status": "failed", "error_code": error.code}
    except Exception:
        _upload_finish(
            upload,
            UploadStatus.FAILED,
            code="upload.job_failed",
            message="the import stopped on an unexpected error; nothing was imported",
        )
        raise
    else:
        _upload_finish(upload, UploadStatus.DONE, rows=rows, url=url)
        outcome = {"status": "done", "rows": rows}
    logger.info("upload %s (%s) of task %s: %s", upload.pk, upload.kind, upload.task_id, outcome)
    return outcome


def _upload_finish(upload: UploadJob, status: str, *, code="", message="", rows=0, url=""):
    """Record the end of ``upload`` and delete its stored file."""
    UploadJob.objects.filter(pk=upload.pk).update(
        status=status,
        error_code=code[:64],
        error_message=message[:2000],
        rows=rows,
        result_url=url,
        finished_at=timezone.now(),
        stored_name="",
    )
    with contextlib.suppress(OSError):
        default_storage.delete(upload.stored_name)


def contexts_upload_import(upload: UploadJob, stream: IO[bytes]) -> tuple[int, str]:
    """The contexts' importer of an upload job: ``contexts_import`` with its options."""
    count = contexts_import(upload.task, stream, filename=upload.filename, **upload.options)
    return count, reverse("admin:tasks_task_change", args=[upload.task_id])


def contexts_upload(
    task: Task,
    upload,
    *,
    user=None,
    fmt: str | None = None,
    round_number: int | None = None,
    tag: str = "",
) -> int | UploadJob:
    """Import uploaded contexts now, or queue a job for a big file (see the module).

    Returns the number imported, or the ``UploadJob`` of the queued import.
    """
    upload_check_size(upload.size)
    if upload_runs_as_job(upload.size):
        from tasks import jobs

        return upload_job_create(
            task,
            upload,
            kind=UploadKind.CONTEXTS,
            user=user,
            options={"fmt": fmt, "round_number": round_number, "tag": tag},
            job_function=jobs.contexts_import_job,
        )
    return contexts_import(
        task, upload, filename=upload.name, fmt=fmt, round_number=round_number, tag=tag
    )
