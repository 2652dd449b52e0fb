"""The native ``dynatask`` batch protocol (pure: builds requests, parses bodies).

``POST <url>`` with ``{"task": <task code>, "inputs": [...]}``; the answer is
``{"outputs": [...], "model_version": "optional"}`` with one output object per input, in order.
The inputs carry the request keys of the config's ``model_input``; each output is read through
its ``model_output`` and ``cast_output`` (``base.task_outputs``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from models_hub.protocols.base import (
    EndpointSettings,
    RequestSpec,
    bad_response,
    check_outputs,
    output_error,
    task_outputs,
)
from tasks.config.types import TaskConfig


class DynataskProtocol:
    """Adapter for the native batch protocol."""

    name = "dynatask"

    def build_requests(
        self, batch_inputs: Sequence[Mapping[str, Any]], endpoint_settings: EndpointSettings
    ) -> list[RequestSpec]:
        """Return one POST carrying the whole batch."""
        body = {
            "task": endpoint_settings.task_code,
            "inputs": [dict(item) for item in batch_inputs],
        }
        return [RequestSpec("POST", endpoint_settings.url, body, tuple(range(len(batch_inputs))))]

    def parse_response(
        self,
        body: Any,
        batch_inputs: Sequence[Mapping[str, Any]],
        config: TaskConfig,
        endpoint_settings: EndpointSettings | None = None,
    ) -> list[dict[str, Any]]:
        """Return the checked ``outputs`` of the body, one per input."""
        if not isinstance(body, dict) or not isinstance(body.get("outputs"), list):
            raise bad_response('the answer is not an object with an "outputs" list', body)
        outputs = body["outputs"]
        if len(outputs) != len(batch_inputs):
            raise bad_response(
                f"the answer has {len(outputs)} outputs for {len(batch_inputs)} inputs", body
            )
        for index, output in enumerate(outputs):
            if not isinstance(output, dict):
                raise output_error("is not an object", body, index)
        version = body.get("model_version")
        if version is not None and not isinstance(version, str):
            raise bad_response('"model_version" is not a string', body)
        outputs = [task_outputs(config, output) for output in outputs]
        check_outputs(outputs, config, body, batch_inputs)
        return outputs

    def model_version(self, body: Any) -> str | None:
        """Return ``model_version`` from the body."""
        if isinstance(body, dict) and isinstance(body.get("model_version"), str):
            return body["model_version"][:200]
        return None
