"""Dataset uploads: all-or-nothing with line numbers, JSONL and CSV, streaming, access types,
deterministic perturbations, and gold kept from non-owners."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from leaderboards import selectors_runs, services
from leaderboards.models import Dataset, DatasetExample
from tasks.errors import InvalidUpload, PermissionDenied
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
        services.dataset_import(
            eval_task, io.BytesIO(payload), name="Bad", slug="bad", evaluate=False
        )
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
        services.dataset_import(eval_task, jsonl(rows), name="Test set", slug="test")
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
    dataset = services.dataset_import(
        task, io.BytesIO(text.encode()), name="QA", slug="qa", filename="qa.csv", evaluate=False
    )
    first, second = dataset.examples.order_by("position")
    assert first.gold == {"answer": ["Ada", "Ada Lovelace"]}
    assert first.tags == ["people"]
    assert second.gold == {"answer": "wrote"}
    bad = "uid,question,context,answer\nq1,Who?,Ada wrote it.,\nq2,,Ada wrote it.,x\n"
    with pytest.raises(InvalidUpload) as caught:
        services.dataset_import(
            task, io.BytesIO(bad.encode()), name="Bad", slug="bad", filename="b.csv"
        )
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
    dataset = services.dataset_import(
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
        services.dataset_import(eval_task, jsonl(rows), **arguments)
    assert _codes(caught.value) == [(2, "upload.E022")]
    rows[1]["input_id"] = "u1"
    copy = services.dataset_import(eval_task, jsonl(rows), **arguments)
    assert copy.perturbation_of.slug == "test"
    assert list(copy.examples.values_list("input_id", flat=True)) == ["u0", "u1"]
    del rows[0]["input_id"]
    with pytest.raises(InvalidUpload) as caught:
        services.dataset_import(eval_task, jsonl(rows), **arguments)
    assert caught.value.details["errors"][0]["path"] == "input_id"


def test_generated_perturbations_are_deterministic_and_browsable(eval_task, eval_owner):
    rows = sentiment_rows(6)
    rows[0]["statement"] = "He said his brother James was not happy."
    dataset = services.dataset_import(
        eval_task, jsonl(rows), name="Test", slug="test", evaluate=False
    )
    fair = services.dataset_generate_perturbation(dataset, "fairness", seed="s1", evaluate=False)
    assert fair.row_count == 1
    example = fair.examples.get()
    assert example.input_id == "u0"
    assert example.inputs["statement"] != rows[0]["statement"]
    assert "She" in example.inputs["statement"]
    robust = services.dataset_generate_perturbation(
        dataset, "robustness", seed="s1", evaluate=False
    )
    first = list(robust.examples.values_list("uid", "inputs"))
    assert len(first) == 6
    assert all(inputs["context"] == "Describe your day." for _, inputs in first)
    assert all(
        inputs["statement"] != row["statement"]
        for (_, inputs), row in zip(first, rows, strict=True)
    )
    again = services.dataset_generate_perturbation(dataset, "robustness", seed="s1", evaluate=False)
    assert again.pk == robust.pk
    assert list(again.examples.values_list("uid", "inputs")) == first
    other = services.dataset_generate_perturbation(dataset, "robustness", seed="s2", evaluate=False)
    assert list(other.examples.values_list("uid", "inputs")) != first

    _, browse = selectors_runs.dataset_examples_page(fair, eval_owner)
    assert browse[0].original_inputs["statement"] == rows[0]["statement"]
    assert browse[0].changed_fields == ("statement",)


def test_access_types_and_gold_visibility(client, eval_task, eval_owner):
    import_sentiment(eval_task, 3, evaluate=False, slug="open", name="Open set")
    import_sentiment(eval_task, 3, evaluate=False, slug="secret", access_type="hidden")
    stranger = UserFactory(username="stranger")
    client.force_login(stranger)
    listing = client.get(reverse("leaderboards:dataset_list", args=["sentiment"]))
    assert b"Open set" in listing.content and b"secret" not in listing.content
    hidden = client.get(reverse("leaderboards:dataset_detail", args=["sentiment", "secret"]))
    assert hidden.status_code == 404
    page = client.get(reverse("leaderboards:dataset_detail", args=["sentiment", "open"]))
    assert page.status_code == 200
    assert b"This is a good day number 0." in page.content
    assert b'class="gold"' not in page.content
    _, rows = selectors_runs.dataset_examples_page(Dataset.objects.get(slug="open"), stranger)
    assert all(row.gold is None for row in rows)

    client.force_login(eval_owner)
    page = client.get(reverse("leaderboards:dataset_detail", args=["sentiment", "secret"]))
    assert page.status_code == 200 and b'class="gold"' in page.content


def test_upload_page_reports_lines(client, eval_task, eval_owner):
    url = reverse("leaderboards:dataset_upload", args=["sentiment"])
    client.force_login(UserFactory(username="stranger"))
    assert client.get(url).status_code == 403
    client.force_login(eval_owner)
    assert client.get(url).status_code == 200
    rows = sentiment_rows(3)
    rows[1]["label"] = "meh"
    upload = io.BytesIO(jsonl(rows).getvalue())
    upload.name = "rows.jsonl"
    fields = {"name": "Web", "slug": "web", "access_type": "scoring"}
    response = client.post(url, {"file": upload, **fields})
    assert response.status_code == 400
    assert b"value.E" in response.content and b"<td>2</td>" in response.content
    upload = io.BytesIO(jsonl(sentiment_rows(3)).getvalue())
    upload.name = "rows.jsonl"
    response = client.post(url, {"file": upload, **fields})
    assert response.status_code == 302
    assert Dataset.objects.get(slug="web").row_count == 3


def test_import_dataset_command(tmp_path, eval_task):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(jsonl(sentiment_rows(4)).getvalue())
    out = io.StringIO()
    call_command(
        "import_dataset",
        "sentiment",
        str(path),
        "--name=Cmd",
        "--slug=cmd",
        "--access=standard",
        "--round=1",
        "--no-evaluate",
        stdout=out,
    )
    dataset = Dataset.objects.get(slug="cmd")
    assert dataset.access_type == "standard" and dataset.row_count == 4
    perturbed = sentiment_rows(2, prefix="x")
    for index, row in enumerate(perturbed):
        row["input_id"] = f"u{index}"
    path.write_bytes(jsonl(perturbed).getvalue())
    call_command(
        "import_dataset",
        "sentiment",
        str(path),
        "--name=Cmd robust",
        "--slug=cmd-r",
        "--perturbation-of=cmd",
        "--kind=robustness",
        "--no-evaluate",
        stdout=out,
    )
    assert Dataset.objects.get(slug="cmd-r").perturbation_of == dataset
