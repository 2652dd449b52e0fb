"""Valid configs: the Dynabench examples load unchanged and answer the right questions."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from tasks.config import (
    Direction,
    FieldType,
    TaskConfig,
    TaskConfigError,
    Verdict,
    parse_task_config,
)
from tests.tasks.config.samples import SUPPORTED_DYNABENCH_TASKS, dynabench_text


@pytest.mark.parametrize("task", SUPPORTED_DYNABENCH_TASKS)
def test_dynabench_config_loads_unchanged(task):
    config = parse_task_config(dynabench_text(task))

    assert isinstance(config, TaskConfig)
    assert config.schema_version == 1
    assert config.aggregation_metric.type == "dynascore"
    assert config.perf_metrics
    # Every field knows the line it was defined on.
    for spec in config.context + config.input + config.output:
        assert spec.line is not None and spec.line > 0


def test_dataperf_is_rejected_as_not_supported():
    with pytest.raises(TaskConfigError) as caught:
        parse_task_config(dynabench_text("dataperf_image_labelling"))

    found = {(issue.code, issue.path, issue.line) for issue in caught.value.issues}
    assert found == {
        ("config.E016", "perf_metric.type", 23),
        ("config.E016", "train_file_metric", 24),
    }


def test_nli_fields(load_dynabench):
    config = load_dynabench("nli")

    assert config.model_input_names == ("uid", "hypothesis", "context")
    assert [spec.name for spec in config.target_fields] == ["label"]
    assert [spec.name for spec in config.worker_input_fields] == ["hypothesis"]
    assert config.output_names == ("label", "prob")
    assert config.goal_field is not None and config.goal_field.name == "label"
    assert config.goal_field.labels == ("entailed", "neutral", "contradictory")
    assert config.model_wrong_metric.type == "exact_match"
    assert config.model_wrong_metric.reference_names == ("label",)
    assert config.delta_metrics == ("fairness", "robustness")
    assert config.field("context").type == FieldType.STRING
    assert config.field("context").placeholder == "Enter context..."
    assert config.field("nope") is None


def test_abbreviated_output_takes_the_input_definition(load_dynabench):
    config = load_dynabench("nli")
    label_output, prob_output = config.output

    assert label_output == config.field("label")  # equality ignores the line
    assert label_output.type == FieldType.MULTICLASS
    assert label_output.labels == ("entailed", "neutral", "contradictory")
    assert label_output.line == 66  # the output entry's own line
    assert prob_output.type == FieldType.PROB
    assert prob_output.reference_name == "label"
    assert not prob_output.single_prob


def test_qa_selection_string_f1_and_single_prob(load_dynabench):
    config = load_dynabench("qa")

    assert config.model_input_names == ("uid", "question", "context")
    answer = config.output[0]
    assert answer.name == "answer"
    assert answer.type == FieldType.CONTEXT_STRING_SELECTION
    assert answer.reference_name == "context"
    confidence = config.output[1]
    assert confidence.type == FieldType.PROB and confidence.single_prob
    assert confidence.reference_name is None
    assert config.model_wrong_metric.type == "string_f1"
    assert config.model_wrong_metric.reference_names == ("answer",)
    assert config.model_wrong_metric.threshold == pytest.approx(0.4)
    assert config.goal_message.startswith("enter a question")
    assert config.goal_field is None
    assert [spec.name for spec in config.gold_fields] == ["answer"]


def test_vqa_has_no_target_and_a_full_output_definition(load_dynabench):
    config = load_dynabench("vqa")

    assert config.model_input_names == ("uid", "question", "image")
    assert config.target_fields == ()
    assert config.context[0].type == FieldType.IMAGE
    assert config.context[0].display_name == "image"
    answer = config.output[0]
    assert answer.type == FieldType.STRING and answer.placeholder == "Enter answer..."
    assert config.model_wrong_metric.type == "ask_user"
    assert config.perf_metrics[0].type == "vqa_accuracy"
    assert config.delta_metrics == ()
    assert [spec.name for spec in config.gold_fields] == ["answer"]


def test_flores_sp_bleu_is_accepted(load_dynabench):
    config = load_dynabench("flores")

    assert config.model_input_names == ("uid", "sourceText", "sourceLanguage", "targetLanguage")
    assert [spec.name for spec in config.target_fields] == ["translatedText"]
    assert config.main_perf_metric.type == "sp_bleu"
    assert config.main_perf_metric.name == "sp_bleu"
    assert config.metadata_create == () and config.metadata_validate == ()


def test_hs_content_warning_and_macro_f1(load_dynabench):
    config = load_dynabench("hs")

    assert config.content_warning.startswith("This is sensitive content!")
    assert config.main_perf_metric.type == "macro_f1"
    assert config.goal_field.labels == ("not-hateful", "hateful")


def test_sentiment_corrected_label_slip_is_still_valid(load_dynabench):
    config = load_dynabench("sentiment")

    corrected = config.validate_metadata_fields(Verdict.INCORRECT)[0]
    assert corrected.name == "corrected_label"
    assert corrected.labels == ("negative", "positive", "entailed")


def test_create_metadata_conditions(load_dynabench):
    config = load_dynabench("nli")

    assert [spec.name for spec in config.create_metadata_fields(True)] == [
        "example_explanation",
        "model_explanation_wrong",
    ]
    assert [spec.name for spec in config.create_metadata_fields(False)] == [
        "example_explanation",
        "model_explanation_right",
    ]
    assert [spec.name for spec in config.create_metadata_fields(None)] == ["example_explanation"]
    wrong = config.metadata_create[2]
    assert wrong.model_wrong_condition is True and wrong.display_name == "model explanation"


def test_validate_metadata_conditions(load_dynabench):
    config = load_dynabench("qa")

    assert [spec.name for spec in config.validate_metadata_fields("incorrect")] == [
        "corrected_answer",
        "target_explanation",
        "validator_model_explanation",
    ]
    assert [spec.name for spec in config.validate_metadata_fields(Verdict.FLAGGED)] == [
        "flag_reason",
        "validator_model_explanation",
    ]
    assert [spec.name for spec in config.validate_metadata_fields("correct")] == [
        "validator_example_explanation",
        "validator_model_explanation",
    ]
    assert config.metadata_validate[0].type == FieldType.CONTEXT_STRING_SELECTION
    assert config.metadata_validate[0].validated_label_condition == Verdict.INCORRECT


def test_metrics_directions_and_default_weights(load_dynabench):
    metrics = load_dynabench("nli").metrics()

    summary = [(m.name, m.kind, m.direction, m.default_weight, m.is_main) for m in metrics]
    assert summary == [
        ("accuracy", "perf", Direction.HIGHER, 4.0, True),
        ("fairness", "delta", Direction.HIGHER, 1.0, False),
        ("robustness", "delta", Direction.HIGHER, 1.0, False),
        ("examples_per_second", "job", Direction.HIGHER, 1.0, False),
        ("latency_p95_ms", "job", Direction.LOWER, 1.0, False),
        ("memory_utilization", "job", Direction.LOWER, 1.0, False),
    ]


EXTENDED = textwrap.dedent(
    """\
    schema_version: 1
    instructions: |
      # Write a tricky premise
      Keep it short.
    context:
    - name: passage
      type: string
      display_name: Passage
    input:
    - name: question
      type: string
      max_length: 300
      multiline: true
      help_text: Ask something the passage answers.
    - name: label
      type: multiclass
      labels: &labels [yes_answer, no_answer]
      optional: false
    - name: topics
      type: multilabel
      labels: [sports, politics]
      optional: true
    - name: photo
      type: image
      optional: true
    output:
    - name: label
    - name: topics
    - name: prob
      type: prob
      reference_name: label
    - name: summary
      type: string
    metadata:
      validate:
      - name: corrected
        type: multiclass
        labels: *labels
        validated_label_condition: incorrect
    model_wrong_metric:
      type: exact_match
      reference_names: [label, topics]
    perf_metric:
    - type: accuracy
      reference_name: label
    - type: accuracy
      reference_name: topics
    - type: sp_bleu
      reference_name: summary
      spm_model: flores200
      tokenize: [a, b]
    - type: chrf
      reference_name: summary
    delta_metrics:
    - type: robustness
    aggregation_metric:
      type: dynascore
      default_weights:
        accuracy_label: 5
        chrf: 0
        latency_p95_ms: 2.5
        robustness: 3
    """
)


def test_extensions_multiple_perf_metrics_and_weight_overrides():
    config = parse_task_config(EXTENDED)

    assert config.instructions.startswith("# Write a tricky premise")
    question = config.field("question")
    assert question.max_length == 300 and question.multiline
    assert question.help_text == "Ask something the passage answers."
    assert config.field("passage").display_name == "Passage"
    assert config.field("topics").optional and config.field("photo").optional
    # The alias reuses the labels list.
    assert config.metadata_validate[0].labels == ("yes_answer", "no_answer")
    assert [metric.name for metric in config.perf_metrics] == [
        "accuracy_label",
        "accuracy_topics",
        "sp_bleu",
        "chrf",
    ]
    assert dict(config.perf_metrics[2].options) == {
        "spm_model": "flores200",
        "tokenize": ("a", "b"),
    }
    assert config.model_wrong_metric.reference_names == ("label", "topics")
    weights = {metric.name: metric.default_weight for metric in config.metrics()}
    assert weights == {
        "accuracy_label": 5.0,
        "accuracy_topics": 1.0,
        "sp_bleu": 1.0,
        "chrf": 0.0,
        "robustness": 3.0,
        "examples_per_second": 1.0,
        "latency_p95_ms": 2.5,
        "memory_utilization": 1.0,
    }
    assert [metric.name for metric in config.metrics() if metric.is_main] == ["accuracy_label"]
    assert [spec.name for spec in config.gold_fields] == ["label", "topics", "summary"]


def test_config_is_immutable():
    config = parse_task_config(EXTENDED)

    with pytest.raises(dataclasses.FrozenInstanceError):
        config.goal_message = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.input[0].name = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.aggregation_metric.default_weights["chrf"] = 5  # type: ignore[index]
    with pytest.raises(TypeError):
        config.perf_metrics[2].options["spm_model"] = "other"  # type: ignore[index]
    assert isinstance(config.input, tuple) and isinstance(config.input[1].labels, tuple)


def test_null_optional_keys_mean_not_given():
    config = parse_task_config(
        textwrap.dedent(
            """\
            context:
            goal_message:
            input:
            - name: text
              type: string
              placeholder:
            output:
            - name: text
            perf_metric: {type: bleu, reference_name: text}
            """
        )
    )

    assert config.context == () and config.goal_message == ""
    assert config.input[0].placeholder == ""
    assert config.model_wrong_metric.type == "ask_user"


def test_output_may_reuse_a_context_field():
    config = parse_task_config(
        textwrap.dedent(
            """\
            context:
            - {name: source, type: string}
            input:
            - {name: text, type: string}
            output:
            - {name: source}
            perf_metric: {type: exact_match, reference_name: source}
            """
        )
    )

    assert config.output[0].type == FieldType.STRING
    assert config.target_fields == ()
