"""Invalid configs: each problem gets its stable code, its path and its line."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import pytest

from tasks.config import TaskConfigError, parse_task_config
from tasks.config.codes import CATALOGUE
from tests.tasks.config.samples import dynabench, own, param

# A small valid config; each case changes one thing. Line numbers are noted on the right.
BASE = textwrap.dedent(
    """\
    context:
    - name: context
      type: string
    input:
    - name: hypothesis
      type: string
    - name: label
      type: multiclass
      labels: [entailed, neutral, contradictory]
    output:
    - name: label
    - name: prob
      type: prob
      reference_name: label
    perf_metric:
      type: accuracy
      reference_name: label
    """
)
# 1 context / 2 - name: context / 3 type / 4 input / 5 - name: hypothesis / 6 type /
# 7 - name: label / 8 type / 9 labels / 10 output / 11 - name: label / 12 - name: prob /
# 13 type: prob / 14 reference_name / 15 perf_metric / 16 type / 17 reference_name


def test_base_is_valid():
    assert parse_task_config(BASE).output_names == ("label", "prob")


def changed(old: str, new: str) -> str:
    """Return BASE with one exact piece of text replaced."""
    assert old in BASE, old
    return BASE.replace(old, new, 1)


def added(text: str) -> str:
    """Return BASE with top-level YAML appended (from line 18)."""
    return BASE + textwrap.dedent(text)


SELECTION_INPUT = "- name: answer\n  type: context_string_selection\n  reference_name: {}\n"


@dataclass(frozen=True)
class Case:
    """One invalid config: the only issue expected, with its path and line when meaningful."""

    id: str
    text: str
    code: str
    path: str | None = None
    line: int | None = None
    column: int | None = None


CASES = [
    # -- YAML itself ----------------------------------------------------------------------
    Case(
        "yaml-unclosed-flow-list",
        changed("[entailed, neutral, contradictory]", "[entailed"),
        "config.E001",
        "",
        10,
        7,
    ),
    Case(
        "yaml-bad-indentation",
        changed("  type: string\ninput:", "   type: string\ninput:"),
        "config.E001",
        "",
        3,
        8,
    ),
    Case("yaml-tab", changed("  type: multiclass", "\ttype: multiclass"), "config.E001", "", 8),
    Case("yaml-two-documents", BASE + "---\nfoo: 1\n", "config.E001", "", 18),
    Case(
        "yaml-control-character", changed("hypothesis", "hypo\x07thesis"), "config.E001", "", 5, 13
    ),
    Case("empty-document", "# nothing here\n", "config.E004"),
    Case("top-level-list", "- input\n- output\n", "config.E010", "", 1),
    Case("top-level-scalar", "just text\n", "config.E010", "", 1),
    Case(
        "duplicate-yaml-key",
        added("perf_metric:\n  type: macro_f1\n  reference_name: label\n"),
        "config.E005",
        "perf_metric",
        18,
    ),
    Case(
        "duplicate-key-in-field",
        changed("  type: string\ninput:", "  type: string\n  name: other\ninput:"),
        "config.E005",
        "context[0].name",
        4,
    ),
    Case("non-string-key", added("1: one\n"), "config.E006", "", 18),
    Case(
        "boolean-key",
        changed("  type: string\ninput:", "  type: string\n  yes: 1\ninput:"),
        "config.E006",
        "context[0]",
        4,
    ),
    Case(
        "python-tag",
        added("goal_message: !!python/name:os.system ''\n"),
        "config.E007",
        "goal_message",
        18,
    ),
    Case(
        "custom-tag-on-list",
        added("delta_metrics: !fancy [{type: fairness}]\n"),
        "config.E007",
        "delta_metrics",
        18,
    ),
    Case(
        "merge-key",
        added("aggregation_metric:\n  <<: {type: dynascore}\n"),
        "config.E007",
        "aggregation_metric",
        19,
    ),
    Case(
        "unreadable-int", added("schema_version: !!int one\n"), "config.E008", "schema_version", 18
    ),
    Case("unreadable-date", added("goal_message: 2021-13-45\n"), "config.E008", "goal_message", 18),
    Case("too-large", BASE + "# " + "x" * 200_001 + "\n", "config.E002"),
    # -- top level --------------------------------------------------------------------------
    Case("unknown-top-level-key", added("colour: red\n"), "config.E011", "colour", 18),
    Case(
        "missing-input",
        "output:\n- {name: text, type: string}\nperf_metric: {type: bleu, reference_name: text}\n",
        "config.E012",
        "input",
        1,
    ),
    Case(
        "missing-output",
        changed(
            "output:\n- name: label\n- name: prob\n  type: prob\n  reference_name: label\n", ""
        ),
        "config.E012",
        "output",
        1,
    ),
    Case(
        "empty-input",
        "input: []\noutput:\n- {name: text, type: string}\n"
        "perf_metric: {type: bleu, reference_name: text}\n",
        "config.E013",
        "input",
        1,
    ),
    Case(
        "empty-output",
        changed(
            "output:\n- name: label\n- name: prob\n  type: prob\n  reference_name: label\n",
            "output: []\n",
        ),
        "config.E013",
        "output",
        10,
    ),
    Case(
        "input-is-a-mapping",
        "input:\n  name: text\n  type: string\noutput:\n- {name: text, type: string}\n"
        "perf_metric: {type: bleu, reference_name: text}\n",
        "config.E010",
        "input",
        2,
    ),
    Case("schema-version-2", added("schema_version: 2\n"), "config.E014", "schema_version", 18),
    Case(
        "schema-version-string", added("schema_version: '1'\n"), "config.E010", "schema_version", 18
    ),
    Case("goal-message-list", added("goal_message: [a, b]\n"), "config.E010", "goal_message", 18),
    Case("instructions-number", added("instructions: 12\n"), "config.E010", "instructions", 18),
    Case(
        "train-file-metric",
        added("train_file_metric: {type: dataperf}\n"),
        "config.E016",
        "train_file_metric",
        18,
    ),
    # -- field objects ------------------------------------------------------------------------
    Case(
        "unknown-field-key",
        changed("  type: string\ninput:", "  type: string\n  colour: red\ninput:"),
        "config.E020",
        "context[0].colour",
        4,
    ),
    Case(
        "labels-on-string",
        changed(
            "- name: hypothesis\n  type: string\n",
            "- name: hypothesis\n  type: string\n  labels: [a]\n",
        ),
        "config.E021",
        "input[0].labels",
        7,
    ),
    Case(
        "as-goal-message-on-string",
        changed(
            "- name: hypothesis\n  type: string\n",
            "- name: hypothesis\n  type: string\n  as_goal_message: true\n",
        ),
        "config.E021",
        "input[0].as_goal_message",
        7,
    ),
    Case(
        "as-goal-message-in-context",
        changed(
            "- name: context\n  type: string\n",
            "- name: context\n  type: multiclass\n  labels: [a]\n  as_goal_message: true\n",
        ),
        "config.E022",
        "context[0].as_goal_message",
        5,
    ),
    Case(
        "model-wrong-condition-in-input",
        changed(
            "- name: hypothesis\n  type: string\n",
            "- name: hypothesis\n  type: string\n  model_wrong_condition: true\n",
        ),
        "config.E022",
        "input[0].model_wrong_condition",
        7,
    ),
    Case(
        "validated-condition-in-create",
        added(
            "metadata:\n  create:\n  - name: why\n"
            "    type: string\n    validated_label_condition: correct\n"
        ),
        "config.E022",
        "metadata.create[0].validated_label_condition",
        22,
    ),
    Case(
        "model-wrong-condition-in-validate",
        added(
            "metadata:\n  validate:\n  - name: why\n"
            "    type: string\n    model_wrong_condition: true\n"
        ),
        "config.E022",
        "metadata.validate[0].model_wrong_condition",
        22,
    ),
    Case(
        "bad-validated-condition",
        added(
            "metadata:\n  validate:\n  - name: why\n"
            "    type: string\n    validated_label_condition: wrong\n"
        ),
        "config.E015",
        "metadata.validate[0].validated_label_condition",
        22,
    ),
    Case(
        "model-wrong-condition-not-bool",
        added(
            "metadata:\n  create:\n  - name: why\n"
            "    type: string\n    model_wrong_condition: 'yes'\n"
        ),
        "config.E010",
        "metadata.create[0].model_wrong_condition",
        22,
    ),
    Case(
        "name-starts-with-digit",
        changed("- name: hypothesis", "- name: 1hypothesis"),
        "config.E023",
        "input[0].name",
        5,
    ),
    Case(
        "name-with-dash",
        changed("- name: context\n", "- name: my-context\n"),
        "config.E023",
        "context[0].name",
        2,
    ),
    Case(
        "name-is-integer",
        changed("- name: hypothesis", "- name: 12"),
        "config.E010",
        "input[0].name",
        5,
    ),
    Case(
        "name-missing",
        changed("- name: hypothesis\n  type: string\n", "- type: string\n"),
        "config.E012",
        "input[0].name",
        5,
    ),
    Case(
        "type-missing",
        changed("- name: hypothesis\n  type: string\n", "- name: hypothesis\n"),
        "config.E012",
        "input[0].type",
        5,
    ),
    Case(
        "unknown-type",
        changed("- name: hypothesis\n  type: string\n", "- name: hypothesis\n  type: text\n"),
        "config.E025",
        "input[0].type",
        6,
    ),
    Case(
        "field-is-a-string",
        changed("- name: hypothesis\n  type: string\n", "- hypothesis\n"),
        "config.E010",
        "input[0]",
        5,
    ),
    Case(
        "duplicate-name-across-sections",
        changed("- name: context\n", "- name: hypothesis\n"),
        "config.E024",
        "input[0].name",
        5,
    ),
    Case(
        "full-output-redefines-input",
        changed("output:\n- name: label\n", "output:\n- name: label\n  type: string\n"),
        "config.E024",
        "output[0].name",
        11,
    ),
    Case(
        "duplicate-output-entry",
        changed("- name: prob\n", "- name: label\n- name: prob\n"),
        "config.E024",
        "output[1].name",
        12,
    ),
    Case(
        "duplicate-metadata-name",
        added(
            "metadata:\n  create:\n  - {name: why, type: string}\n"
            "  validate:\n  - {name: why, type: string}\n"
        ),
        "config.E024",
        "metadata.validate[0].name",
        22,
    ),
    Case(
        "prob-in-input",
        changed(
            "- name: hypothesis\n  type: string\n",
            "- name: hypothesis\n  type: prob\n  single_prob: true\n",
        ),
        "config.E026",
        "input[0].type",
        6,
    ),
    Case(
        "selection-in-context",
        changed(
            "- name: context\n  type: string\n",
            "- name: context\n  type: context_string_selection\n  reference_name: context\n",
        ),
        "config.E026",
        "context[0].type",
        3,
    ),
    Case(
        "labels-missing",
        changed("  labels: [entailed, neutral, contradictory]\n", ""),
        "config.E012",
        "input[1].labels",
        7,
    ),
    Case(
        "labels-empty",
        changed("[entailed, neutral, contradictory]", "[]"),
        "config.E013",
        "input[1].labels",
        9,
    ),
    Case(
        "labels-duplicate",
        changed("[entailed, neutral, contradictory]", "[entailed, neutral, entailed]"),
        "config.E028",
        "input[1].labels[2]",
        9,
    ),
    Case(
        "labels-unquoted-yes",
        changed("[entailed, neutral, contradictory]", "[entailed, on]"),
        "config.E010",
        "input[1].labels[1]",
        9,
    ),
    Case(
        "labels-a-string",
        changed("[entailed, neutral, contradictory]", "entailed"),
        "config.E010",
        "input[1].labels",
        9,
    ),
    Case(
        "max-length-zero",
        changed(
            "- name: hypothesis\n  type: string\n",
            "- name: hypothesis\n  type: string\n  max_length: 0\n",
        ),
        "config.E029",
        "input[0].max_length",
        7,
    ),
    Case(
        "max-length-text",
        changed(
            "- name: hypothesis\n  type: string\n",
            "- name: hypothesis\n  type: string\n  max_length: long\n",
        ),
        "config.E010",
        "input[0].max_length",
        7,
    ),
    Case(
        "multiline-quoted-yes",
        changed(
            "- name: hypothesis\n  type: string\n",
            "- name: hypothesis\n  type: string\n  multiline: 'yes'\n",
        ),
        "config.E010",
        "input[0].multiline",
        7,
    ),
    Case(
        "optional-number",
        changed(
            "- name: hypothesis\n  type: string\n",
            "- name: hypothesis\n  type: string\n  optional: 1\n",
        ),
        "config.E010",
        "input[0].optional",
        7,
    ),
    Case(
        "selection-dangling-reference",
        changed("- name: hypothesis\n  type: string\n", SELECTION_INPUT.format("passage")),
        "config.E030",
        "input[0].reference_name",
        7,
    ),
    Case(
        "selection-references-input",
        changed(
            "- name: hypothesis\n  type: string\n",
            "- name: hypothesis\n  type: string\n" + SELECTION_INPUT.format("hypothesis"),
        ),
        "config.E031",
        "input[1].reference_name",
        9,
    ),
    Case(
        "selection-references-image",
        changed("- name: context\n  type: string\n", "- name: context\n  type: image\n").replace(
            "- name: hypothesis\n  type: string\n", SELECTION_INPUT.format("context")
        ),
        "config.E031",
        "input[0].reference_name",
        7,
    ),
    Case(
        "selection-missing-reference",
        changed(
            "- name: hypothesis\n  type: string\n",
            "- name: answer\n  type: context_string_selection\n",
        ),
        "config.E012",
        "input[0].reference_name",
        5,
    ),
    Case(
        "prob-references-string",
        changed(
            "  reference_name: label\nperf_metric", "  reference_name: hypothesis\nperf_metric"
        ),
        "config.E031",
        "output[1].reference_name",
        14,
    ),
    Case(
        "prob-dangling-reference",
        changed("  reference_name: label\nperf_metric", "  reference_name: nothing\nperf_metric"),
        "config.E030",
        "output[1].reference_name",
        14,
    ),
    Case(
        "prob-without-reference",
        changed("  reference_name: label\nperf_metric", "perf_metric"),
        "config.E012",
        "output[1].reference_name",
        12,
    ),
    Case(
        "abbreviated-output-undefined",
        changed("- name: prob\n  type: prob\n  reference_name: label\n", "- name: prob\n"),
        "config.E032",
        "output[1]",
        12,
    ),
    Case(
        "abbreviated-output-extra-keys",
        changed("output:\n- name: label\n", "output:\n- name: label\n  placeholder: x\n"),
        "config.E033",
        "output[0].placeholder",
        12,
    ),
    Case(
        "two-goal-fields",
        changed(
            "- name: hypothesis\n  type: string\n",
            "- name: hypothesis\n  type: multiclass\n  labels: [a]\n  as_goal_message: true\n",
        ).replace(
            "  labels: [entailed, neutral, contradictory]\n",
            "  labels: [entailed, neutral, contradictory]\n  as_goal_message: true\n",
        ),
        "config.E034",
        "input[1].as_goal_message",
        9,
    ),
    Case(
        "metadata-unknown-section",
        added("metadata:\n  edit: []\n"),
        "config.E020",
        "metadata.edit",
        19,
    ),
    Case("metadata-is-a-list", added("metadata: []\n"), "config.E010", "metadata", 18),
    # -- model_wrong_metric ----------------------------------------------------------------
    Case(
        "string-f1-without-threshold",
        added("model_wrong_metric:\n  type: string_f1\n  reference_name: label\n"),
        "config.E012",
        "model_wrong_metric.threshold",
        19,
    ),
    Case(
        "threshold-above-one",
        added(
            "model_wrong_metric:\n  type: string_f1\n  reference_name: label\n  threshold: 1.5\n"
        ),
        "config.E044",
        "model_wrong_metric.threshold",
        21,
    ),
    Case(
        "threshold-negative",
        added(
            "model_wrong_metric:\n  type: string_f1\n  reference_name: label\n  threshold: -0.1\n"
        ),
        "config.E044",
        "model_wrong_metric.threshold",
        21,
    ),
    Case(
        "threshold-text",
        added(
            "model_wrong_metric:\n  type: string_f1\n  reference_name: label\n  threshold: high\n"
        ),
        "config.E010",
        "model_wrong_metric.threshold",
        21,
    ),
    Case(
        "threshold-nan",
        added(
            "model_wrong_metric:\n  type: string_f1\n  reference_name: label\n  threshold: .nan\n"
        ),
        "config.E010",
        "model_wrong_metric.threshold",
        21,
    ),
    Case(
        "string-f1-not-target",
        added(
            "model_wrong_metric:\n  type: string_f1\n"
            "  reference_name: hypothesis\n  threshold: 0.5\n"
        ),
        "config.E042",
        "model_wrong_metric.reference_name",
        20,
    ),
    Case(
        "exact-match-not-target",
        added("model_wrong_metric:\n  type: exact_match\n  reference_names: [label, prob]\n"),
        "config.E042",
        "model_wrong_metric.reference_names[1]",
        20,
    ),
    Case(
        "exact-match-empty",
        added("model_wrong_metric:\n  type: exact_match\n  reference_names: []\n"),
        "config.E013",
        "model_wrong_metric.reference_names",
        20,
    ),
    Case(
        "exact-match-missing-names",
        added("model_wrong_metric:\n  type: exact_match\n"),
        "config.E012",
        "model_wrong_metric.reference_names",
        19,
    ),
    Case(
        "exact-match-names-a-string",
        added("model_wrong_metric:\n  type: exact_match\n  reference_names: label\n"),
        "config.E010",
        "model_wrong_metric.reference_names",
        20,
    ),
    Case(
        "unknown-model-wrong-metric",
        added("model_wrong_metric:\n  type: bleu\n"),
        "config.E040",
        "model_wrong_metric.type",
        19,
    ),
    Case(
        "threshold-on-exact-match",
        added(
            "model_wrong_metric:\n  type: exact_match\n"
            "  reference_names: [label]\n  threshold: 0.5\n"
        ),
        "config.E021",
        "model_wrong_metric.threshold",
        21,
    ),
    Case(
        "unknown-key-in-model-wrong-metric",
        added("model_wrong_metric:\n  type: ask_user\n  mode: x\n"),
        "config.E020",
        "model_wrong_metric.mode",
        20,
    ),
    Case(
        "model-wrong-metric-a-string",
        added("model_wrong_metric: ask_user\n"),
        "config.E010",
        "model_wrong_metric",
        18,
    ),
    # -- perf_metric ------------------------------------------------------------------------
    Case(
        "missing-perf-metric",
        changed("perf_metric:\n  type: accuracy\n  reference_name: label\n", ""),
        "config.E012",
        "perf_metric",
        1,
    ),
    Case(
        "unknown-perf-metric",
        changed("type: accuracy", "type: rouge"),
        "config.E050",
        "perf_metric.type",
        16,
    ),
    Case(
        "dataperf-f1",
        changed("type: accuracy", "type: dataperf_f1"),
        "config.E016",
        "perf_metric.type",
        16,
    ),
    Case(
        "perf-reference-not-output",
        changed(
            "  type: accuracy\n  reference_name: label\n",
            "  type: accuracy\n  reference_name: hypothesis\n",
        ),
        "config.E052",
        "perf_metric.reference_name",
        17,
    ),
    Case(
        "perf-metric-scalar",
        changed(
            "perf_metric:\n  type: accuracy\n  reference_name: label\n", "perf_metric: accuracy\n"
        ),
        "config.E010",
        "perf_metric",
        15,
    ),
    Case(
        "perf-metric-empty-list",
        changed("perf_metric:\n  type: accuracy\n  reference_name: label\n", "perf_metric: []\n"),
        "config.E013",
        "perf_metric",
        15,
    ),
    Case(
        "perf-metric-duplicate",
        changed(
            "perf_metric:\n  type: accuracy\n  reference_name: label\n",
            "perf_metric:\n- {type: accuracy, reference_name: label}\n"
            "- {type: accuracy, reference_name: label}\n",
        ),
        "config.E054",
        "perf_metric[1]",
        17,
    ),
    Case(
        "perf-metric-missing-reference",
        changed("  type: accuracy\n  reference_name: label\n", "  type: accuracy\n"),
        "config.E012",
        "perf_metric.reference_name",
        16,
    ),
    Case(
        "perf-option-mapping",
        changed("  type: accuracy\n", "  type: accuracy\n  extra: {a: 1}\n"),
        "config.E010",
        "perf_metric.extra",
        17,
    ),
    # -- delta_metrics ------------------------------------------------------------------------
    Case(
        "unknown-delta-metric",
        added("delta_metrics:\n- type: speed\n"),
        "config.E060",
        "delta_metrics[0].type",
        19,
    ),
    Case(
        "duplicate-delta-metric",
        added("delta_metrics:\n- type: fairness\n- type: fairness\n"),
        "config.E061",
        "delta_metrics[1].type",
        20,
    ),
    Case(
        "delta-metric-as-string",
        added("delta_metrics: [fairness]\n"),
        "config.E010",
        "delta_metrics[0]",
        18,
    ),
    Case(
        "delta-metric-unknown-key",
        added("delta_metrics:\n- type: fairness\n  seed: 3\n"),
        "config.E020",
        "delta_metrics[0].seed",
        20,
    ),
    # -- aggregation_metric -------------------------------------------------------------------
    Case(
        "unknown-aggregation",
        added("aggregation_metric:\n  type: mean\n"),
        "config.E070",
        "aggregation_metric.type",
        19,
    ),
    Case(
        "unknown-weight-key",
        added("aggregation_metric:\n  type: dynascore\n  default_weights:\n    speed: 2\n"),
        "config.E071",
        "aggregation_metric.default_weights.speed",
        21,
    ),
    Case(
        "weight-above-five",
        added("aggregation_metric:\n  type: dynascore\n  default_weights:\n    accuracy: 7\n"),
        "config.E072",
        "aggregation_metric.default_weights.accuracy",
        21,
    ),
    Case(
        "weight-negative",
        added("aggregation_metric:\n  default_weights: {fairness: -1}\n"),
        "config.E072",
        "aggregation_metric.default_weights.fairness",
        19,
    ),
    Case(
        "weight-text",
        added("aggregation_metric:\n  default_weights: {latency_p95_ms: heavy}\n"),
        "config.E072",
        "aggregation_metric.default_weights.latency_p95_ms",
        19,
    ),
    Case(
        "default-weights-list",
        added("aggregation_metric:\n  default_weights: [accuracy]\n"),
        "config.E010",
        "aggregation_metric.default_weights",
        19,
    ),
    Case(
        "self-reported-weight-not-counted",
        added("aggregation_metric:\n  default_weights: {memory_utilization: 1}\n"),
        "config.E073",
        "aggregation_metric.default_weights.memory_utilization",
        19,
    ),
    Case(
        "count-self-reported-not-boolean",
        added("aggregation_metric:\n  count_self_reported: maybe\n"),
        "config.E010",
        "aggregation_metric.count_self_reported",
        19,
    ),
    Case(
        "aggregation-unknown-key",
        added("aggregation_metric:\n  type: dynascore\n  normalise: true\n"),
        "config.E020",
        "aggregation_metric.normalise",
        20,
    ),
]


def test_at_least_45_distinct_invalid_configs():
    assert len({case.text for case in CASES}) == len(CASES) >= 45
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_invalid_config_reports_its_code(case):
    with pytest.raises(TaskConfigError) as caught:
        parse_task_config(case.text)

    issues = caught.value.issues
    assert [issue.code for issue in issues] == [case.code], [str(issue) for issue in issues]
    issue = issues[0]
    if case.path is not None:
        assert issue.path == case.path
    if case.line is not None:
        assert issue.line == case.line
    if case.column is not None:
        assert issue.column == case.column
    assert issue.message and case.code in CATALOGUE


def test_yaml_syntax_error_message_names_line_and_column():
    with pytest.raises(TaskConfigError) as caught:
        parse_task_config("input:\n  - name: a\n   type: b\n")

    (issue,) = caught.value.issues
    assert (issue.code, issue.line, issue.column) == ("config.E001", 3, 4)
    assert str(issue).startswith("line 3: invalid YAML")


def test_alias_bomb_is_refused_quickly():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    previous = "a"
    for level in "bcdefghi":
        bomb += f"{level}: &{level} [" + ", ".join([f"*{previous}"] * 10) + "]\n"
        previous = level

    with pytest.raises(TaskConfigError) as caught:
        parse_task_config(bomb)

    assert caught.value.codes == ["config.E003"]


def test_recursive_alias_is_refused():
    with pytest.raises(TaskConfigError) as caught:
        parse_task_config("input: &loop [*loop]\n")

    assert caught.value.codes == ["config.E003"]


def test_deep_nesting_is_refused():
    with pytest.raises(TaskConfigError) as caught:
        parse_task_config("input: " + "[" * 5_000 + "]" * 5_000 + "\n")

    assert caught.value.codes == ["config.E003"]


def test_non_string_text_is_a_config_error():
    with pytest.raises(TaskConfigError) as caught:
        parse_task_config(b"input: []")  # type: ignore[arg-type]

    assert caught.value.codes == ["config.E010"]


def test_every_problem_is_reported_at_once():
    text = textwrap.dedent(
        """\
        colour: red
        context:
        - name: context
          type: image
        input:
        - name: hypothesis
          type: strng
        - name: label
          type: multiclass
          labels: [a, a]
        - name: answer
          type: context_string_selection
          reference_name: context
        output:
        - name: label
        - name: missing
        - name: prob
          type: prob
          reference_name: answer
        model_wrong_metric:
          type: string_f1
          reference_name: answer
        perf_metric:
          type: dataperf_f1
          reference_name: nowhere
        delta_metrics:
        - type: fairness
        - type: fairness
        aggregation_metric:
          default_weights: {fairness: 9}
        """
    )

    with pytest.raises(TaskConfigError) as caught:
        parse_task_config(text)

    found = [(issue.code, issue.path, issue.line) for issue in caught.value.issues]
    assert found == [
        ("config.E011", "colour", 1),
        ("config.E025", "input[0].type", 7),
        ("config.E028", "input[1].labels[1]", 10),
        ("config.E031", "input[2].reference_name", 13),
        ("config.E032", "output[1]", 16),
        ("config.E031", "output[2].reference_name", 19),
        ("config.E012", "model_wrong_metric.threshold", 21),
        ("config.E042", "model_wrong_metric.reference_name", 22),
        ("config.E016", "perf_metric.type", 24),
        ("config.E052", "perf_metric.reference_name", 25),
        ("config.E061", "delta_metrics[1].type", 28),
        ("config.E072", "aggregation_metric.default_weights.fairness", 30),
    ]
    message = str(caught.value)
    assert message.startswith("invalid task config: line 1: colour:") and "(+7 more)" in message


@pytest.mark.parametrize(
    "sample", [param(own("training_file_track")), param(dynabench("dataperf_image_labelling"))]
)
def test_a_training_file_track_reports_both_unsupported_parts(sample):
    with pytest.raises(TaskConfigError) as caught:
        sample.parse()

    assert caught.value.codes == ["config.E016", "config.E016"]
