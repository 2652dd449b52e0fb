"""docs/task-config.md stays true: its example parses, and it names everything the schema has.

The names come from the public types and registries (``tasks.config`` and ``tasks.metrics``),
so a key, field type or metric added to the code without a word in the reference fails here.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from tasks.config import (
    AggregationMetric,
    FieldSpec,
    FieldType,
    ModelWrongMetric,
    TaskConfig,
    TaskConfigError,
    Verdict,
    parse_task_config,
)
from tasks.config.types import DELTA_METRIC_TYPES, JOB_METRICS, SCALE_FIELD_TYPES
from tasks.metrics import METRICS
from tasks.metrics.translation import SENTENCEPIECE_MODEL_OPTION
from tests.shared_files import REPOSITORY

DOCUMENT = REPOSITORY / "docs" / "task-config.md"
EXAMPLE_HEADING = "## A complete example"
# TaskConfig attributes that are spelled differently in the YAML.
YAML_SPELLING = {
    "metadata_create": ("metadata", "create"),
    "metadata_validate": ("metadata", "validate"),
    "perf_metrics": ("perf_metric",),
    "model_maps": ("model_input", "model_output", "cast_output"),
    "verdicts": ("validation_options",),
    "creation_title": ("creation_samples_title",),
    "response_field": ("response_fields",),
    # Derived, not written: the format read, and the warnings of a loaded config.
    "source_format": (),
    "warnings": (),
}
# Keys of Dynabench's current format: the v2 section's example shows them (test_v2_docs.py).
V2_SECTION_KEYS = frozenset(
    {"model_maps", "verdicts", "creation_title", "response_field", "external_validator"}
)
MODEL_WRONG_TYPES = ("exact_match", "string_f1", "ask_user")


@pytest.fixture(scope="module")
def text():
    return DOCUMENT.read_text(encoding="utf-8")


def worked_example(text: str) -> str:
    """Return the YAML block that follows the worked example's heading."""
    section = text.split(EXAMPLE_HEADING, 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, flags=re.DOTALL)
    assert match, "the worked example has no ```yaml block"
    return match.group(1)


def test_the_worked_example_parses_and_means_what_the_doc_says(text):
    config = parse_task_config(worked_example(text))

    assert [spec.name for spec in config.target_fields] == ["stance"]
    assert config.model_input_names == ("uid", "reply", "tones", "headline", "photo")
    assert config.output_names == ("stance", "stance_scores", "confidence")
    assert [spec.name for spec in config.gold_fields] == ["stance"]
    assert [spec.name for spec in config.create_metadata_fields(True)] == ["trick"]
    assert [spec.name for spec in config.create_metadata_fields(False)] == ["expected_trick"]
    weights = [(metric.name, metric.default_weight) for metric in config.metrics()]
    assert weights == [
        ("macro_f1", 5.0),
        ("accuracy", 1.0),
        ("fairness", 1.0),
        ("robustness", 1.0),
        ("examples_per_second", 1.0),
        ("latency_p95_ms", 0.5),
        # Self-reported, and the example does not set count_self_reported.
        ("memory_utilization", 0.0),
    ]


def test_the_worked_example_uses_every_field_type_and_top_level_key(text):
    example = worked_example(text)
    config = parse_task_config(example)
    fields = config.context + config.input + config.output
    fields += config.metadata_create + config.metadata_validate

    # The rating types are shown in the v2 section's example (test_v2_docs.py).
    assert {spec.type for spec in fields} == set(FieldType) - SCALE_FIELD_TYPES
    assert {spec.validated_label_condition for spec in fields} >= {Verdict.INCORRECT}
    # ``chat`` makes a chat task, whose fooled verdict excludes this example's exact_match:
    # docs/chat.md has its worked example (tests/annotation/chat/test_documentation.py).
    # ``arena`` makes a chat task too: docs/leaderboard.md has its keys.
    for key in top_level_keys():
        if key in ("chat", "arena"):
            continue
        assert re.search(rf"^{key}:", example, flags=re.MULTILINE), key


def top_level_keys() -> list[str]:
    keys: list[str] = []
    for field in dataclasses.fields(TaskConfig):
        if field.name not in V2_SECTION_KEYS:
            keys.extend(YAML_SPELLING.get(field.name, (field.name,))[:1])
    return list(dict.fromkeys(keys))


def documented_names() -> list[str]:
    """Every key, field type, verdict, option and metric name the schema knows."""
    names: list[str] = []
    for field in dataclasses.fields(TaskConfig):
        names.extend(YAML_SPELLING.get(field.name, (field.name,)))
    names += [field.name for field in dataclasses.fields(FieldSpec) if field.name != "line"]
    names += [field.name for field in dataclasses.fields(ModelWrongMetric)] + ["reference_name"]
    names += [field.name for field in dataclasses.fields(AggregationMetric)]
    names += [member.value for member in FieldType] + [member.value for member in Verdict]
    names += list(MODEL_WRONG_TYPES) + list(METRICS) + list(DELTA_METRIC_TYPES)
    names += [name for name, _direction in JOB_METRICS] + [SENTENCEPIECE_MODEL_OPTION]
    names += ["dynascore", "train_file_metric", "dataperf_f1"]
    return list(dict.fromkeys(names))


@pytest.mark.parametrize("name", documented_names())
def test_the_reference_names_every_key_type_and_metric(text, name):
    # As code: `name` itself, or a word of a snippet such as `single_prob: true`.
    spans = re.findall(r"`([^`\n]+)`", text)
    word = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
    assert any(word.search(span) for span in spans), name


@pytest.mark.parametrize("metric_type", MODEL_WRONG_TYPES)
def test_the_documented_model_wrong_types_are_the_parsers(metric_type):
    extra = {
        "exact_match": "reference_names: [label]",
        "string_f1": "reference_name: label\n  threshold: 0.5",
        "ask_user": "",
    }[metric_type]
    config = parse_task_config(
        "input: [{name: label, type: string}]\noutput: [{name: label}]\n"
        "perf_metric: {type: exact_match, reference_name: label}\n"
        f"model_wrong_metric:\n  type: {metric_type}\n  {extra}\n"
    )
    assert config.model_wrong_metric.type == metric_type
    with pytest.raises(TaskConfigError) as caught:
        parse_task_config(
            "input: [{name: label, type: string}]\noutput: [{name: label}]\n"
            "perf_metric: {type: exact_match, reference_name: label}\n"
            "model_wrong_metric: {type: coin_flip}\n"
        )
    assert caught.value.codes == ["config.E040"]


def test_the_reference_links_the_error_catalogue(text):
    assert "(task-config-errors.md)" in text
