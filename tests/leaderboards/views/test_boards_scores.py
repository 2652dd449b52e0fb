"""What the leaderboard page and its JSON say about the Dynascore: self-reported figures,
each metric's share of a score, and models scored from predictions files."""

from __future__ import annotations

import html as html_lib

import pytest

from tests.factories import DatasetFactory, TaskFactory, demo_config
from tests.leaderboards.boardkit import MAIN, endpoint, scored, url


@pytest.fixture
def board(task):
    dataset = DatasetFactory(task=task, slug="only")
    scored(
        task,
        dataset,
        {
            "accurate": endpoint(90.0, 10.0, 300.0, 1.0),
            "quick": endpoint(80.0, 40.0, 50.0, 1.2),
            "middle": endpoint(85.0, 20.0, 120.0, 1.1),
        },
    )
    return task


def percent(share):
    return f"{share * 100:.0f}%"


@pytest.mark.django_db
def test_memory_is_marked_self_reported_on_the_page_and_in_the_json(client, board):
    page = html_lib.unescape(client.get(url("task", board.code)).content.decode())
    assert 'data-testid="self-reported"' in page
    assert "reported by the model's endpoint itself" in page
    assert (
        'Memory (GB) <span class="metric-arrow">↓</span> <span class="text-muted">(self-reported)'
        in page
    )
    columns = {c["name"]: c for c in client.get(url("task_json", board.code)).json()["metrics"]}
    assert columns["memory_utilization"]["self_reported"] is True
    assert columns["memory_utilization"]["default_weight"] == 0.0
    assert columns["latency_p95_ms"]["self_reported"] is False
    assert columns["latency_p95_ms"]["resolution"] == 5.0


@pytest.mark.django_db
def test_an_owner_who_counts_self_reported_figures_gets_memory_in_the_default_weights(client):
    yaml_text = demo_config("sentiment").replace(
        "aggregation_metric:\n  type: dynascore",
        "aggregation_metric:\n  type: dynascore\n  count_self_reported: true",
    )
    task = TaskFactory(code="counted", yaml_text=yaml_text)
    dataset = DatasetFactory(task=task, slug="only")
    scored(
        task, dataset, {"a": endpoint(90.0, 10.0, 300.0, 1.0), "b": endpoint(80.0, 9.0, 310.0, 3.0)}
    )
    body = client.get(url("task_json", task.code)).json()
    assert body["weights"]["metrics"]["memory_utilization"] == 1.0
    assert all(row["shares"]["memory_utilization"] > 0 for row in body["rows"])
    page = html_lib.unescape(client.get(url("task", task.code)).content.decode())
    assert "This task's owners count it in the default weighting." in page


@pytest.mark.django_db
def test_each_row_draws_its_shares_and_warns_when_another_metric_dominates(client, board):
    query = f"?w_{MAIN}=4&w_memory_utilization=1"
    body = client.get(url("task_json", board.code) + query).json()
    page = html_lib.unescape(client.get(url("task", board.code) + query).content.decode())
    labels = {column["name"]: column["label"] for column in body["metrics"]}
    assert page.count('data-testid="share-bar"') == len(body["rows"]) == 3
    for row in body["rows"]:
        assert sum(row["shares"].values()) == pytest.approx(1.0)
        described = ", ".join(
            f"{labels[column['name']]} {percent(row['shares'][column['name']])}"
            for column in body["metrics"]
            if row["shares"].get(column["name"], 0) > 0
        )
        assert f'aria-label="Share of the Dynascore: {described}"' in page
    # Memory saved (16 GB minus the use) over a small AMRS: most of every score.
    dominated = [row for row in body["rows"] if row["dominant_metric"] == "memory_utilization"]
    assert dominated
    for row in dominated:
        share = percent(row["shares"]["memory_utilization"])
        assert f"Memory (GB) makes up {share} of this score" in page
    # Under the default weights memory weighs 0: no warning about it.
    default = client.get(url("task", board.code)).content.decode()
    assert "Memory (GB) makes up" not in default


@pytest.mark.django_db
def test_a_perfect_predictions_file_is_ranked_first_with_its_job_metrics_na(client, board):
    dataset = board.datasets.get(slug="only")
    scored(board, dataset, {"perfect-file": {MAIN: 100.0}, "poor-file": {MAIN: 30.0}})
    body = client.get(url("task_json", board.code)).json()
    names = [row["model"] for row in body["rows"]]
    assert names[0] == "perfect-file" and names[-1] == "poor-file"
    assert [row["rank"] for row in body["rows"]] == [1, 2, 3, 4, 5]
    assert body["rows"][0]["predictions_file"] is True
    assert body["rows"][0]["metrics"]["latency_p95_ms"] is None
    assert body["predictions_file_models"] == 2
    assert "latency_p95_ms" in body["left_out_metrics"]
    page = client.get(url("task", board.code)).content.decode()
    # Throughput, latency and memory of each of the two files.
    assert page.count(">n/a (predictions file)</td>") == 2 * 3
    assert 'data-testid="left-out-note"' in page
    text = " ".join(page.split())
    assert (
        "the Dynascore leaves Throughput (ex/s), Latency p95 (ms), Memory (GB) out for "
        "every model" in text
    )


@pytest.mark.django_db
def test_without_predictions_files_there_is_no_left_out_note(client, board):
    page = client.get(url("task", board.code)).content.decode()
    assert 'data-testid="left-out-note"' not in page
    assert ">n/a (predictions file)</td>" not in page
