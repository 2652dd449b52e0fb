"""Export a task's (or a round's) examples as JSON Lines, in constant memory.

``example_export_lines`` walks the examples by primary key in chunks (keyset pagination:
``id > last_id ORDER BY id LIMIT n``), so each chunk is one short query and no cursor or
transaction stays open while the client downloads. Per chunk it fetches the validations,
the contexts and any unseen models in one query each, as tuples (``values_list``), never
model instances. Memory therefore depends on the chunk size, not on the number of examples.

Worker ids are never exported raw: a worker is ``HMAC-SHA256(EXPORT_WORKER_ID_SALT, kind:id)``
(truncated), so the same worker has the same id across lines and files made with the same
salt, and the id cannot be reversed without the salt.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Iterator
from functools import lru_cache
from json.encoder import encode_basestring

from django.conf import settings
from django.db.models import F, TextField
from django.db.models.functions import Cast

from annotation.models import Example, Validation
from models_hub.models import RegisteredModel
from tasks.models import Context, Round, Task, TaskConfigVersion

CHUNK_SIZE = 2000
WORKER_HASH_LENGTH = 24  # hex characters (96 bits)

# JSON columns are read as text (cast in SQL) and spliced into the line as they are: no
# json.loads and json.dumps round trip per value, which was most of the export's time.
JSON_TEXT = {
    "input_json": Cast("input", TextField()),
    "model_output_json": Cast("model_output", TextField()),
    "metadata_json": Cast("metadata", TextField()),
}
EXAMPLE_COLUMNS = (
    "id",
    "round_id",
    "context_id",
    "config_version_id",
    "user_id",
    "campaign_worker_id",
    "input_json",
    "asked_label",
    "goal_label",
    "status",
    "model_id",
    "model_version",
    "model_output_json",
    "model_latency_ms",
    "model_error_code",
    "model_wrong",
    "verdict_source",
    "metadata_json",
    "retracted",
    "flag_count",
    "validation_state",
    "settled_by_owner",
    "correct_count",
    "incorrect_count",
    "flagged_count",
    "time_spent_ms",
    "created_at",
)
MODEL_ID_COLUMN = EXAMPLE_COLUMNS.index("model_id")
VALIDATION_COLUMNS = (
    "example_id",
    "label",
    "metadata_json",
    "is_owner_verdict",
    "user_id",
    "campaign_worker_id",
    "created_at",
)
LITERAL = {None: "null", True: "true", False: "false"}


def _number(value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "null"
    return repr(value)


def _string(value) -> str:
    return "null" if value is None else encode_basestring(value)


def _in_ids(queryset, column: str, ids):
    """Filter ``queryset`` on ``column IN ids``."""
    return queryset.filter(**{f"{column}__in": list(ids)})


def _datetime_json(value) -> str:
    if isinstance(value, str):
        return value
    return '"' + value.isoformat() + '"'


def _salt() -> bytes:
    return (getattr(settings, "EXPORT_WORKER_ID_SALT", "") or settings.SECRET_KEY).encode()


@lru_cache(maxsize=4096)
def _hash_with(salt: bytes, key: str) -> str:
    return hmac.new(salt, key.encode(), hashlib.sha256).hexdigest()[:WORKER_HASH_LENGTH]


def anonymous_worker_id(user_id: int | None, campaign_worker_id: int | None) -> str | None:
    """Return the salted hash that stands for a worker in exports (None if no worker)."""
    if user_id is not None:
        return _hash_with(_salt(), f"user:{user_id}")
    if campaign_worker_id is not None:
        return _hash_with(_salt(), f"campaign_worker:{campaign_worker_id}")
    return None


def example_export_count(task: Task, round: Round | None = None) -> int:
    examples = Example.objects.filter(task=task)
    if round is not None:
        examples = examples.filter(round=round)
    return examples.count()


def example_export_lines(
    task: Task,
    round: Round | None = None,
    *,
    chunk_size: int = CHUNK_SIZE,
) -> Iterator[str]:
    """Yield one JSON line (ending in a newline) per example of ``task`` (or ``round``).

    Each line holds the context, the input, the model (id, name, version) and its answer,
    the verdict, the metadata, the validations, anonymised worker ids and the config
    version. Oldest example first. At most four queries per chunk of ``chunk_size``.
    """
    encoder = _ExampleEncoder(task)
    examples = _example_rows(task, round)
    last_id = 0
    while True:
        rows = list(examples.filter(id__gt=last_id)[:chunk_size])
        if not rows:
            return
        last_id = rows[-1][0]
        validations = encoder.validations_of([row[0] for row in rows])
        contexts = encoder.contexts_of(rows)
        encoder.learn_model_names(rows)
        for row in rows:
            yield encoder.example_line(row, contexts, validations)
        if len(rows) < chunk_size:
            return


def _example_rows(task: Task, round: Round | None):
    """Return the examples of ``task`` (or ``round``) by id, as ``EXAMPLE_COLUMNS`` tuples."""
    examples = Example.objects.filter(task=task)
    if round is not None:
        examples = examples.filter(round=round)
    return (
        examples.order_by("id")
        .annotate(**JSON_TEXT, created_json=F("created_at"))
        .values_list(*EXAMPLE_COLUMNS[:-1], "created_json")
    )


class _ExampleEncoder:
    """Encode the examples of one task as JSON text, with what the lines share.

    It knows the task's rounds, config versions and (as chunks come) model names, and
    encodes each of the few distinct values (labels, states, versions) once.
    """

    def __init__(self, task: Task) -> None:
        self.salt = _salt()
        self.task_json = _string(task.code)
        self.round_numbers = dict(Round.objects.filter(task=task).values_list("id", "number"))
        self.config_versions = dict(
            TaskConfigVersion.objects.filter(task=task).values_list("id", "version")
        )
        self.model_names: dict[int, str] = {}
        self.strings: dict = {}

    def string(self, value) -> str:
        encoded = self.strings.get(value)
        if encoded is None:
            encoded = _string(value)
            if len(self.strings) < 10_000:
                self.strings[value] = encoded
        return encoded

    def worker(self, user_id, campaign_worker_id) -> str:
        if user_id is not None:
            return '"' + _hash_with(self.salt, f"user:{user_id}") + '"'
        if campaign_worker_id is not None:
            return '"' + _hash_with(self.salt, f"campaign_worker:{campaign_worker_id}") + '"'
        return "null"

    def validations_of(self, example_ids: list[int]) -> dict[int, list[str]]:
        """Return the JSON of each example's validations: one query (index-backed)."""
        validations_of = (
            Validation.objects.order_by("example_id", "id")
            .annotate(metadata_json=Cast("metadata", TextField()), created_json=F("created_at"))
            .values_list(*VALIDATION_COLUMNS[:-1], "created_json")
        )
        string, worker = self.string, self.worker
        validations: dict[int, list[str]] = {}
        for (
            example_id,
            label,
            metadata_json,
            is_owner_verdict,
            user_id,
            campaign_worker_id,
            created_at,
        ) in _in_ids(validations_of, "example_id", example_ids):
            validations.setdefault(example_id, []).append(
                f'{{"label":{string(label)},"metadata":{metadata_json or "{}"},'
                f'"owner_verdict":{LITERAL[is_owner_verdict]},'
                f'"worker":{worker(user_id, campaign_worker_id)},'
                f'"created_at":{_datetime_json(created_at)}}}'
            )
        return validations

    def contexts_of(self, rows: list[tuple]) -> dict[int, str]:
        """Return the JSON of the contexts of ``rows`` by id: one query, none without any."""
        context_ids = {row[2] for row in rows if row[2] is not None}
        if not context_ids:
            return {}
        return {
            context_id: (
                f'{{"id":{context_id},"data":{data_json},"tag":{_string(tag)},'
                f'"metadata":{metadata_json or "{}"}}}'
            )
            for context_id, data_json, tag, metadata_json in _in_ids(
                Context.objects.order_by(), "id", context_ids
            ).values_list("id", Cast("data", TextField()), "tag", Cast("metadata", TextField()))
        }

    def learn_model_names(self, rows: list[tuple]) -> None:
        """Fetch the names of the models of ``rows`` not met yet: one query, none if none."""
        unseen_models = {
            row[MODEL_ID_COLUMN] for row in rows if row[MODEL_ID_COLUMN] is not None
        } - self.model_names.keys()
        if unseen_models:
            self.model_names.update(
                (model_id, _string(name))
                for model_id, name in RegisteredModel.objects.filter(
                    id__in=unseen_models
                ).values_list("id", "name")
            )

    def example_line(
        self, row: tuple, contexts: dict[int, str], validations: dict[int, list[str]]
    ) -> str:
        """Return the JSON line of one ``EXAMPLE_COLUMNS`` row."""
        (
            example_id,
            round_id,
            context_id,
            config_version_id,
            user_id,
            campaign_worker_id,
            input_json,
            asked_label,
            goal_label,
            status,
            model_id,
            model_version,
            model_output_json,
            model_latency_ms,
            model_error_code,
            model_wrong,
            verdict_source,
            metadata_json,
            retracted,
            flag_count,
            validation_state,
            settled_by_owner,
            correct_count,
            incorrect_count,
            flagged_count,
            time_spent_ms,
            created_at,
        ) = row
        string = self.string
        return (
            f'{{"id":{example_id},"task":{self.task_json},'
            f'"round":{_number(self.round_numbers.get(round_id))},'
            f'"config_version":{_number(self.config_versions.get(config_version_id))},'
            f'"context":{contexts.get(context_id, "null")},'
            f'"input":{input_json},"asked_label":{string(asked_label)},'
            f'"goal_label":{string(goal_label)},'
            f'"status":{string(status)},'
            f'"model":{{"id":{_number(model_id)},'
            f'"name":{self.model_names.get(model_id, "null")},'
            f'"version":{string(model_version)},'
            f'"output":{model_output_json or "null"},'
            f'"latency_ms":{_number(model_latency_ms)},'
            f'"error_code":{string(model_error_code)}}},'
            f'"verdict":{{"model_wrong":{LITERAL[model_wrong]},'
            f'"source":{string(verdict_source)}}},'
            f'"metadata":{metadata_json or "{}"},'
            f'"validation":{{"state":{string(validation_state)},'
            f'"settled_by_owner":{LITERAL[settled_by_owner]},'
            f'"correct":{correct_count},"incorrect":{incorrect_count},'
            f'"flagged":{flagged_count}}},'
            f'"validations":[{",".join(validations.get(example_id, ()))}],'
            f'"worker":{self.worker(user_id, campaign_worker_id)},'
            f'"retracted":{LITERAL[retracted]},"flag_count":{flag_count},'
            f'"time_spent_ms":{_number(time_spent_ms)},'
            f'"created_at":{_datetime_json(created_at)}}}\n'
        )


def batched_lines(lines: Iterator[str], size: int = 256) -> Iterator[str]:
    """Join ``size`` lines per item, so a streamed response writes fewer, larger chunks."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= size:
            yield "".join(batch)
            batch.clear()
    if batch:
        yield "".join(batch)
