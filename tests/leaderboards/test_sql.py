"""The literal SQL of ``leaderboards.sql``: the same behaviour on PostgreSQL and SQLite."""

from __future__ import annotations

import json

import pytest

from leaderboards.models import DatasetExample, EvaluationRun, Prediction
from leaderboards.sql import PREDICTION_ROWS_PER_STATEMENT, board_data_stamp, predictions_insert
from tests.factories import DatasetFactory, ModelFactory, ScoreFactory, TaskFactory


@pytest.fixture
def run_and_examples(task):
    dataset = DatasetFactory(task=task)
    examples = DatasetExample.objects.bulk_create(
        DatasetExample(dataset=dataset, position=index, uid=f"u{index}", inputs={}, gold={})
        for index in range(2 * PREDICTION_ROWS_PER_STATEMENT + 10)
    )
    run = EvaluationRun.objects.create(
        model=ModelFactory(task=task),
        dataset=dataset,
        config_version_id=task.current_config_id,
        total=len(examples),
        shard_size=len(examples),
    )
    return run, [example.pk for example in examples]


OUTPUT = {"label": "positive", "prob": {"positive": 0.75, "negative": 0.25}}
FIELDS = ("example_id", "output", "error_code", "latency_ms", "model_version", "raw_excerpt")


def rows(run, example_ids, label="positive", version="v1"):
    output = json.dumps({**OUTPUT, "label": label})
    return [
        (run.pk, pk, output, 12.5, version, "" if index else "raw")
        for index, pk in enumerate(example_ids)
    ]


@pytest.mark.django_db
def test_predictions_are_written_with_their_fields_and_counted(run_and_examples):
    run, example_ids = run_and_examples
    assert predictions_insert(rows(run, example_ids[:3])) == 3
    stored = list(Prediction.objects.filter(run=run).order_by("example_id").values_list(*FIELDS))
    assert stored == [
        (pk, OUTPUT, "", 12.5, "v1", excerpt)
        for pk, excerpt in zip(example_ids[:3], ["raw", "", ""], strict=True)
    ]
    # The output is stored as JSON, so the database can look inside it.
    assert Prediction.objects.filter(run=run, output__label="positive").count() == 3
    assert all(prediction.created_at for prediction in Prediction.objects.filter(run=run))


@pytest.mark.django_db
def test_existing_predictions_are_kept_and_not_counted(run_and_examples):
    run, example_ids = run_and_examples
    assert predictions_insert(rows(run, example_ids[:5], label="negative", version="old")) == 5
    assert predictions_insert(rows(run, example_ids[:8], version="new")) == 3
    kept = dict(Prediction.objects.filter(run=run).values_list("example_id", "model_version"))
    assert kept == {pk: "old" if index < 5 else "new" for index, pk in enumerate(example_ids[:8])}


@pytest.mark.django_db
def test_many_rows_take_a_statement_per_hundred(run_and_examples, django_assert_max_num_queries):
    run, example_ids = run_and_examples
    with django_assert_max_num_queries(3):
        assert predictions_insert(rows(run, example_ids)) == len(example_ids)
    assert Prediction.objects.filter(run=run).count() == len(example_ids)
    with django_assert_max_num_queries(0):
        assert predictions_insert([]) == 0


@pytest.mark.django_db
def test_the_board_data_stamp_changes_with_the_tasks_models_and_scores(
    task, django_assert_num_queries
):
    dataset = DatasetFactory(task=task)
    elsewhere = ScoreFactory(dataset=DatasetFactory(task=TaskFactory()))

    def stamp():
        with django_assert_num_queries(1):
            return board_data_stamp(task.pk)

    empty = stamp()
    assert (empty[0], empty[2]) == (0, 0)
    model = ModelFactory(task=task)
    score = ScoreFactory(model=model, dataset=dataset)
    stamps = [empty, stamp()]
    assert (stamps[-1][0], stamps[-1][2]) == (1, 1)
    elsewhere.save()
    assert stamp() == stamps[-1]
    for change in (score.save, model.save, score.delete):
        change()
        stamps.append(stamp())
    assert len(set(stamps)) == len(stamps)
    assert stamps[-1][2] == 0
