"""The ``openai_chat`` protocol: an OpenAI-compatible chat server as the model in the loop.

Pure: builds requests, parses bodies. One request per example goes to
``<base_url>/v1/chat/completions`` (if ``base_url`` already ends in ``/v1``, only
``/chat/completions`` is added). Options of the model registration:

- ``model`` (required): the server's model name;
- ``prompt_template``: Python ``str.format`` syntax with the model input field names, e.g.
  ``"Is this positive, negative or neutral? {statement}"``. Only plain ``{name}`` fields are
  allowed (no attribute or index access, which would let a template reach into Python
  objects); ``{{`` and ``}}`` are literal braces. ``str.format`` was chosen over Django
  templates because the adapter stays free of Django and the syntax is one most model
  builders know. Without a template the prompt lists ``name: value`` lines;
- ``system_prompt``, ``temperature``, ``max_tokens``: optional.

The reply text (``choices[0].message.content``) becomes the outputs:

- ``multiclass``: the label found first in the reply, matched case-insensitively on whole
  words (at one position the longer label wins, so ``not-hateful`` beats ``hateful``);
- ``multilabel``: every label found;
- ``string`` / ``context_string_selection``: the reply, stripped;
- ``prob`` over a multiclass field: one-hot on the parsed label (a chat reply carries no
  probabilities); ``single_prob``: 1.0.

A reply that is a JSON object holding the prediction's key (``model_output``'s, by default
the prediction field's name) gives the prediction by that key; a reply that is a raw value
of ``cast_output`` gives its label. The prompt's field names are the request keys (the
config's ``model_input``). A reply without a usable label or text is a bad response.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from models_hub.errors import ModelConfigurationError
from models_hub.protocols.base import (
    EndpointSettings,
    RequestSpec,
    bad_response,
    cast_label,
    check_outputs,
    output_error,
    require_option,
)
from tasks.config.types import FieldType, TaskConfig


def validate_prompt_template(template: str, input_names: Sequence[str]) -> list[str]:
    """Return the problems of ``template`` (empty when usable with these input names)."""
    problems: list[str] = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:
        return [f"prompt_template is not a valid format string: {error}"]
    for _literal, field_name, _format_spec, _conversion in parsed:
        if field_name is None:
            continue
        if not field_name.isidentifier():
            problems.append(f"prompt_template field {{{field_name}}} must be a plain field name")
        elif field_name not in input_names:
            problems.append(f"prompt_template field {{{field_name}}} is not a model input field")
    return problems


def render_prompt(template: str | None, example: Mapping[str, Any]) -> str:
    """Render the prompt for one example (see the module docstring)."""
    if not template:
        return "\n".join(f"{name}: {value}" for name, value in example.items() if name != "uid")
    problems = validate_prompt_template(template, list(example))
    if problems:
        raise ModelConfigurationError(problems[0])
    return template.format(**{name: str(value) for name, value in example.items()})


def chat_completions_url(base_url: str) -> str:
    """Return the chat-completions URL under ``base_url``."""
    base = base_url.rstrip("/")
    if base.endswith("/v1"):
        return base + "/chat/completions"
    return base + "/v1/chat/completions"


def find_labels(reply: str, labels: Sequence[str]) -> list[str]:
    """Return the labels found in ``reply`` as whole words, in order of first appearance."""
    found: list[tuple[int, int, str]] = []
    for label in labels:
        pattern = r"(?<!\w)" + re.escape(label) + r"(?!\w)"
        match = re.search(pattern, reply, flags=re.IGNORECASE)
        if match:
            found.append((match.start(), -len(label), label))
    return [label for _start, _length, label in sorted(found)]


def reply_object(reply: str) -> dict[str, Any] | None:
    """Return the reply as a JSON object (a ```json fence around it is allowed), or None."""
    text = reply.strip()
    if text.startswith("```"):
        text = text.strip("`").strip()
        text = text[4:].strip() if text.lower().startswith("json") else text
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def keyed_prediction(config: TaskConfig, reply: str) -> Any:
    """The prediction a reply carries by key or by cast value, else None (read as text).

    A reply that is a JSON object holding the prediction's key (``model_output``, by default
    the prediction field's own name) gives that value; a reply that is exactly a raw value of
    ``cast_output`` gives its label. Either way ``cast_output`` applies.
    """
    maps = config.model_maps
    obj = reply_object(reply)
    key = maps.answer_key(maps.prediction_field)
    if obj is not None and key in obj:
        return cast_label(config, obj[key])
    if reply.strip() in maps.cast:
        return maps.cast[reply.strip()]
    return None


class OpenAIChatProtocol:
    """Adapter for OpenAI-compatible chat-completions servers."""

    name = "openai_chat"

    def build_requests(
        self, batch_inputs: Sequence[Mapping[str, Any]], endpoint_settings: EndpointSettings
    ) -> list[RequestSpec]:
        """Return one chat-completions POST per example."""
        options = endpoint_settings.options
        model = require_option(endpoint_settings, "model")
        url = chat_completions_url(endpoint_settings.url)
        requests: list[RequestSpec] = []
        for index, example in enumerate(batch_inputs):
            messages = []
            if options.get("system_prompt"):
                messages.append({"role": "system", "content": str(options["system_prompt"])})
            prompt = render_prompt(options.get("prompt_template"), example)
            messages.append({"role": "user", "content": prompt})
            body: dict[str, Any] = {"model": model, "messages": messages}
            for name in ("temperature", "max_tokens"):
                if options.get(name) is not None:
                    body[name] = options[name]
            requests.append(RequestSpec("POST", url, body, (index,)))
        return requests

    def parse_response(
        self,
        body: Any,
        batch_inputs: Sequence[Mapping[str, Any]],
        config: TaskConfig,
        endpoint_settings: EndpointSettings | None = None,
    ) -> list[dict[str, Any]]:
        """Turn one chat completion (for one example) into that example's outputs."""
        if len(batch_inputs) != 1:
            raise ValueError("openai_chat answers one example per request")
        reply = self.reply_text(body)
        output: dict[str, Any] = {}
        parsed_labels: dict[str, str] = {}
        keyed = keyed_prediction(config, reply)
        for spec in config.output:
            if keyed is not None and spec.name == config.model_maps.prediction_field:
                output[spec.name] = keyed
                if spec.type == FieldType.MULTICLASS and isinstance(keyed, str):
                    parsed_labels[spec.name] = keyed
            elif spec.type == FieldType.MULTICLASS:
                found = find_labels(reply, spec.labels)
                if not found:
                    raise output_error(
                        f"the reply names none of the labels {', '.join(spec.labels)}",
                        body,
                        0,
                        spec.name,
                    )
                output[spec.name] = parsed_labels[spec.name] = found[0]
            elif spec.type == FieldType.MULTILABEL:
                output[spec.name] = find_labels(reply, spec.labels)
            elif spec.type in (FieldType.STRING, FieldType.CONTEXT_STRING_SELECTION):
                if not reply:
                    raise output_error("the reply is empty", body, 0, spec.name)
                output[spec.name] = reply
        for spec in config.output:
            if spec.type != FieldType.PROB:
                continue
            if spec.single_prob:
                output[spec.name] = 1.0
                continue
            reference = config.field(spec.reference_name or "")
            chosen = parsed_labels.get(spec.reference_name or "")
            if reference is None or chosen is None:
                raise ModelConfigurationError(
                    f"openai_chat cannot fill the prob output {spec.name!r}"
                )
            output[spec.name] = {label: float(label == chosen) for label in reference.labels}
        unsupported = [spec.name for spec in config.output if spec.name not in output]
        if unsupported:
            raise ModelConfigurationError(
                f"openai_chat cannot fill the outputs {', '.join(unsupported)}"
            )
        check_outputs([output], config, body, batch_inputs)
        return [output]

    @staticmethod
    def reply_text(body: Any) -> str:
        """Return ``choices[0].message.content`` stripped, or raise a bad response."""
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise bad_response("the answer has no choices[0].message.content", body)
        if not isinstance(content, str):
            raise bad_response("choices[0].message.content is not a string", body)
        return content.strip()

    def model_version(self, body: Any) -> str | None:
        """Return the ``model`` the server says answered."""
        if isinstance(body, dict) and isinstance(body.get("model"), str):
            return body["model"][:200]
        return None
