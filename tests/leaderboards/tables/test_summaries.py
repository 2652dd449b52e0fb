"""The best model per tag: the same from JSON dicts and from other mappings."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from leaderboards.tables.build import LeaderboardRequest, build_leaderboard_table
from leaderboards.tables.records import DatasetRecord, ModelRecord, ScoreRecord
from leaderboards.tables.results import LeaderboardWeights
from tasks.config import parse_task_config
from tests.leaderboards.boardkit import MAIN


def test_best_per_tag_is_the_same_for_json_dicts_and_other_mappings():
    # Plain dicts (what JSON decodes to) take the numpy path; other mappings the loop.
    specs = parse_task_config(
        (Path(__file__).resolve().parents[3] / "tasks/demo_data/sentiment.yaml").read_text()
    ).metrics()
    datasets = [
        DatasetRecord("alpha", "Alpha", "scoring", 1, 1.0),
        DatasetRecord("beta", "Beta", "scoring", 2, 3.0),
    ]
    models = [ModelRecord(index, f"m{index}", "owner", False, True) for index in range(1, 7)]

    def records(wrap):
        return [
            ScoreRecord(
                model_id=index,
                dataset_slug=slug,
                metrics={MAIN: 50.0 + index},
                per_tag=wrap(
                    {
                        "negation": wrap({MAIN: float(index % 3) + position}),
                        "sarcasm": wrap({MAIN: 7.0}),  # a tie: the smallest key wins
                        "emoji": wrap({MAIN: None if index == 2 else 100.0 - index}),
                    }
                ),
                main_value=50.0 + index,
                ci_low=None,
                ci_high=None,
                columns={},
            )
            for index in range(1, 7)
            for position, slug in enumerate(["alpha", "beta"])
        ]

    tables = [
        build_leaderboard_table(
            LeaderboardRequest(
                task_code="t",
                metric_specs=specs,
                datasets=datasets,
                models=models,
                scores=records(wrap),
                weights=LeaderboardWeights(metrics={}, datasets={}),
            )
        )
        for wrap in (dict, MappingProxyType)
    ]
    assert tables[0].best_per_tag == tables[1].best_per_tag
    assert [(leader.tag, leader.model_name) for leader in tables[0].best_per_tag] == [
        ("emoji", "m1"),
        ("negation", "m2"),
        ("sarcasm", "m1"),
    ]
