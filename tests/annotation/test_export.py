"""The JSON Lines export: content, anonymity, rounds, bounded queries, constant memory."""

from __future__ import annotations

import io
import json
import tracemalloc

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.export import anonymous_worker_id, example_export_lines
from annotation.models import Example
from tasks import services as task_services
from tests.factories import (
    CampaignWorkerFactory,
    ContextFactory,
    ExampleFactory,
    ModelFactory,
    UserFactory,
    ValidationFactory,
)

pytestmark = pytest.mark.django_db


def lines_of(task, round_=None, **kwargs):
    return [json.loads(line) for line in example_export_lines(task, round_, **kwargs)]


def bulk_examples(task, count, *, context=None, user=None):
    """Insert ``count`` examples fast (bulk_create), all alike."""
    round_ = task.rounds.get(number=1)
    context = context or ContextFactory(task=task, round=round_)
    user = user or UserFactory()
    Example.objects.bulk_create(
        [
            Example(
                task=task,
                round=round_,
                context=context,
                config_version=task.current_config,
                user=user,
                input={"statement": f"Statement number {n} with some words.", "label": "positive"},
                goal_label="positive",
                status="model_answered",
                model_output={"label": "negative"},
                model_wrong=True,
                verdict_source="metric",
                metadata={"example_explanation": "x" * 40},
            )
            for n in range(count)
        ],
        batch_size=5000,
    )


def test_a_line_holds_everything_and_no_raw_worker_identity(task, settings):
    settings.EXPORT_WORKER_ID_SALT = "pepper"
    writer = UserFactory(username="alice-writer")
    model = ModelFactory(task=task, name="roberta-sentiment")
    example = ExampleFactory(
        task=task,
        user=writer,
        model=model,
        model_version="1.2",
        model_output={"label": "negative", "prob": {"negative": 0.9}},
        metadata={"example_explanation": "sarcasm"},
        time_spent_ms=4200,
    )
    validator = UserFactory(username="bob-validator")
    ValidationFactory(example=example, user=validator, label="correct", metadata={"note": "ok"})
    campaign_worker = CampaignWorkerFactory(campaign__task=task, external_id="PROLIFIC123")
    ValidationFactory(example=example, user=None, campaign_worker=campaign_worker, label="flagged")

    (line,) = lines_of(task)
    assert line["id"] == example.pk
    assert line["task"] == task.code
    assert line["round"] == 1
    assert line["config_version"] == 1
    assert line["context"]["data"] == example.context.data
    assert line["input"] == example.input
    assert line["model"] == {
        "id": model.pk,
        "name": "roberta-sentiment",
        "version": "1.2",
        "output": {"label": "negative", "prob": {"negative": 0.9}},
        "latency_ms": None,
        "error_code": "",
    }
    assert line["verdict"] == {"model_wrong": True, "source": "metric"}
    assert line["metadata"] == {"example_explanation": "sarcasm"}
    assert [v["label"] for v in line["validations"]] == ["correct", "flagged"]
    assert line["validations"][0]["metadata"] == {"note": "ok"}
    assert line["time_spent_ms"] == 4200
    assert line["created_at"].startswith(str(example.created_at.year))

    # Workers: salted hashes, stable, distinct; never the raw id or name.
    assert line["worker"] == anonymous_worker_id(writer.pk, None)
    assert line["validations"][0]["worker"] == anonymous_worker_id(validator.pk, None)
    assert line["validations"][1]["worker"] == anonymous_worker_id(None, campaign_worker.pk)
    assert len({line["worker"], *(v["worker"] for v in line["validations"])}) == 3
    text = next(example_export_lines(task))
    for secret in ("alice-writer", "bob-validator", "PROLIFIC123"):
        assert secret not in text
    assert '"user_id"' not in text
    settings.EXPORT_WORKER_ID_SALT = "another-salt"
    assert lines_of(task)[0]["worker"] != line["worker"]


def test_round_filter_and_order(task):
    first = ExampleFactory(task=task)
    round_two = task_services.round_open(task)
    second = ExampleFactory(task=task, round=round_two)
    other_task_example = ExampleFactory()
    assert [line["id"] for line in lines_of(task)] == [first.pk, second.pk]
    assert [line["id"] for line in lines_of(task, round_two)] == [second.pk]
    assert other_task_example.pk not in [line["id"] for line in lines_of(task)]


def test_chunk_boundaries_keep_every_example_and_its_validations(task):
    examples = [ExampleFactory(task=task) for _ in range(7)]
    for example in examples[::2]:
        ValidationFactory(example=example)
    lines = lines_of(task, chunk_size=3)
    assert [line["id"] for line in lines] == [example.pk for example in examples]
    assert [len(line["validations"]) for line in lines] == [1, 0, 1, 0, 1, 0, 1]


def test_queries_are_bounded_per_chunk(task, django_assert_max_num_queries):
    bulk_examples(task, 50)
    # 2 setup queries, then per chunk: examples, validations, contexts (+ models once), and
    # the final empty-or-short chunk check.
    with django_assert_max_num_queries(2 + 10 * 3 + 1):
        assert len(list(example_export_lines(task, chunk_size=5))) == 50


@pytest.mark.slow
def test_memory_does_not_grow_with_the_number_of_examples(task):
    def peak_for(count_total):
        tracemalloc.start()
        for _line in example_export_lines(task, chunk_size=1000):
            pass
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return peak

    bulk_examples(task, 5000)
    small = peak_for(5000)
    bulk_examples(task, 15000)
    large = peak_for(20000)
    # Four times the rows, same chunk size: the peak stays about the same (one chunk).
    assert large < small * 1.5, (small, large)


def test_export_view_is_for_owners_only(client, task, owner, user):
    ExampleFactory(task=task)
    url = reverse("annotation:export", args=[task.code])
    assert client.get(url).status_code == 403
    client.force_login(user)
    assert client.get(url).status_code == 403
    client.force_login(owner)
    response = client.get(url + "?round=1")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert "sentiment-round-1.jsonl" in response["Content-Disposition"]
    body = b"".join(response.streaming_content).decode()
    assert len(body.splitlines()) == 1


@pytest.mark.parametrize("value,status", [("abc", 400), ("-1", 400), ("99", 404), ("", 200)])
def test_export_view_bad_round_is_not_a_500(client, task, owner, value, status):
    client.force_login(owner)
    response = client.get(reverse("annotation:export", args=[task.code]), {"round": value})
    assert response.status_code == status


def test_export_of_a_hidden_task_is_not_found_for_others(client, task, user):
    task.hidden = True
    task.save(update_fields=["hidden"])
    client.force_login(user)
    assert client.get(reverse("annotation:export", args=[task.code])).status_code == 404


def test_export_command(task, tmp_path):
    ExampleFactory(task=task)
    round_two = task_services.round_open(task)
    ExampleFactory(task=task, round=round_two)
    output = tmp_path / "out.jsonl"
    call_command("export_examples", task.code, "--output", str(output), stderr=io.StringIO())
    assert len(output.read_text().splitlines()) == 2
    stdout = io.StringIO()
    call_command("export_examples", task.code, "--round", "2", stdout=stdout, stderr=io.StringIO())
    (line,) = stdout.getvalue().splitlines()
    assert json.loads(line)["round"] == 2
    with pytest.raises(CommandError):
        call_command("export_examples", "nope")
    with pytest.raises(CommandError):
        call_command("export_examples", task.code, "--round", "x")
