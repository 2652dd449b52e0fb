"""The model client that evaluation jobs call (tests and benchmarks may swap it).

Production uses ``models_hub.client``'s default client (the system resolver) with
``EVAL_RETRY``: evaluation can wait, so it retries more and backs off longer than a live
call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from models_hub import client as model_client
from models_hub.transport import RetryPolicy

EVAL_RETRY = RetryPolicy(max_attempts=4, backoff_seconds=0.5, backoff_max_seconds=5.0)

_client_override: model_client.ModelClient | None = None
_retry_override: RetryPolicy | None = None


def use_client(client: model_client.ModelClient | None, retry: RetryPolicy | None = None) -> None:
    """Set the client and retry policy evaluation jobs use (None restores the defaults)."""
    global _client_override, _retry_override
    _client_override = client
    _retry_override = retry


def predict(
    endpoint,
    config,
    task_code: str,
    inputs: Sequence[Mapping[str, Any]],
    *,
    deadline: float | None = None,
):
    """Call ``endpoint`` on one batch with the evaluation's client and retry policy.

    ``deadline`` (a ``time.monotonic()`` value) bounds every request of the batch, attempts,
    backoffs and trickled bodies included (``RetryPolicy.deadline_at``).
    """
    retry = _retry_override or EVAL_RETRY
    if deadline is not None:
        retry = dataclasses.replace(retry, deadline_at=deadline)
    if _client_override is not None:
        return _client_override.predict(endpoint, config, task_code, inputs, retry=retry)
    return model_client.predict(endpoint, config, task_code, inputs, retry=retry)


def health(endpoint):
    """Probe ``endpoint`` with the evaluation's client."""
    if _client_override is not None:
        return _client_override.health(endpoint)
    return model_client.health(endpoint)
