"""The table's Dynascore: resolutions, self-reported figures, shares and predictions files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from leaderboards.tables.build import LeaderboardRequest, build_leaderboard_table, score_shares
from leaderboards.tables.query import default_weights
from leaderboards.tables.records import DatasetRecord, ModelRecord, ScoreRecord
from leaderboards.tables.results import LeaderboardWeights
from tasks.config import parse_task_config
from tests.leaderboards.boardkit import MAIN, endpoint

SENTIMENT = (Path(__file__).resolve().parents[3] / "tasks/demo_data/sentiment.yaml").read_text()
DATASETS = [DatasetRecord("only", "Only", "scoring", 1, 1.0)]


def config(count_self_reported: bool | None = None):
    text = SENTIMENT
    if count_self_reported is not None:
        text = text.replace(
            "aggregation_metric:\n  type: dynascore",
            "aggregation_metric:\n  type: dynascore\n"
            f"  count_self_reported: {str(count_self_reported).lower()}",
        )
    return parse_task_config(text)


def table(models: dict[str, dict], *, specs=None, weights=None):
    specs = specs if specs is not None else config().metrics()
    records = [ModelRecord(index, name, "owner", False, True) for index, name in enumerate(models)]
    scores = [
        ScoreRecord(index, "only", metrics, {}, metrics.get(MAIN), None, None, {})
        for index, metrics in enumerate(models.values())
    ]
    return build_leaderboard_table(
        LeaderboardRequest(
            task_code="sentiment",
            metric_specs=specs,
            datasets=DATASETS,
            models=records,
            scores=scores,
            weights=weights or default_weights(specs, DATASETS),
        )
    )


def test_memory_within_its_resolution_no_longer_decides_the_order():
    models = {
        "weak": endpoint(70.0, 20.0, 100.0, 0.5000),
        "middling": endpoint(80.0, 20.0, 100.0, 0.5003),
        "strong": endpoint(93.0, 20.0, 100.0, 0.5001),
    }
    # Even with memory weighed in (a visitor's slider), 0.0003 GB is noise.
    weights = LeaderboardWeights(
        metrics={MAIN: 4.0, "memory_utilization": 1.0, "examples_per_second": 1.0},
        datasets={"only": 1.0},
    )
    result = table(models, weights=weights)
    assert [row.model_name for row in result.rows] == ["strong", "middling", "weak"]
    for row in result.rows:
        assert row.shares.get("memory_utilization", 0.0) == 0.0
        assert row.shares[MAIN] == pytest.approx(1.0)
        assert row.dominant_metric is None
    columns = {column.name: column for column in result.metrics}
    assert not columns["memory_utilization"].contributes
    assert not columns["examples_per_second"].contributes  # every model at 20 ex/s


def test_memory_is_self_reported_and_off_by_default_unless_the_owner_counts_it():
    default = {spec.name: spec.default_weight for spec in config().metrics()}
    counted = {spec.name: spec.default_weight for spec in config(True).metrics()}
    assert default["memory_utilization"] == 0.0
    assert counted["memory_utilization"] == 1.0
    assert {name: w for name, w in default.items() if name != "memory_utilization"} == {
        name: w for name, w in counted.items() if name != "memory_utilization"
    }
    models = {
        "big": endpoint(80.0, 20.0, 100.0, 9.0),
        "claims-tiny": endpoint(79.0, 20.0, 100.0, 0.1),
    }
    off = table(models)
    on = table(models, specs=config(True).metrics())
    assert off.weights.metrics["memory_utilization"] == 0.0
    assert on.weights.metrics["memory_utilization"] == 1.0
    assert all(row.shares.get("memory_utilization", 0.0) == 0.0 for row in off.rows)
    claims = next(row for row in on.rows if row.model_name == "claims-tiny")
    assert claims.shares["memory_utilization"] > 0
    memory = next(c for c in off.as_dict()["metrics"] if c["name"] == "memory_utilization")
    assert memory["self_reported"] is True and memory["resolution"] == 0.1
    assert memory["default_weight"] == 0.0
    speed = next(c for c in off.as_dict()["metrics"] if c["name"] == "examples_per_second")
    assert speed["self_reported"] is False and speed["relative_resolution"] is True


def test_shares_sum_to_one_and_flag_a_dominant_other_metric():
    shares, dominant = score_shares({MAIN: 20.0, "latency_p95_ms": 60.0}, MAIN)
    assert shares == {MAIN: 0.25, "latency_p95_ms": 0.75}
    assert dominant == "latency_p95_ms"
    shares, dominant = score_shares({MAIN: 50.0, "latency_p95_ms": 50.0}, MAIN)
    assert dominant is None  # exactly half is not more than half
    shares, dominant = score_shares({MAIN: 90.0, "memory_utilization": -10.0}, MAIN)
    assert shares == {MAIN: 1.0, "memory_utilization": 0.0} and dominant is None
    assert score_shares({}, MAIN) == ({}, None)
    # The main metric making up most of the score is what the weights ask for.
    assert score_shares({MAIN: 90.0, "latency_p95_ms": 10.0}, MAIN)[1] is None


def test_a_predictions_file_model_is_ranked_and_a_perfect_one_first():
    models = {
        "fast": endpoint(80.0, 400.0, 20.0, 1.0),
        "slow": endpoint(85.0, 5.0, 900.0, 1.0),
        "perfect-file": {MAIN: 100.0},
        "poor-file": {MAIN: 40.0},
    }
    result = table(models)
    assert [row.model_name for row in result.rows] == ["perfect-file", "slow", "fast", "poor-file"]
    assert [row.rank for row in result.rows] == [1, 2, 3, 4]
    assert not any(row.incomplete for row in result.rows)
    files = {row.model_name for row in result.rows if row.predictions_file}
    assert files == {"perfect-file", "poor-file"}
    assert result.predictions_file_models == 2
    assert set(result.left_out_metrics) == {
        "examples_per_second",
        "latency_p95_ms",
        "memory_utilization",
    }
    assert all(column.left_out for column in result.metrics if column.kind == "job")
    # Every ranked model is scored on the metrics they all have: the main one here.
    for row in result.rows:
        assert set(row.contributions) == {MAIN}
    body = result.as_dict()
    perfect = body["rows"][0]
    assert perfect["predictions_file"] is True
    assert perfect["metrics"]["examples_per_second"] is None
    assert body["rows"][1]["predictions_file"] is False


def test_without_predictions_files_the_job_metrics_count():
    models = {
        "fast": endpoint(80.0, 400.0, 20.0, 1.0),
        "slow": endpoint(85.0, 5.0, 900.0, 1.0),
    }
    result = table(models)
    assert result.left_out_metrics == () and result.predictions_file_models == 0
    for row in result.rows:
        assert set(row.contributions) == {MAIN, "examples_per_second", "latency_p95_ms"}
        assert not row.predictions_file


def test_an_endpoint_missing_one_job_metric_is_still_incomplete():
    models = {
        "complete": endpoint(80.0, 400.0, 20.0, 1.0),
        "no-speed": {MAIN: 99.0, "latency_p95_ms": 30.0},
    }
    result = table(models)
    assert [row.model_name for row in result.rows] == ["complete", "no-speed"]
    assert result.rows[1].incomplete and not result.rows[1].predictions_file
    assert result.rows[1].missing_metrics == ("examples_per_second",)


@pytest.mark.parametrize("memory", [1e308, -1.0, 5000.0, 1e13])
@pytest.mark.parametrize("memory_weight", [0.0, 1.0, 5.0])
def test_a_figure_no_measurement_can_have_is_missing_and_the_table_stays_finite(
    memory, memory_weight
):
    # Issue 30: a stored memory of 1e308 GB overflowed the memory AMRS under every weighting.
    models = {
        "honest": endpoint(80.0, 20.0, 100.0, 2.0),
        "absurd": endpoint(79.0, 30.0, 90.0, memory),
        "other": endpoint(70.0, 25.0, 120.0, 4.0),
    }
    weights = LeaderboardWeights(
        metrics={MAIN: 4.0, "memory_utilization": memory_weight, "examples_per_second": 1.0},
        datasets={"only": 1.0},
    )
    result = table(models, weights=weights)
    assert result.error is None
    rows = {row.model_name: row for row in result.rows}
    assert rows["absurd"].metrics["memory_utilization"] is None
    assert rows["absurd"].incomplete is (memory_weight > 0)
    for column in result.metrics:
        assert column.amrs is None or math.isfinite(column.amrs)
    # Strict JSON: no NaN or infinity anywhere in the table.
    json.dumps(result.as_dict(), allow_nan=False)
