"""Value checks against a parsed config: contexts, inputs, outputs, rows and metadata."""

from __future__ import annotations

import textwrap

import pytest

from tasks.config import Verdict, parse_task_config
from tasks.config.values import (
    check_context,
    check_dataset_row,
    check_metadata,
    check_model_output,
    check_prediction_row,
    check_worker_input,
    selection_text,
)
from tests.tasks.config.samples import dynabench_text

PASSAGE = "The cat sat on the mat. The dog slept."


@pytest.fixture(scope="module")
def nli():
    return parse_task_config(dynabench_text("nli"))


@pytest.fixture(scope="module")
def qa():
    return parse_task_config(dynabench_text("qa"))


@pytest.fixture(scope="module")
def vqa():
    return parse_task_config(dynabench_text("vqa"))


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
def test_context_valid(nli, vqa, rich):
    assert check_context(nli, {"context": PASSAGE}) == []
    assert check_context(vqa, {"image": "https://example.org/cat.jpg"}) == []
    assert check_context(rich, {"passage": PASSAGE}) == []  # photo is optional
    assert check_context(rich, {"passage": "x" * 50_000}) == []  # contexts have no max_length


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, [("value.E101", "context")]),
        ({"context": "  "}, [("value.E101", "context")]),
        ({"context": 5}, [("value.E103", "context")]),
        ({"context": PASSAGE, "extra": 1}, [("value.E102", "extra")]),
        (["context"], [("value.E100", "")]),
    ],
)
def test_context_invalid(nli, data, expected):
    assert codes_and_paths(check_context(nli, data)) == expected


@pytest.mark.parametrize(
    "url", ["ftp://example.org/a.jpg", "example.org/a.jpg", "https://", "javascript:alert(1)", 3]
)
def test_context_image_must_be_http_url(vqa, url):
    assert [issue.code for issue in check_context(vqa, {"image": url})] in (
        ["value.E107"],
        ["value.E103"],
    )


# -- check_worker_input --------------------------------------------------------------------
def test_worker_input_valid(nli, qa, rich):
    assert check_worker_input(nli, {"hypothesis": "A cat.", "label": "neutral"}, {}) == []
    context = {"context": PASSAGE}
    assert check_worker_input(qa, {"question": "Who sat?", "answer": "The cat"}, context) == []
    selection = {"text": "the mat", "start": 15}
    assert check_worker_input(qa, {"question": "Where?", "answer": selection}, context) == []
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
        ({"hypothesis": "A cat."}, [("value.E101", "label")]),
        ({"hypothesis": "", "label": "neutral"}, [("value.E101", "hypothesis")]),
        ({"hypothesis": "A cat.", "label": "maybe"}, [("value.E104", "label")]),
        ({"hypothesis": "A cat.", "label": 1}, [("value.E103", "label")]),
        ({"hypothesis": ["A cat."], "label": "neutral"}, [("value.E103", "hypothesis")]),
        (
            {"hypothesis": "A cat.", "label": "neutral", "prob": {}},
            [("value.E102", "prob")],
        ),
        ("text", [("value.E100", "")]),
    ],
)
def test_worker_input_invalid_nli(nli, data, expected):
    assert codes_and_paths(check_worker_input(nli, data, {})) == expected


@pytest.mark.parametrize(
    ("answer", "code"),
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
def test_worker_selection_must_occur_in_context(qa, answer, code):
    issues = check_worker_input(qa, {"question": "Where?", "answer": answer}, {"context": PASSAGE})
    assert codes_and_paths(issues) == [(code, "answer")]


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
def test_model_output_valid(nli, qa, vqa):
    probabilities = {"entailed": 0.2, "neutral": 0.3, "contradictory": 0.50005}
    assert check_model_output(nli, {"label": "neutral", "prob": probabilities}) == []
    assert check_model_output(qa, {"answer": "", "conf": 1, "uid": "7", "extra": [1]}) == []
    assert check_model_output(vqa, {"answer": "two"}) == []


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ({"label": "neutral"}, [("value.E101", "prob")]),
        ({"label": "other", "prob": {"entailed": 0.2, "neutral": 0.3, "contradictory": 0.5}},
         [("value.E104", "label")]),
        ({"label": "neutral", "prob": {"entailed": 0.5, "neutral": 0.5}},
         [("value.E109", "prob")]),
        ({"label": "neutral", "prob": {"entailed": 0.5, "neutral": 0.5, "contradictory": 0.5}},
         [("value.E111", "prob")]),
        ({"label": "neutral", "prob": {"entailed": 1.5, "neutral": -0.5, "contradictory": 0}},
         [("value.E110", "prob")]),
        ({"label": "neutral", "prob": {"entailed": "1", "neutral": 0, "contradictory": 0}},
         [("value.E110", "prob")]),
        ({"label": "neutral", "prob": [0.2, 0.3, 0.5]}, [("value.E103", "prob")]),
        ([], [("value.E100", "")]),
    ],
)  # fmt: skip
def test_model_output_invalid_nli(nli, output, expected):
    assert codes_and_paths(check_model_output(nli, output)) == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ({"answer": "cat", "conf": 1.2}, [("value.E110", "conf")]),
        ({"answer": "cat", "conf": float("nan")}, [("value.E110", "conf")]),
        ({"answer": "cat", "conf": "0.5"}, [("value.E103", "conf")]),
        ({"answer": "cat", "conf": True}, [("value.E103", "conf")]),
        ({"answer": {"text": "cat"}, "conf": 0.5}, [("value.E103", "answer")]),
        ({"conf": 0.5}, [("value.E101", "answer")]),
    ],
)
def test_model_output_invalid_qa(qa, output, expected):
    assert codes_and_paths(check_model_output(qa, output)) == expected


# -- check_dataset_row ------------------------------------------------------------------------
def test_dataset_row_valid(nli, qa, vqa, rich):
    row = {"uid": "1", "tags": ["hard"], "context": PASSAGE, "hypothesis": "x", "label": "neutral"}
    assert check_dataset_row(nli, row) == []
    assert check_dataset_row(nli, {**row, "uid": 2, "label": ["neutral", "entailed"]}) == []
    assert check_dataset_row(nli, {**row, "input_id": "0"}, perturbed=True) == []
    qa_row = {"uid": "q", "context": PASSAGE, "question": "Who?", "answer": ["cat", "The cat"]}
    assert check_dataset_row(qa, qa_row) == []
    assert check_dataset_row(qa, {**qa_row, "answer": {"text": "cat", "start": 4}}) == []
    vqa_row = {"uid": "v", "image": "https://example.org/a.jpg", "question": "How many?"}
    assert check_dataset_row(vqa, {**vqa_row, "answer": ["two"] * 10}) == []
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
        ({"hypothesis": None}, [("value.E101", "hypothesis")]),
        ({"context": 12}, [("value.E103", "context")]),
        ({"label": None}, [("value.E101", "label")]),
        ({"label": "maybe"}, [("value.E104", "label")]),
        ({"label": []}, [("value.E115", "label")]),
        ({"label": ["neutral", ["entailed"]]}, [("value.E103", "label")]),
    ],
)
def test_dataset_row_invalid(nli, changes, expected):
    row = {"uid": "1", "context": PASSAGE, "hypothesis": "x", "label": "neutral"}
    row.update(changes)
    assert codes_and_paths(check_dataset_row(nli, row)) == expected


def test_dataset_row_gold_string_alternatives(vqa):
    row = {"uid": "v", "image": "https://example.org/a.jpg", "question": "How many?"}
    assert codes_and_paths(check_dataset_row(vqa, {**row, "answer": ["two", 2]})) == [
        ("value.E103", "answer")
    ]
    assert codes_and_paths(check_dataset_row(vqa, row)) == [("value.E101", "answer")]
    assert codes_and_paths(check_dataset_row(vqa, {**row, "image": "a.jpg", "answer": "2"})) == [
        ("value.E107", "image")
    ]


@pytest.mark.parametrize("input_id", [None, "", False, ["1"]])
def test_perturbed_row_needs_input_id(nli, input_id):
    row = {"uid": "1p", "context": PASSAGE, "hypothesis": "x", "label": "neutral"}
    if input_id is not None:
        row["input_id"] = input_id
    assert codes_and_paths(check_dataset_row(nli, row, perturbed=True)) == [
        ("value.E114", "input_id")
    ]
    assert check_dataset_row(nli, row) == []  # an original row does not need it


# -- check_prediction_row --------------------------------------------------------------------
def test_prediction_row(qa):
    assert check_prediction_row(qa, {"uid": "1", "answer": "cat", "conf": 0.9}) == []
    assert codes_and_paths(check_prediction_row(qa, {"answer": "cat", "conf": 2})) == [
        ("value.E112", "uid"),
        ("value.E110", "conf"),
    ]
    assert codes_and_paths(check_prediction_row(qa, "1,cat")) == [("value.E100", "")]


# -- check_metadata -------------------------------------------------------------------------
def test_metadata_create(nli):
    fields = nli.create_metadata_fields(True)
    valid = {"example_explanation": "because", "model_explanation_wrong": "negation"}
    assert check_metadata(fields, valid) == []
    assert codes_and_paths(check_metadata(fields, {"example_explanation": "because"})) == [
        ("value.E101", "model_explanation_wrong")
    ]
    # A field of the other branch is not expected here.
    assert codes_and_paths(check_metadata(fields, {**valid, "model_explanation_right": "x"})) == [
        ("value.E102", "model_explanation_right")
    ]


def test_metadata_validate(nli, qa):
    fields = nli.validate_metadata_fields(Verdict.INCORRECT)
    valid = {
        "corrected_label": "neutral",
        "target_explanation": "it is neutral",
        "validator_model_explanation": "negation",
    }
    assert check_metadata(fields, valid) == []
    assert codes_and_paths(check_metadata(fields, {**valid, "corrected_label": "other"})) == [
        ("value.E104", "corrected_label")
    ]
    qa_fields = qa.validate_metadata_fields("incorrect")
    qa_valid = {
        "corrected_answer": {"text": "The dog", "start": 24},
        "target_explanation": "it is the dog",
        "validator_model_explanation": "distractor",
    }
    assert check_metadata(qa_fields, qa_valid, context={"context": PASSAGE}) == []
    wrong = {**qa_valid, "corrected_answer": "the cow"}
    assert codes_and_paths(check_metadata(qa_fields, wrong, context={"context": PASSAGE})) == [
        ("value.E108", "corrected_answer")
    ]
    # Without the context text only the shape is checked.
    assert check_metadata(qa_fields, wrong) == []
    assert codes_and_paths(check_metadata(qa_fields, None)) == [("value.E100", "")]


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
