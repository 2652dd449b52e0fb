"""Shared pieces of the protocol adapters (pure: no DB, no HTTP).

An adapter turns a batch of model inputs into ``RequestSpec`` objects (``build_requests``) and
one response body back into one output dict per input (``parse_response``). It never sends
anything; ``models_hub.client`` does. Every parsed output is checked against the task config's
output fields with ``tasks.config.values.check_model_output``; a failed check is a
``ModelBadResponse`` that names the example index and the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from models_hub.errors import ModelBadResponse, ModelConfigurationError
from tasks.config.types import FieldType, TaskConfig
from tasks.config.values import check_model_output


@dataclass(frozen=True)
class EndpointSettings:
    """What an adapter needs to know about an endpoint: its URL, task code and options."""

    url: str
    task_code: str = ""
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class RequestSpec:
    """One HTTP request to send: which examples of the batch it covers, and its JSON body."""

    method: str
    url: str
    json_body: Any
    example_indexes: tuple[int, ...]


class ModelProtocol(Protocol):
    """The interface of a protocol adapter."""

    name: str

    def build_requests(
        self, batch_inputs: Sequence[Mapping[str, Any]], endpoint_settings: EndpointSettings
    ) -> list[RequestSpec]:
        """Return the requests that together cover every input of the batch, in order."""

    def parse_response(
        self,
        body: Any,
        batch_inputs: Sequence[Mapping[str, Any]],
        config: TaskConfig,
        endpoint_settings: EndpointSettings | None = None,
    ) -> list[dict[str, Any]]:
        """Return one checked output dict per input of ``batch_inputs`` (one request's share)."""

    def model_version(self, body: Any) -> str | None:
        """Return the model version a response body declares, if any."""


def body_excerpt(body: Any) -> str:
    """Serialise a parsed body back to text for an error excerpt."""
    try:
        return json.dumps(body, ensure_ascii=False)[:2000]
    except (TypeError, ValueError):
        return repr(body)[:2000]


def bad_response(message: str, body: Any) -> ModelBadResponse:
    """Build a ``ModelBadResponse`` quoting the offending body."""
    return ModelBadResponse(message, excerpt=body_excerpt(body))


def describe_output(index: int, field_name: str | None, detail: str, uid: Any = None) -> str:
    """Return ``output 3 (uid 'a7') field 'prob': <detail>``."""
    where = f" (uid {uid!r})" if uid is not None else ""
    field_part = f" field {field_name!r}" if field_name else ""
    return f"output {index}{where}{field_part}: {detail}"


def output_error(
    detail: str, body: Any, index: int, field_name: str | None = None
) -> ModelBadResponse:
    """Build a bad response about one output; ``index`` is within the parsed request.

    ``example_index``, ``field_name`` and ``detail`` stay on the error so that the client can
    re-base the index onto the whole call (``rebase_output_error``).
    """
    error = bad_response(describe_output(index, field_name, detail), body)
    error.example_index = index  # type: ignore[attr-defined]
    error.field_name = field_name  # type: ignore[attr-defined]
    error.detail = detail  # type: ignore[attr-defined]
    return error


def rebase_output_error(
    error: ModelBadResponse, global_index: int, uid: Any = None
) -> ModelBadResponse:
    """Return ``error`` with its output index replaced by the index in the whole call."""
    detail = getattr(error, "detail", None)
    if detail is None:
        return error
    rebased = ModelBadResponse(
        describe_output(global_index, getattr(error, "field_name", None), detail, uid),
        status=error.status,
    )
    rebased.excerpt = error.excerpt
    rebased.example_index = global_index  # type: ignore[attr-defined]
    return rebased


def model_inputs(config: TaskConfig, inputs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Project examples onto ``config.model_input_names`` (targets and extras are never sent),
    each field under its request key (the config's ``model_input`` renames; see
    ``config.model_request_names``).

    A missing ``uid`` becomes the example's index. A missing field is left out rather than
    refused: inputs were validated against the config when the example or dataset was saved
    (``tasks.config.values``), and a live call must not fail on, say, a task without contexts.
    """
    names = config.model_input_names[1:]
    maps = config.model_maps
    projected: list[dict[str, Any]] = []
    for index, example in enumerate(inputs):
        item: dict[str, Any] = {"uid": str(example.get("uid", index))}
        item.update({maps.request_key(name): example[name] for name in names if name in example})
        projected.append(item)
    return projected


def cast_label(config: TaskConfig, raw: Any) -> Any:
    """Return the task label that a raw prediction stands for (``cast_output``), else ``raw``."""
    cast = config.model_maps.cast
    if not cast or isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return raw
    return cast.get(str(raw), raw)


def task_outputs(config: TaskConfig, answer: Mapping[str, Any]) -> dict[str, Any]:
    """Turn one model answer, keyed as the model writes it, into the task's outputs.

    ``model_output`` names the answer's key that carries the prediction field (the answer's
    other keys stay, as extras); ``cast_output`` turns raw predictions into labels, in the
    prediction and in the keys of a prob output over it.
    """
    maps = config.model_maps
    output = dict(answer)
    for name, key in maps.answer_keys.items():
        if key in answer:
            output[name] = answer[key]
    prediction = maps.prediction_field
    if not maps.cast or prediction not in output:
        return output
    output[prediction] = cast_label(config, output[prediction])
    for spec in config.output:
        value = output.get(spec.name)
        if (
            spec.type == FieldType.PROB
            and spec.reference_name == prediction
            and isinstance(value, Mapping)
        ):
            output[spec.name] = {cast_label(config, key): share for key, share in value.items()}
    return output


def check_outputs(
    outputs: Sequence[Mapping[str, Any]],
    config: TaskConfig,
    body: Any,
    batch_inputs: Sequence[Mapping[str, Any]],
) -> None:
    """Raise ``ModelBadResponse`` for the first output that does not fit the config.

    The message names the output's index within ``batch_inputs`` and the field; the client
    re-bases the index onto the whole call.
    """
    for index, output in enumerate(outputs):
        issues = check_model_output(config, output)
        if issues:
            issue = issues[0]
            raise output_error(f"{issue.message} [{issue.code}]", body, index, issue.path or None)


def multiclass_output(config: TaskConfig):
    """Return the first multiclass output field of the config, or None."""
    for spec in config.output:
        if spec.type == FieldType.MULTICLASS:
            return spec
    return None


def require_option(endpoint_settings: EndpointSettings, name: str) -> Any:
    """Return a required option or raise ``ModelConfigurationError``."""
    value = endpoint_settings.options.get(name)
    if value in (None, ""):
        raise ModelConfigurationError(f"the model registration needs the option {name!r}")
    return value
