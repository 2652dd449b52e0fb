"""Writes of the tasks app: tasks, config versions, rounds, contexts and proposals.

A big contexts upload is queued as an upload job (``tasks.upload_jobs``); its importer is
``contexts_upload_import`` here and its job ``tasks.jobs.contexts_import_job``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import IO

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.urls import reverse
from django.utils import timezone

from core.errors import Conflict, InvalidConfig, InvalidUpload, ServiceError
from core.upload_streams import capped_records
from core.uploads import (
    UploadLineError,
    UploadProblems,
    detect_format,
    iter_records,
    no_records_error,
    parse_json_cell,
)
from tasks.config import TaskConfigError, parse_task_config
from tasks.config.values import check_context
from tasks.models import (
    Context,
    ProposalStatus,
    Round,
    Task,
    TaskConfigVersion,
    TaskProposal,
    UploadJob,
    UploadKind,
)
from tasks.signals import round_opened, task_config_changed
from tasks.upload_jobs import (
    upload_check_size,
    upload_job_create,
    upload_max_rows,
    upload_runs_as_job,
)

logger = logging.getLogger(__name__)

CONTEXT_BATCH_SIZE = 1000
# Enqueued by its dotted path: the job module imports this one, never the reverse.
CONTEXTS_IMPORT_JOB = "tasks.jobs.contexts_import_job"


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


def _contexts_round(task: Task, round_number: int | None) -> Round:
    """Return the round that imported contexts go to: the one named, else the newest open
    round, else the last one."""
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
    return round_


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
        round_ = _contexts_round(task, round_number)
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
        return upload_job_create(
            task,
            upload,
            kind=UploadKind.CONTEXTS,
            user=user,
            options={"fmt": fmt, "round_number": round_number, "tag": tag},
            job_path=CONTEXTS_IMPORT_JOB,
        )
    return contexts_import(
        task, upload, filename=upload.name, fmt=fmt, round_number=round_number, tag=tag
    )
