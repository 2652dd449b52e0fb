"""Dataset uploads: all-or-nothing with line numbers, JSONL and CSV, streaming, perturbed
copies uploaded or generated deterministically."""

from __future__ import annotations

import io
import json

import pytest

from core.errors import InvalidUpload, PermissionDenied
from leaderboards.models import Dataset, DatasetExample
from leaderboards.selectors.datasets import dataset_examples_page
from leaderboards.services.datasets import dataset_generate_perturbation, dataset_import
from tests.factories import TaskFactory, UserFactory
from tests.leaderboards.evalkit import (
    import_sentiment,
    jsonl,
    sentiment_rows,
)

pytestmark = pytest.mark.django_db


def _codes(error):
    return [(item["line"], item["code"]) for item in error.details["errors"]]


def test_jsonl_import_stores_inputs_gold_tags(eval_task):
    dataset = import_sentiment(eval_task, 5, evaluate=False, access_type="standard", round_number=1)
    assert dataset.row_count == 5
    assert dataset.round.number == 1
    example = dataset.examples.get(position=0)
    assert example.inputs == {
        "uid": "u0",
        "statement": "This is a good day number 0.",
        "context": "Describe your day.",
    }
    assert example.gold == {"label": "positive"}
    assert example.tags == ["even"]


def test_bad_lines_are_named_and_nothing_is_kept(eval_task):
    rows = sentiment_rows(6)
    rows[2]["label"] = "furious"
    del rows[4]["statement"]
    payload = jsonl(rows).getvalue() + b"{not json\n"
    with pytest.raises(InvalidUpload) as caught:
        dataset_import(eval_task, io.BytesIO(payload), name="Bad", slug="bad", evaluate=False)
    codes = _codes(caught.value)
    assert [line for line, _ in codes] == [3, 5, 7]
    assert codes[2][1] == "upload.E003"
    assert not Dataset.objects.filter(slug="bad").exists()
    assert not DatasetExample.objects.exists()


def test_reupload_failure_keeps_previous_rows(eval_task):
    dataset = import_sentiment(eval_task, 4, evaluate=False)
    rows = sentiment_rows(3)
    rows[1]["uid"] = rows[0]["uid"]  # repeated uid
    with pytest.raises(InvalidUpload) as caught:
        dataset_import(eval_task, jsonl(rows), name="Test set", slug="test")
    assert _codes(caught.value) == [(2, "upload.E020")]
    dataset.refresh_from_db()
    assert dataset.row_count == 4 and dataset.examples.count() == 4


def test_reupload_replaces_rows(eval_task):
    import_sentiment(eval_task, 4, evaluate=False)
    dataset = import_sentiment(eval_task, 7, evaluate=False)
    assert Dataset.objects.filter(task=eval_task).count() == 1
    assert dataset.examples.count() == 7


def test_csv_with_gold_lists(db, eval_owner):
    task = TaskFactory(code="qa", config_name="qa", owners=[eval_owner])
    text = (
        "uid,question,context,answer,tags\n"
        'q1,Who?,Ada wrote it.,"[""Ada"", ""Ada Lovelace""]",people\n'
        "q2,What?,Ada wrote it.,wrote,\n"
    )
    dataset = dataset_import(
        task, io.BytesIO(text.encode()), name="QA", slug="qa", filename="qa.csv", evaluate=False
    )
    first, second = dataset.examples.order_by("position")
    assert first.gold == {"answer": ["Ada", "Ada Lovelace"]}
    assert first.tags == ["people"]
    assert second.gold == {"answer": "wrote"}
    bad = "uid,question,context,answer\nq1,Who?,Ada wrote it.,\nq2,,Ada wrote it.,x\n"
    with pytest.raises(InvalidUpload) as caught:
        dataset_import(task, io.BytesIO(bad.encode()), name="Bad", slug="bad", filename="b.csv")
    assert [line for line, _ in _codes(caught.value)] == [2, 3]


class OnlyForwardStream(io.RawIOBase):
    """A stream produced line by line from a generator; it is never held whole."""

    def __init__(self, count):
        self.lines = (json.dumps(row).encode() + b"\n" for row in sentiment_rows(count))
        self.buffer = b""
        self.max_read = 0
        self.total = 0

    def readable(self):
        return True

    def readinto(self, target):
        self.max_read = max(self.max_read, len(target))
        while len(self.buffer) < len(target):
            chunk = next(self.lines, None)
            if chunk is None:
                break
            self.buffer += chunk
        size = min(len(target), len(self.buffer))
        target[:size] = self.buffer[:size]
        self.total += size
        self.buffer = self.buffer[size:]
        return size


def test_import_is_streamed(eval_task):
    stream = OnlyForwardStream(30_000)
    dataset = dataset_import(
        eval_task, io.BufferedReader(stream), name="Big", slug="big", evaluate=False
    )
    assert dataset.row_count == 30_000
    # Read in pieces (at most one maximal line at a time), never the whole file.
    assert stream.max_read <= 1_100_000 < stream.total


def test_only_owners_import(eval_task):
    with pytest.raises(PermissionDenied):
        import_sentiment(eval_task, 2, user=UserFactory(username="intruder"))


def test_uploaded_perturbation_checks_input_id(eval_task):
    import_sentiment(eval_task, 3, evaluate=False)
    rows = sentiment_rows(2, prefix="p")
    for index, row in enumerate(rows):
        row["input_id"] = f"u{index}"
    rows[1]["input_id"] = "nope"
    arguments = {
        "name": "Perturbed",
        "slug": "test-fair",
        "perturbation_of": "test",
        "perturbation_kind": "fairness",
        "evaluate": False,
    }
    with pytest.raises(InvalidUpload) as caught:
        dataset_import(eval_task, jsonl(rows), **arguments)
    assert _codes(caught.value) == [(2, "upload.E022")]
    rows[1]["input_id"] = "u1"
    copy = dataset_import(eval_task, jsonl(rows), **arguments)
    assert copy.perturbation_of.slug == "test"
    assert list(copy.examples.values_list("input_id", flat=True)) == ["u0", "u1"]
    del rows[0]["input_id"]
    with pytest.raises(InvalidUpload) as caught:
        dataset_import(eval_task, jsonl(rows), **arguments)
    assert caught.value.details["errors"][0]["path"] == "input_id"


def test_generated_perturbations_are_deterministic_and_browsable(eval_task, eval_owner):
    rows = sentiment_rows(6)
    rows[0]["statement"] = "He said his brother James was not happy."
    dataset = dataset_import(eval_task, jsonl(rows), name="Test", slug="test", evaluate=False)
    fair = dataset_generate_perturbation(dataset, "fairness", seed="s1", evaluate=False)
    assert fair.row_count == 1
    example = fair.examples.get()
    assert example.input_id == "u0"
    assert example.inputs["statement"] != rows[0]["statement"]
    assert "She" in example.inputs["statement"]
    robust = dataset_generate_perturbation(dataset, "robustness", seed="s1", evaluate=False)
    first = list(robust.examples.values_list("uid", "inputs"))
    assert len(first) == 6
    assert all(inputs["context"] == "Describe your day." for _, inputs in first)
    assert all(
        inputs["statement"] != row["statement"]
        for (_, inputs), row in zip(first, rows, strict=True)
    )
    again = dataset_generate_perturbation(dataset, "robustness", seed="s1", evaluate=False)
    assert again.pk == robust.pk
    assert list(again.examples.values_list("uid", "inputs")) == first
    other = dataset_generate_perturbation(dataset, "robustness", seed="s2", evaluate=False)
    assert list(other.examples.values_list("uid", "inputs")) != first

    _, browse = dataset_examples_page(fair, eval_owner)
    assert browse[0].original_inputs["statement"] == rows[0]["statement"]
    assert browse[0].changed_fields == ("statement",)


def test_where_the_inputs_go_defaults_from_the_access_type_and_is_kept(eval_task):
    def upload(**arguments):
        return import_sentiment(eval_task, 2, evaluate=False, **arguments)

    assert upload(access_type="scoring").inputs_to_others is True
    assert upload(access_type="scoring", inputs_to_others=False).inputs_to_others is False
    # A replaced dataset keeps its choice...
    assert upload(access_type="standard").inputs_to_others is False
    # ...except that becoming hidden turns it to no; a hidden one keeps an explicit yes.
    assert upload(access_type="scoring", inputs_to_others=True).inputs_to_others is True
    assert upload(access_type="hidden").inputs_to_others is False
    assert upload(access_type="hidden", inputs_to_others=True).inputs_to_others is True
    assert upload(access_type="hidden").inputs_to_others is True


def test_copies_of_a_hidden_dataset_are_hidden_and_follow_its_inputs_rule(eval_task):
    from leaderboards.selectors.datasets import dataset_inputs_to_others, dataset_is_sealed

    original = import_sentiment(eval_task, 3, evaluate=False, access_type="hidden")
    generated = dataset_generate_perturbation(original, "robustness", evaluate=False)
    rows = sentiment_rows(2, prefix="p")
    for index, row in enumerate(rows):
        row["input_id"] = f"u{index}"
    uploaded = dataset_import(
        eval_task,
        jsonl(rows),
        name="Fair",
        slug="test-fair",
        access_type="scoring",
        perturbation_of="test",
        perturbation_kind="fairness",
        evaluate=False,
    )
    for copy in (generated, uploaded):
        copy.refresh_from_db()
        assert copy.access_type == "hidden" and dataset_is_sealed(copy)
        assert not dataset_inputs_to_others(copy)
    import_sentiment(eval_task, 3, evaluate=False, access_type="hidden", inputs_to_others=True)
    for copy in (generated, uploaded):
        copy.refresh_from_db()
        assert copy.inputs_to_others and dataset_inputs_to_others(copy)


@pytest.mark.django_db
def test_a_dataset_with_400_bad_lines_reports_the_first_100_of_400(eval_task):
    rows = [{"uid": f"u{index}", "nonsense": 1} for index in range(400)]
    with pytest.raises(InvalidUpload) as caught:
        dataset_import(eval_task, jsonl(rows), name="Bad", slug="bad", filename="rows.jsonl")
    error = caught.value
    assert error.message.startswith("the first 100 of ")
    total = error.details["error_count"]
    assert total >= 400 and f"of {total} problems in the upload" in error.message
    assert len(error.details["errors"]) == 100
    assert min(item["line"] for item in error.details["errors"]) == 1


@pytest.mark.django_db
def test_an_empty_dataset_file_names_line_1(eval_task):
    with pytest.raises(InvalidUpload) as caught:
        dataset_import(eval_task, io.BytesIO(b""), name="Empty", slug="empty", filename="e.jsonl")
    assert caught.value.message == "1 problem in the upload; nothing was imported"
    assert [(item["line"], item["code"]) for item in caught.value.details["errors"]] == [
        (1, "upload.E008")
    ]
