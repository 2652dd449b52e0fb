"""Value checks against a parsed config: contexts, inputs, outputs, rows and metadata.

The detailed cases run on our own fixtures (``fixtures/*.yaml``); the last tests build
values from each config's own fields, and run on our fixtures and on the Dynabench examples.
"""

from __future__ import annotations

import textwrap

import pytest

from tasks.config import FieldType, Verdict, parse_task_config
from tasks.config.values import (
    check_context,
    check_dataset_row,
    check_metadata,
    check_model_output,
    check_prediction_row,
    check_worker_input,
)
from tasks.metrics.text import selection_text
from tests.tasks.config.samples import own, supported_params

PASSAGE = "The cat sat on the mat. The dog slept."


@pytest.fixture(scope="module")
def claims():
    """Claim checking: passage (context), claim, verdict (goal), verdict_probs (prob)."""
    return own("claim_check").parse()


@pytest.fixture(scope="module")
def spans():
    """Span answering: article (context), query, span (selection), confidence (single prob)."""
    return own("span_answer").parse()


@pytest.fixture(scope="module")
def pictures():
    """Picture questions: picture (image context), question, reply (string output)."""
    return own("picture_question").parse()


@pytest.fixture(scope="module")
def rich():
    """A config with every value type as an input, optional fields and a max_length."""
    return parse_task_config(
        textwrap.dedent(
            """\
            context:
            - {name: passage, type: string}
            - {name: photo, type: image, optional: true}
            input:
            - {name: question, type: string, max_length: 20}
            - {name: topics, type: multilabel, labels: [sports, politics, science]}
            - {name: picture, type: image, optional: true}
            - {name: span, type: context_string_selection, reference_name: passage}
            - {name: label, type: multiclass, labels: [yes_answer, no_answer]}
            output:
            - name: label
            - name: topics
            - {name: probs, type: prob, reference_name: label}
            perf_metric:
            - {type: accuracy, reference_name: label}
            - {type: macro_f1, reference_name: topics}
            """
        )
    )


def codes_and_paths(issues):
    return [(issue.code, issue.path) for issue in issues]


# -- selection_text -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "text"),
    [("cat", "cat"), ({"text": "dog", "start": 4}, "dog"), ({"start": 1}, ""), (3, ""), (None, "")],
)
def test_selection_text(value, text):
    assert selection_text(value) == text


# -- check_context ------------------------------------------------------------------------
def test_context_valid(claims, pictures, rich):
    assert check_context(claims, {"passage": PASSAGE}) == []
    assert check_context(pictures, {"picture": "https://example.org/cat.jpg"}) == []
    assert check_context(rich, {"passage": PASSAGE}) == []  # photo is optional
    assert check_context(rich, {"passage": "x" * 50_000}) == []  # contexts have no max_length


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, [("value.E101", "passage")]),
        ({"passage": "  "}, [("value.E101", "passage")]),
        ({"passage": 5}, [("value.E103", "passage")]),
        ({"passage": PASSAGE, "extra": 1}, [("value.E102", "extra")]),
        (["passage"], [("value.E100", "")]),
    ],
)
def test_context_invalid(claims, data, expected):
    assert codes_and_paths(check_context(claims, data)) == expected


@pytest.mark.parametrize(
    "url", ["ftp://example.org/a.jpg", "example.org/a.jpg", "https://", "javascript:alert(1)", 3]
)
def test_context_image_must_be_http_url(pictures, url):
    assert [issue.code for issue in check_context(pictures, {"picture": url})] in (
        ["value.E107"],
        ["value.E103"],
    )


# -- check_worker_input --------------------------------------------------------------------
def test_worker_input_valid(claims, spans, rich):
    assert check_worker_input(claims, {"claim": "A cat.", "verdict": "unverifiable"}, {}) == []
    context = {"article": PASSAGE}
    assert check_worker_input(spans, {"query": "Who sat?", "span": "The cat"}, context) == []
    selection = {"text": "the mat", "start": 15}
    assert check_worker_input(spans, {"query": "Where?", "span": selection}, context) == []
    data = {
        "question": "Which?",
        "topics": ["sports", "science"],
        "span": {"text": "dog", "start": 28},
        "label": "no_answer",
        "picture": "http://example.org/p.png",
    }
    assert check_worker_input(rich, data, {"passage": PASSAGE}) == []


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"claim": "A cat."}, [("value.E101", "verdict")]),
        ({"claim": "", "verdict": "unverifiable"}, [("value.E101", "claim")]),
        ({"claim": "A cat.", "verdict": "maybe"}, [("value.E104", "verdict")]),
        ({"claim": "A cat.", "verdict": 1}, [("value.E103", "verdict")]),
        ({"claim": ["A cat."], "verdict": "unverifiable"}, [("value.E103", "claim")]),
        (
            {"claim": "A cat.", "verdict": "unverifiable", "verdict_probs": {}},
            [("value.E102", "verdict_probs")],
        ),
        ("text", [("value.E100", "")]),
    ],
)
def test_worker_input_invalid_claims(claims, data, expected):
    assert codes_and_paths(check_worker_input(claims, data, {})) == expected


@pytest.mark.parametrize(
    ("span", "code"),
    [
        ("The bird", "value.E108"),
        ({"text": "the mat", "start": 3}, "value.E108"),
        ({"text": "the mat", "start": -1}, "value.E103"),
        ({"text": "the mat", "start": True}, "value.E103"),
        ({"start": 3}, "value.E101"),
        ({"text": 3}, "value.E103"),
        ({"text": "   "}, "value.E101"),
        (["the mat"], "value.E103"),
    ],
)
def test_worker_selection_must_occur_in_context(spans, span, code):
    issues = check_worker_input(spans, {"query": "Where?", "span": span}, {"article": PASSAGE})
    assert codes_and_paths(issues) == [(code, "span")]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"question": "x" * 21}, [("value.E106", "question")]),
        ({"topics": ["sports", "sports"]}, [("value.E105", "topics")]),
        ({"topics": ["sports", "art"]}, [("value.E104", "topics")]),
        ({"topics": "sports"}, [("value.E103", "topics")]),
        ({"picture": "file:///etc/passwd"}, [("value.E107", "picture")]),
        ({"span": "cow"}, [("value.E108", "span")]),
    ],
)
def test_worker_input_invalid_rich(rich, changes, expected):
    data = {"question": "Which?", "topics": [], "span": "cat", "label": "yes_answer"}
    data.update(changes)
    assert codes_and_paths(check_worker_input(rich, data, {"passage": PASSAGE})) == expected


# -- check_model_output ---------------------------------------------------------------------
def test_model_output_valid(claims, spans, pictures):
    probabilities = {"supported": 0.2, "refuted": 0.3, "unverifiable": 0.50005}
    assert (
        check_model_output(claims, {"verdict": "unverifiable", "verdict_probs": probabilities})
        == []
    )
    assert check_model_output(spans, {"span": "", "confidence": 1, "uid": "7", "extra": [1]}) == []
    assert check_model_output(pictures, {"reply": "two"}) == []


@pytest.mark.parametrize(
    ("probabilities", "expected"),
    [
        (None, [("value.E101", "verdict_probs")]),
        ({"supported": 0.5, "refuted": 0.5}, [("value.E109", "verdict_probs")]),
        ({"supported": 0.5, "refuted": 0.5, "unverifiable": 0.5},
         [("value.E111", "verdict_probs")]),
        ({"supported": 1.5, "refuted": -0.5, "unverifiable": 0},
         [("value.E110", "verdict_probs")]),
        ({"supported": "1", "refuted": 0, "unverifiable": 0},
         [("value.E110", "verdict_probs")]),
        ([0.2, 0.3, 0.5], [("value.E103", "verdict_probs")]),
    ],
)  # fmt: skip
def test_model_output_invalid_probabilities(claims, probabilities, expected):
    output = {"verdict": "unverifiable"}
    if probabilities is not None:
        output["verdict_probs"] = probabilities
    assert codes_and_paths(check_model_output(claims, output)) == expected


def test_model_output_unknown_label_and_not_an_object(claims):
    probabilities = {"supported": 0.2, "refuted": 0.3, "unverifiable": 0.5}
    output = {"verdict": "other", "verdict_probs": probabilities}
    assert codes_and_paths(check_model_output(claims, output)) == [("value.E104", "verdict")]
    assert codes_and_paths(check_model_output(claims, [])) == [("value.E100", "")]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ({"span": "cat", "confidence": 1.2}, [("value.E110", "confidence")]),
        ({"span": "cat", "confidence": float("nan")}, [("value.E110", "confidence")]),
        ({"span": "cat", "confidence": "0.5"}, [("value.E103", "confidence")]),
        ({"span": "cat", "confidence": True}, [("value.E103", "confidence")]),
        ({"span": {"text": "cat"}, "confidence": 0.5}, [("value.E103", "span")]),
        ({"confidence": 0.5}, [("value.E101", "span")]),
    ],
)
def test_model_output_invalid_spans(spans, output, expected):
    assert codes_and_paths(check_model_output(spans, output)) == expected


# -- check_dataset_row ------------------------------------------------------------------------
def test_dataset_row_valid(claims, spans, pictures, rich):
    row = {"uid": "1", "tags": ["hard"], "passage": PASSAGE, "claim": "x", "verdict": "refuted"}
    assert check_dataset_row(claims, row) == []
    assert check_dataset_row(claims, {**row, "uid": 2, "verdict": ["refuted", "supported"]}) == []
    assert check_dataset_row(claims, {**row, "input_id": "0"}, perturbed=True) == []
    span_row = {"uid": "q", "article": PASSAGE, "query": "Who?", "span": ["cat", "The cat"]}
    assert check_dataset_row(spans, span_row) == []
    assert check_dataset_row(spans, {**span_row, "span": {"text": "cat", "start": 4}}) == []
    picture_row = {"uid": "v", "picture": "https://example.org/a.jpg", "question": "How many?"}
    assert check_dataset_row(pictures, {**picture_row, "reply": ["two"] * 10}) == []
    rich_row = {
        "uid": "r",
        "passage": PASSAGE,
        "question": "q",
        "span": "cat",
        "label": "yes_answer",
        "topics": [["sports"], ["sports", "science"]],
    }
    assert check_dataset_row(rich, rich_row) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"uid": ""}, [("value.E112", "uid")]),
        ({"uid": None}, [("value.E112", "uid")]),
        ({"uid": True}, [("value.E112", "uid")]),
        ({"uid": 1.5}, [("value.E112", "uid")]),
        ({"tags": "hard"}, [("value.E113", "tags")]),
        ({"tags": ["hard", 3]}, [("value.E113", "tags")]),
        ({"claim": None}, [("value.E101", "claim")]),
        ({"passage": 12}, [("value.E103", "passage")]),
        ({"verdict": None}, [("value.E101", "verdict")]),
        ({"verdict": "maybe"}, [("value.E104", "verdict")]),
        ({"verdict": []}, [("value.E115", "verdict")]),
        ({"verdict": ["refuted", ["supported"]]}, [("value.E103", "verdict")]),
    ],
)
def test_dataset_row_invalid(claims, changes, expected):
    row = {"uid": "1", "passage": PASSAGE, "claim": "x", "verdict": "refuted"}
    row.update(changes)
    assert codes_and_paths(check_dataset_row(claims, row)) == expected


def test_dataset_row_gold_string_alternatives(pictures):
    row = {"uid": "v", "picture": "https://example.org/a.jpg", "question": "How many?"}
    assert codes_and_paths(check_dataset_row(pictures, {**row, "reply": ["two", 2]})) == [
        ("value.E103", "reply")
    ]
    assert codes_and_paths(check_dataset_row(pictures, row)) == [("value.E101", "reply")]
    broken = {**row, "picture": "a.jpg", "reply": "2"}
    assert codes_and_paths(check_dataset_row(pictures, broken)) == [("value.E107", "picture")]


@pytest.mark.parametrize("input_id", [None, "", False, ["1"]])
def test_perturbed_row_needs_input_id(claims, input_id):
    row = {"uid": "1p", "passage": PASSAGE, "claim": "x", "verdict": "refuted"}
    if input_id is not None:
        row["input_id"] = input_id
    assert codes_and_paths(check_dataset_row(claims, row, perturbed=True)) == [
        ("value.E114", "input_id")
    ]
    assert check_dataset_row(claims, row) == []  # an original row does not need it


# -- check_prediction_row --------------------------------------------------------------------
def test_prediction_row(spans):
    assert check_prediction_row(spans, {"uid": "1", "span": "cat", "confidence": 0.9}) == []
    assert codes_and_paths(check_prediction_row(spans, {"span": "cat", "confidence": 2})) == [
        ("value.E112", "uid"),
        ("value.E110", "confidence"),
    ]
    assert codes_and_paths(check_prediction_row(spans, "1,cat")) == [("value.E100", "")]


# -- check_metadata -------------------------------------------------------------------------
def test_metadata_create(claims):
    fields = claims.create_metadata_fields(True)
    valid = {"why_it_holds": "because", "why_it_missed": "negation"}
    assert check_metadata(fields, valid) == []
    assert codes_and_paths(check_metadata(fields, {"why_it_holds": "because"})) == [
        ("value.E101", "why_it_missed")
    ]
    # A field of the other branch is not expected here.
    assert codes_and_paths(check_metadata(fields, {**valid, "why_expected_a_miss": "x"})) == [
        ("value.E102", "why_expected_a_miss")
    ]


def test_metadata_validate(claims, spans):
    fields = claims.validate_metadata_fields(Verdict.INCORRECT)
    valid = {
        "better_verdict": "not_enough_info",
        "fix_reason": "the passage does not say",
        "trick_guess": "negation",
    }
    assert check_metadata(fields, valid) == []
    # The corrected labels are the metadata field's own, not the input's.
    assert codes_and_paths(check_metadata(fields, {**valid, "better_verdict": "unverifiable"})) == [
        ("value.E104", "better_verdict")
    ]
    span_fields = spans.validate_metadata_fields("incorrect")
    span_valid = {
        "better_span": {"text": "The dog", "start": 24},
        "fix_reason": "it is the dog",
        "trick_guess": "distractor",
    }
    assert check_metadata(span_fields, span_valid, context={"article": PASSAGE}) == []
    wrong = {**span_valid, "better_span": "the cow"}
    assert codes_and_paths(check_metadata(span_fields, wrong, context={"article": PASSAGE})) == [
        ("value.E108", "better_span")
    ]
    # Without the context text only the shape is checked.
    assert check_metadata(span_fields, wrong) == []
    assert codes_and_paths(check_metadata(span_fields, None)) == [("value.E100", "")]


def test_metadata_optional_fields():
    config = parse_task_config(
        textwrap.dedent(
            """\
            input: [{name: text, type: string}]
            output: [{name: text}]
            perf_metric: {type: bleu, reference_name: text}
            metadata:
              create:
              - {name: note, type: string, optional: true, max_length: 5}
            """
        )
    )
    assert check_metadata(config.metadata_create, {}) == []
    assert codes_and_paths(check_metadata(config.metadata_create, {"note": "too long"})) == [
        ("value.E106", "note")
    ]


# -- values built from each config's own fields ---------------------------------------------
IMAGE_URL = "https://example.org/picture.png"


def valid_value(spec, context, config, *, from_model=False):
    """Return a valid value for ``spec``, as a worker sends it (or a model, ``from_model``)."""
    if spec.type == FieldType.STRING:
        return f"some {spec.name}"
    if spec.type == FieldType.MULTICLASS:
        return spec.labels[-1]
    if spec.type == FieldType.MULTILABEL:
        return list(spec.labels[:2])
    if spec.type == FieldType.IMAGE:
        return IMAGE_URL
    if spec.type == FieldType.CONTEXT_STRING_SELECTION:
        text = context[spec.reference_name][4:9]
        # A model answers the selected text; a worker or a dataset may give its offset too.
        return text if from_model else {"text": text, "start": 4}
    if spec.type == FieldType.SLIDER:
        return spec.max_value
    if spec.type == FieldType.LABEL_SLIDERS:
        return dict.fromkeys(spec.labels, spec.min_value)
    if spec.type == FieldType.LABEL_WITH_SLIDER:
        return {"label": spec.labels[0], "score": spec.min_value}
    if spec.type == FieldType.TEXT_WITH_SLIDER:
        return {"text": f"some {spec.name}", "score": spec.max_value}
    if spec.single_prob:
        return 0.25
    labels = config.field(spec.reference_name).labels
    return {label: 1 / len(labels) for label in labels}


def values_for(fields, context, config, *, from_model=False):
    return {spec.name: valid_value(spec, context, config, from_model=from_model) for spec in fields}


# A wrong value of each type, with the code it must get.
INVALID = {
    FieldType.STRING: (["not", "a", "string"], "value.E103"),
    FieldType.MULTICLASS: ("not one of the labels", "value.E104"),
    FieldType.MULTILABEL: ("a label, not a list", "value.E103"),
    FieldType.IMAGE: ("file:///etc/passwd", "value.E107"),
    FieldType.CONTEXT_STRING_SELECTION: ("text found nowhere", "value.E108"),
    FieldType.SLIDER: (1000, "value.E116"),
    FieldType.LABEL_SLIDERS: ({"nobody": 1}, "value.E109"),
    FieldType.LABEL_WITH_SLIDER: ({"label": "none of them", "score": 1}, "value.E104"),
    FieldType.TEXT_WITH_SLIDER: ({"text": "fine", "score": -5}, "value.E116"),
}


@pytest.mark.parametrize("sample", supported_params())
def test_values_built_from_the_config_pass_every_check(sample):
    config = sample.parse()
    context = {spec.name: "The quick brown fox" for spec in config.context}
    context.update({spec.name: IMAGE_URL for spec in config.context if spec.type == "image"})

    assert check_context(config, context) == []
    worker = values_for(config.input, context, config)
    assert check_worker_input(config, worker, context) == []
    output = values_for(config.output, context, config, from_model=True)
    assert check_model_output(config, output) == []
    assert check_prediction_row(config, {"uid": "p1", **output}) == []
    row = {"uid": 1, "tags": ["t"], **values_for(config.model_input_fields, context, config)}
    row.update(values_for(config.gold_fields, context, config))
    assert check_dataset_row(config, {**row, **context}) == []
    assert check_dataset_row(config, {**row, **context, "input_id": 0}, perturbed=True) == []
    for model_wrong in (True, False, None):
        fields = config.create_metadata_fields(model_wrong)
        assert check_metadata(fields, values_for(fields, context, config), context=context) == []
    for verdict in (*Verdict, None):
        fields = config.validate_metadata_fields(verdict)
        assert check_metadata(fields, values_for(fields, context, config), context=context) == []


@pytest.mark.parametrize("sample", supported_params())
def test_a_wrong_value_of_each_input_gets_its_code(sample):
    config = sample.parse()
    context = {spec.name: "The quick brown fox" for spec in config.context}
    worker = values_for(config.input, context, config)

    for spec in config.input:
        wrong, code = INVALID[spec.type]
        issues = check_worker_input(config, {**worker, spec.name: wrong}, context)
        assert codes_and_paths(issues) == [(code, spec.name)], spec.name
        if not spec.optional:
            missing = {key: value for key, value in worker.items() if key != spec.name}
            issues = check_worker_input(config, missing, context)
            assert codes_and_paths(issues) == [("value.E101", spec.name)]
    issues = check_model_output(config, {})
    assert codes_and_paths(issues) == [("value.E101", name) for name in config.output_names]
