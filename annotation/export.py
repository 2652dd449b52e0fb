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
import json
from collections.abc import Iterator
from functools import lru_cache

from django.conf import settings

from annotation.models import Example, Validation
from models_hub.models import Model
from tasks.models import Context, Round, Task, TaskConfigVersion

CHUNK_SIZE = 2000
WORKER_HASH_LENGTH = 24  # hex characters (96 bits)

EXAMPLE_COLUMNS = (
    "id",
    "round_id",
    "context_id",
    "config_version_id",
    "user_id",
    "campaign_worker_id",
    "input",
    "goal_label",
    "status",
    "model_id",
    "model_version",
    "model_output",
    "model_latency_ms",
    "model_error_code",
    "model_wrong",
    "verdict_source",
    "metadata",
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
VALIDATION_COLUMNS = (
    "example_id",
    "label",
    "metadata",
    "is_owner_verdict",
    "user_id",
    "campaign_worker_id",
    "created_at",
)


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
    salt = _salt()
    task_code = task.code
    round_numbers = dict(Round.objects.filter(task=task).values_list("id", "number"))
    config_versions = dict(TaskConfigVersion.objects.filter(task=task).values_list("id", "version"))
    model_names: dict[int, str] = {}

    def worker(user_id, campaign_worker_id):
        if user_id is not None:
            return _hash_with(salt, f"user:{user_id}")
        if campaign_worker_id is not None:
            return _hash_with(salt, f"campaign_worker:{campaign_worker_id}")
        return None

    examples = Example.objects.filter(task=task)
    if round is not None:
        examples = examples.filter(round=round)
    examples = examples.order_by("id").values_list(*EXAMPLE_COLUMNS)
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    last_id = 0
    while True:
        rows = list(examples.filter(id__gt=last_id)[:chunk_size])
        if not rows:
            return
        last_id = rows[-1][0]
        ids = [row[0] for row in rows]

        validations: dict[int, list] = {}
        for (
            example_id,
            label,
            metadata,
            is_owner_verdict,
            user_id,
            campaign_worker_id,
            created_at,
        ) in (
            Validation.objects.filter(example_id__in=ids)
            .order_by("example_id", "id")
            .values_list(*VALIDATION_COLUMNS)
        ):
            validations.setdefault(example_id, []).append(
                {
                    "label": label,
                    "metadata": metadata,
                    "owner_verdict": is_owner_verdict,
                    "worker": worker(user_id, campaign_worker_id),
                    "created_at": created_at.isoformat(),
                }
            )

        context_ids = {row[2] for row in rows if row[2] is not None}
        contexts = {
            context_id: {"id": context_id, "data": data, "tag": tag, "metadata": metadata}
            for context_id, data, tag, metadata in Context.objects.filter(
                id__in=context_ids
            ).values_list("id", "data", "tag", "metadata")
        }

        unseen_models = {row[9] for row in rows if row[9] is not None} - model_names.keys()
        if unseen_models:
            model_names.update(Model.objects.filter(id__in=unseen_models).values_list("id", "name"))

        for (
            example_id,
            round_id,
            context_id,
            config_version_id,
            user_id,
            campaign_worker_id,
            input_,
            goal_label,
            status,
            model_id,
            model_version,
            model_output,
            model_latency_ms,
            model_error_code,
            model_wrong,
            verdict_source,
            metadata,
            retracted,
            flag_count,
            validation_state,
            settled_by_owner,
            correct_count,
            incorrect_count,
            flagged_count,
            time_spent_ms,
            created_at,
        ) in rows:
            yield (
                dumps(
                    {
                        "id": example_id,
                        "task": task_code,
                        "round": round_numbers.get(round_id),
                        "config_version": config_versions.get(config_version_id),
                        "context": contexts.get(context_id),
                        "input": input_,
                        "goal_label": goal_label,
                        "status": status,
                        "model": {
                            "id": model_id,
                            "name": model_names.get(model_id),
                            "version": model_version,
                            "output": model_output,
                            "latency_ms": model_latency_ms,
                            "error_code": model_error_code,
                        },
                        "verdict": {"model_wrong": model_wrong, "source": verdict_source},
                        "metadata": metadata,
                        "validation": {
                            "state": validation_state,
                            "settled_by_owner": settled_by_owner,
                            "correct": correct_count,
                            "incorrect": incorrect_count,
                            "flagged": flagged_count,
                        },
                        "validations": validations.get(example_id, []),
                        "worker": worker(user_id, campaign_worker_id),
                        "retracted": retracted,
                        "flag_count": flag_count,
                        "time_spent_ms": time_spent_ms,
                        "created_at": created_at.isoformat(),
                    }
                )
                + "\n"
            )
        if len(rows) < chunk_size:
            return
