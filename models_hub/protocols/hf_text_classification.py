"""The ``hf_text_classification`` protocol: Hugging Face Inference, TEI or ``pipeline`` servers.

Pure: builds requests, parses bodies. ``POST <url>`` with ``{"inputs": "<text>"}`` for one
example, or ``{"inputs": ["<text>", ...]}`` for a batch (option ``batch: false`` sends one
request per example instead). The text is the model input field named by the option
``text_field``, by default the first model input field after ``uid`` (for the Dynabench
sentiment and hate-speech configs: ``statement``).

The reply is ``[{"label", "score"}, ...]`` for one text (``[[...]]`` is accepted too, as the
Inference API sends it) or a list of such lists for a batch. The option ``label_map`` maps
the model's labels to the task's labels (``{"LABEL_0": "negative", ...}``); without it a
model label that equals a task label case-insensitively is taken as is. Model labels not in
the map are ignored; scores of model labels mapped to the same task label are added; the
scores are renormalised over the task labels, so the ``prob`` output sums to 1 even when the
server returns only its top-k labels. The multiclass output is the most probable task label.
The config's ``model_output`` may name another key than ``label`` for the item's label, and
its ``cast_output`` maps model labels to task labels when there is no ``label_map``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from models_hub.errors import ModelConfigurationError
from models_hub.protocols.base import (
    EndpointSettings,
    RequestSpec,
    bad_response,
    cast_label,
    check_outputs,
    multiclass_output,
    output_error,
)
from tasks.config.types import FieldType, TaskConfig


def text_of(example: Mapping[str, Any], endpoint_settings: EndpointSettings) -> str:
    """Return the text of one example to classify."""
    name = endpoint_settings.options.get("text_field")
    if not name:
        names = [key for key in example if key != "uid"]
        if not names:
            raise ModelConfigurationError("the example has no text field to classify")
        name = names[0]
    if name not in example:
        raise ModelConfigurationError(f"the example has no text field {name!r}")
    return str(example[name])


def is_score_list(value: Any, key: str = "label") -> bool:
    """Return True for ``[{"label": ..., "score": ...}, ...]`` (or one such dict).

    ``key`` is the item's key that holds the label (``model_output`` may name another).
    """
    if isinstance(value, dict):
        return key in value and "score" in value
    return isinstance(value, list) and all(
        isinstance(item, dict) and key in item and "score" in item for item in value
    )


def label_key(config: TaskConfig) -> str:
    """The key of a score item holding the label: ``model_output``'s, else ``label``."""
    maps = config.model_maps
    return maps.answer_keys.get(maps.prediction_field, "label")


class HFTextClassificationProtocol:
    """Adapter for Hugging Face-style text-classification servers."""

    name = "hf_text_classification"

    def build_requests(
        self, batch_inputs: Sequence[Mapping[str, Any]], endpoint_settings: EndpointSettings
    ) -> list[RequestSpec]:
        """Return one POST for the batch, or one per example with ``batch: false``."""
        texts = [text_of(example, endpoint_settings) for example in batch_inputs]
        url = endpoint_settings.url
        if len(texts) == 1:
            return [RequestSpec("POST", url, {"inputs": texts[0]}, (0,))]
        if endpoint_settings.options.get("batch", True) is False:
            return [
                RequestSpec("POST", url, {"inputs": text}, (index,))
                for index, text in enumerate(texts)
            ]
        return [RequestSpec("POST", url, {"inputs": texts}, tuple(range(len(texts))))]

    def parse_response(
        self,
        body: Any,
        batch_inputs: Sequence[Mapping[str, Any]],
        config: TaskConfig,
        endpoint_settings: EndpointSettings | None = None,
    ) -> list[dict[str, Any]]:
        """Map the scores of each text to the task's label and prob outputs."""
        label_field = multiclass_output(config)
        if label_field is None:
            raise ModelConfigurationError("hf_text_classification needs a multiclass output")
        options = endpoint_settings.options if endpoint_settings else {}
        label_map = {
            str(key): str(value) for key, value in (options.get("label_map") or {}).items()
        }
        unknown_targets = sorted(set(label_map.values()) - set(label_field.labels))
        if unknown_targets:
            raise ModelConfigurationError(
                f"label_map maps to labels the task does not have: {', '.join(unknown_targets)}"
            )
        key = label_key(config)
        per_example = self.split_scores(body, len(batch_inputs), key)
        outputs = [
            self.output_for(scores, index, label_field.labels, label_map, config, body)
            for index, scores in enumerate(per_example)
        ]
        check_outputs(outputs, config, body, batch_inputs)
        return outputs

    @staticmethod
    def split_scores(body: Any, count: int, key: str = "label") -> list[list[dict[str, Any]]]:
        """Return one list of ``{key, "score"}`` per text, or raise a bad response."""
        if count == 1 and is_score_list(body, key):
            return [[body] if isinstance(body, dict) else body]
        if not isinstance(body, list) or not all(is_score_list(item, key) for item in body):
            raise bad_response(f'the answer is not a list of {{"{key}", "score"}} lists', body)
        if len(body) != count:
            raise bad_response(f"the answer has {len(body)} results for {count} inputs", body)
        return [[item] if isinstance(item, dict) else item for item in body]

    @staticmethod
    def output_for(
        scores: list[dict[str, Any]],
        index: int,
        labels: Sequence[str],
        label_map: Mapping[str, str],
        config: TaskConfig,
        body: Any,
    ) -> dict[str, Any]:
        """Build one example's outputs from its model scores."""
        by_lower = {label.lower(): label for label in labels}
        totals = dict.fromkeys(labels, 0.0)
        mapped_any = False
        key = label_key(config)
        for item in scores:
            model_label, score = str(item[key]), item["score"]
            if isinstance(score, bool) or not isinstance(score, int | float) or not score >= 0:
                raise output_error(f"score {score!r} is not a probability", body, index)
            cast = str(cast_label(config, item[key]))
            task_label = label_map.get(model_label) if label_map else by_lower.get(cast.lower())
            if task_label is None:
                continue
            totals[task_label] += float(score)
            mapped_any = True
        total = sum(totals.values())
        if not mapped_any or total <= 0:
            model_labels = ", ".join(str(item[key]) for item in scores[:5])
            raise output_error(f"no model label maps to a task label ({model_labels})", body, index)
        probabilities = {label: value / total for label, value in totals.items()}
        chosen = max(labels, key=lambda label: probabilities[label])
        output: dict[str, Any] = {}
        for spec in config.output:
            if spec.type == FieldType.MULTICLASS:
                output[spec.name] = chosen
            elif spec.type == FieldType.PROB and spec.single_prob:
                output[spec.name] = probabilities[chosen]
            elif spec.type == FieldType.PROB:
                output[spec.name] = probabilities
            else:
                raise ModelConfigurationError(
                    f"hf_text_classification cannot fill the output {spec.name!r}"
                )
        return output

    def model_version(self, body: Any) -> str | None:
        """Return None: these servers do not declare a version in the body."""
        return None
