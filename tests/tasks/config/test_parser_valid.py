"""Valid configs: our fixtures and the Dynabench examples load and answer the right questions.

Each test runs on one of our fixtures (always) and on the Dynabench config it stands for
(skipped when ../shared is absent), with the expected answers of each.
"""

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
from tests.tasks.config.samples import (
    OWN,
    dynabench,
    own,
    param,
    samples,
    source_params,
    supported_params,
)


@pytest.mark.parametrize("sample", supported_params())
def test_config_loads_unchanged(sample):
    config = sample.parse()

    assert isinstance(config, TaskConfig)
    assert config.schema_version == 1
    assert config.aggregation_metric.type == "dynascore"
    assert config.perf_metrics
    # Every field knows the line it was defined on.
    for spec in config.context + config.input + config.output:
        assert spec.line is not None and spec.line > 0


@pytest.mark.parametrize(
    ("sample", "lines"),
    [
        param(own("training_file_track"), (19, 21)),
        param(dynabench("dataperf_image_labelling"), (23, 24)),
    ],
)
def test_a_training_file_track_is_rejected_as_not_supported(sample, lines):
    with pytest.raises(TaskConfigError) as caught:
        sample.parse()

    found = {(issue.code, issue.path, issue.line) for issue in caught.value.issues}
    assert found == {
        ("config.E016", "perf_metric.type", lines[0]),
        ("config.E016", "train_file_metric", lines[1]),
    }


@pytest.mark.parametrize("source", source_params())
def test_every_source_has_a_rejected_sample(source):
    assert [sample.name for sample in samples(source, rejected=True)]
    assert len(samples(source)) >= (5 if source == OWN else 6)


@pytest.mark.parametrize(
    ("sample", "names"),
    [
        param(
            own("claim_check"),
            {
                "context": "passage",
                "text": "claim",
                "goal": "verdict",
                "labels": ("supported", "refuted", "unverifiable"),
                "prob": "verdict_probs",
                "placeholder": "Paste a passage of a few sentences...",
            },
        ),
        param(
            dynabench("nli"),
            {
                "context": "context",
                "text": "hypothesis",
                "goal": "label",
                "labels": ("entailed", "neutral", "contradictory"),
                "prob": "prob",
                "placeholder": "Enter context...",
            },
        ),
    ],
)
def test_classification_fields(sample, names):
    config = sample.parse()

    assert config.model_input_names == ("uid", names["text"], names["context"])
    assert [spec.name for spec in config.target_fields] == [names["goal"]]
    assert [spec.name for spec in config.worker_input_fields] == [names["text"]]
    assert config.output_names == (names["goal"], names["prob"])
    assert config.goal_field is not None and config.goal_field.name == names["goal"]
    assert config.goal_field.labels == names["labels"]
    assert config.model_wrong_metric.type == "exact_match"
    assert config.model_wrong_metric.reference_names == (names["goal"],)
    assert config.delta_metrics == ("fairness", "robustness")
    assert config.field(names["context"]).type == FieldType.STRING
    assert config.field(names["context"]).placeholder == names["placeholder"]
    assert config.field("nope") is None


@pytest.mark.parametrize(
    ("sample", "labels", "line"),
    [
        param(own("claim_check"), ("supported", "refuted", "unverifiable"), 20),
        param(dynabench("nli"), ("entailed", "neutral", "contradictory"), 66),
    ],
)
def test_abbreviated_output_takes_the_input_definition(sample, labels, line):
    config = sample.parse()
    label_output, prob_output = config.output

    assert label_output == config.field(label_output.name)  # equality ignores the line
    assert label_output.type == FieldType.MULTICLASS
    assert label_output.labels == labels
    assert label_output.line == line  # the output entry's own line
    assert prob_output.type == FieldType.PROB
    assert prob_output.reference_name == label_output.name
    assert not prob_output.single_prob


@pytest.mark.parametrize(
    ("sample", "names", "threshold", "goal_message"),
    [
        param(
            own("span_answer"),
            {
                "question": "query",
                "context": "article",
                "answer": "span",
                "confidence": "confidence",
            },
            0.5,
            "Ask about the article",
        ),
        param(
            dynabench("qa"),
            {
                "question": "question",
                "context": "context",
                "answer": "answer",
                "confidence": "conf",
            },
            0.4,
            "enter a question",
        ),
    ],
)
def test_selection_string_f1_and_single_prob(sample, names, threshold, goal_message):
    config = sample.parse()

    assert config.model_input_names == ("uid", names["question"], names["context"])
    answer = config.output[0]
    assert answer.name == names["answer"]
    assert answer.type == FieldType.CONTEXT_STRING_SELECTION
    assert answer.reference_name == names["context"]
    confidence = config.output[1]
    assert confidence.name == names["confidence"]
    assert confidence.type == FieldType.PROB and confidence.single_prob
    assert confidence.reference_name is None
    assert config.model_wrong_metric.type == "string_f1"
    assert config.model_wrong_metric.reference_names == (names["answer"],)
    assert config.model_wrong_metric.threshold == pytest.approx(threshold)
    assert config.goal_message.startswith(goal_message)
    assert config.goal_field is None
    assert [spec.name for spec in config.gold_fields] == [names["answer"]]


@pytest.mark.parametrize(
    ("sample", "names", "placeholder"),
    [
        param(
            own("picture_question"),
            {
                "question": "question",
                "image": "picture",
                "display": "the picture",
                "answer": "reply",
            },
            "The model's reply...",
        ),
        param(
            dynabench("vqa"),
            {"question": "question", "image": "image", "display": "image", "answer": "answer"},
            "Enter answer...",
        ),
    ],
)
def test_image_context_without_target_and_a_full_output_definition(sample, names, placeholder):
    config = sample.parse()

    assert config.model_input_names == ("uid", names["question"], names["image"])
    assert config.target_fields == ()
    assert config.context[0].type == FieldType.IMAGE
    assert config.context[0].display_name == names["display"]
    answer = config.output[0]
    assert answer.name == names["answer"]
    assert answer.type == FieldType.STRING and answer.placeholder == placeholder
    assert config.model_wrong_metric.type == "ask_user"
    assert config.perf_metrics[0].type == "vqa_accuracy"
    assert config.delta_metrics == ()
    assert [spec.name for spec in config.gold_fields] == [names["answer"]]
    yes_no = config.validate_metadata_fields(Verdict.INCORRECT)[0]
    assert yes_no.type == FieldType.MULTICLASS and yes_no.labels == ("yes", "no")


@pytest.mark.parametrize(
    ("sample", "model_inputs", "target"),
    [
        param(
            own("translation"),
            ("uid", "sourceSentence", "fromLanguage", "toLanguage"),
            "targetSentence",
        ),
        param(
            dynabench("flores"),
            ("uid", "sourceText", "sourceLanguage", "targetLanguage"),
            "translatedText",
        ),
    ],
)
def test_translation_sp_bleu_is_accepted(sample, model_inputs, target):
    config = sample.parse()

    assert config.model_input_names == model_inputs
    assert [spec.name for spec in config.target_fields] == [target]
    assert config.main_perf_metric.type == "sp_bleu"
    assert config.main_perf_metric.name == "sp_bleu"
    assert config.model_wrong_metric.type == "ask_user"
    assert config.metadata_create == () and config.metadata_validate == ()


@pytest.mark.parametrize(
    ("sample", "warning", "labels"),
    [
        param(own("toxicity"), "Some posts in this task are abusive.", ("acceptable", "abusive")),
        param(dynabench("hs"), "This is sensitive content!", ("not-hateful", "hateful")),
    ],
)
def test_content_warning_and_macro_f1(sample, warning, labels):
    config = sample.parse()

    assert config.content_warning.startswith(warning)
    assert config.main_perf_metric.type == "macro_f1"
    assert config.goal_field.labels == labels


def test_multilabel_target_and_optional_image_input():
    config = own("toxicity").parse()

    harm_kinds = config.field("harm_kinds")
    assert harm_kinds.type == FieldType.MULTILABEL
    assert harm_kinds.labels == ("insult", "threat", "slur")
    assert [spec.name for spec in config.target_fields] == ["rating", "harm_kinds"]
    screenshot = config.field("screenshot")
    assert screenshot.type == FieldType.IMAGE and screenshot.optional
    assert config.model_input_names == ("uid", "post", "screenshot", "thread_topic")
    assert config.model_wrong_metric.reference_names == ("rating", "harm_kinds")
    assert [metric.name for metric in config.perf_metrics] == ["macro_f1", "accuracy"]
    assert config.delta_metrics == ("robustness", "fairness")


@pytest.mark.parametrize(
    ("sample", "name", "labels"),
    [
        param(own("claim_check"), "better_verdict", ("supported", "refuted", "not_enough_info")),
        param(dynabench("sentiment"), "corrected_label", ("negative", "positive", "entailed")),
    ],
)
def test_corrected_labels_may_differ_from_the_input_labels(sample, name, labels):
    config = sample.parse()

    corrected = config.validate_metadata_fields(Verdict.INCORRECT)[0]
    assert corrected.name == name
    assert corrected.labels == labels
    assert corrected.labels != config.goal_field.labels


@pytest.mark.parametrize(
    ("sample", "always", "if_fooled", "if_not_fooled", "display_name"),
    [
        param(
            own("claim_check"),
            "why_it_holds",
            "why_it_missed",
            "why_expected_a_miss",
            "about the model",
        ),
        param(
            dynabench("nli"),
            "example_explanation",
            "model_explanation_wrong",
            "model_explanation_right",
            "model explanation",
        ),
    ],
)
def test_create_metadata_conditions(sample, always, if_fooled, if_not_fooled, display_name):
    config = sample.parse()

    assert [spec.name for spec in config.create_metadata_fields(True)] == [always, if_fooled]
    assert [spec.name for spec in config.create_metadata_fields(False)] == [always, if_not_fooled]
    assert [spec.name for spec in config.create_metadata_fields(None)] == [always]
    wrong = config.metadata_create[2]
    assert wrong.model_wrong_condition is True and wrong.display_name == display_name


@pytest.mark.parametrize(
    ("sample", "names"),
    [
        param(
            own("span_answer"),
            ["better_span", "fix_reason", "flag_note", "agreement_note", "trick_guess"],
        ),
        param(
            dynabench("qa"),
            [
                "corrected_answer",
                "target_explanation",
                "flag_reason",
                "validator_example_explanation",
                "validator_model_explanation",
            ],
        ),
    ],
)
def test_validate_metadata_conditions(sample, names):
    config = sample.parse()
    corrected, explanation, flag, agreement, always = names

    assert [spec.name for spec in config.validate_metadata_fields("incorrect")] == [
        corrected,
        explanation,
        always,
    ]
    assert [spec.name for spec in config.validate_metadata_fields(Verdict.FLAGGED)] == [
        flag,
        always,
    ]
    assert [spec.name for spec in config.validate_metadata_fields("correct")] == [
        agreement,
        always,
    ]
    assert config.metadata_validate[0].type == FieldType.CONTEXT_STRING_SELECTION
    assert config.metadata_validate[0].validated_label_condition == Verdict.INCORRECT


@pytest.mark.parametrize("sample", [param(own("claim_check")), param(dynabench("nli"))])
def test_metrics_directions_and_default_weights(sample):
    metrics = sample.parse().metrics()

    summary = [(m.name, m.kind, m.direction, m.default_weight, m.is_main) for m in metrics]
    assert summary == [
        ("accuracy", "perf", Direction.HIGHER, 4.0, True),
        ("fairness", "delta", Direction.HIGHER, 1.0, False),
        ("robustness", "delta", Direction.HIGHER, 1.0, False),
        ("examples_per_second", "job", Direction.HIGHER, 1.0, False),
        ("latency_p95_ms", "job", Direction.LOWER, 1.0, False),
        # Self-reported by the endpoint: 0 unless the task owner counts such figures.
        ("memory_utilization", "job", Direction.LOWER, 0.0, False),
    ]
    assert [m.name for m in metrics if m.self_reported] == ["memory_utilization"]


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
      count_self_reported: true
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
        "memory_utilization": 1.0,  # count_self_reported: true
    }
    assert config.aggregation_metric.count_self_reported is True
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
