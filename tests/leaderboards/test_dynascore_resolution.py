"""The Dynascore compares each metric at its resolution: noise below it moves no model."""

from __future__ import annotations

import random

import numpy as np
import pytest

from leaderboards.dynascore import (
    BAD_RESOLUTION,
    LOWER,
    DynascoreError,
    MetricInput,
    compute_dynascore_arrays,
    compute_dynascores,
)
from tasks.metrics import JOB_METRICS, quantize_to_resolution

MEMORY = JOB_METRICS["memory_utilization"]

# Three sentiment models 10 to 23 points of macro-F1 apart whose reported memory differs
# by 0.0003 GB at most: the case that made the default Dynascore 99.9 % memory.
NOISY_MEMORY = {
    "weak": {"macro_f1": 70.0, "memory": 0.5000},
    "middling": {"macro_f1": 80.0, "memory": 0.5003},
    "strong": {"macro_f1": 93.0, "memory": 0.5001},
}


def metrics(resolution: float) -> list[MetricInput]:
    return [
        MetricInput("macro_f1", weight=4.0),
        MetricInput("memory", LOWER, weight=1.0, offset=16.0, resolution=resolution),
    ]


def test_exact_memory_noise_makes_almost_all_of_the_score():
    # Without a resolution, 0.0003 GB is worth thousands of F1 points: the bug.
    result = compute_dynascores(NOISY_MEMORY, metrics(0.0), main_metric="macro_f1")
    strong = result.ranking[0]
    assert strong.contributions["memory"] / strong.dynascore > 0.99


def test_memory_noise_below_the_resolution_decides_nothing():
    result = compute_dynascores(NOISY_MEMORY, metrics(MEMORY.resolution), main_metric="macro_f1")
    assert [score.model for score in result.ranking] == ["strong", "middling", "weak"]
    assert result.amrs["memory"] == 0.0
    assert result.non_contributing_metrics == ("memory",)
    for score in result.ranking:
        assert "memory" not in score.contributions  # its share is 0
        assert score.dynascore == pytest.approx(0.8 * NOISY_MEMORY[score.model]["macro_f1"])


def test_the_registry_resolves_memory_to_a_tenth_of_a_gigabyte():
    assert MEMORY.resolution == 0.1 and not MEMORY.relative and MEMORY.self_reported
    assert not JOB_METRICS["examples_per_second"].self_reported
    assert JOB_METRICS["examples_per_second"].relative


@pytest.mark.parametrize(
    "first, second, resolution, relative, tied",
    [
        (0.5000, 0.5003, 0.1, False, True),
        (100.0, 102.0, 5.0, False, True),
        (100.0, 110.0, 5.0, False, False),
        (10.0, 10.3, 0.1, True, True),  # 3 % apart, compared at 10 %
        (10.0, 13.0, 0.1, True, False),
        (850.0, 880.0, 0.1, True, True),  # relative: the same at any scale
        # Values either side of a step's edge differ by one step, never more.
        (1.149, 1.151, 0.1, False, False),
        (0.5000, 0.5003, 0.0, False, False),  # exact
    ],
)
def test_values_within_a_step_are_ties(first, second, resolution, relative, tied):
    same = quantize_to_resolution(first, resolution, relative=relative) == quantize_to_resolution(
        second, resolution, relative=relative
    )
    assert same is tied


def test_quantize_keeps_zero_missing_and_exact_values():
    assert quantize_to_resolution(0.0, 0.1, relative=True) == 0.0
    assert np.isnan(quantize_to_resolution(float("nan"), 0.1))
    assert quantize_to_resolution(0.12345, 0.0) == 0.12345
    assert quantize_to_resolution(1.26, 0.1) == pytest.approx(1.3)
    assert quantize_to_resolution(1.151, 0.1) - quantize_to_resolution(1.149, 0.1) == (
        pytest.approx(0.1)
    )


def test_resolution_ties_leave_the_other_metrics_to_decide():
    models = {
        "a": {"perf": 60.0, "latency": 101.0, "speed": 10.0},
        "b": {"perf": 70.0, "latency": 102.0, "speed": 30.0},
        "c": {"perf": 80.0, "latency": 100.0, "speed": 20.0},
    }
    result = compute_dynascores(
        models,
        [
            MetricInput("perf", weight=2.0),
            MetricInput("latency", LOWER, weight=1.0, offset=110.0, resolution=5.0),
            MetricInput("speed", weight=1.0, resolution=0.1, relative_resolution=True),
        ],
        main_metric="perf",
    )
    # Latency: 100, 101 and 102 ms are one step at 5 ms, so it separates no models.
    assert result.non_contributing_metrics == ("latency",)
    assert result.amrs["speed"] > 0
    assert all(set(score.contributions) == {"perf", "speed"} for score in result.ranking)


def test_a_negative_resolution_is_a_coded_error():
    with pytest.raises(DynascoreError) as caught:
        compute_dynascores(
            {"a": {"perf": 1.0}},
            [MetricInput("perf", resolution=-1.0)],
            main_metric="perf",
        )
    assert caught.value.code == BAD_RESOLUTION


def test_fast_path_equals_the_reference_with_resolutions():
    generator = random.Random(26)
    inputs = [
        MetricInput("perf", weight=3.0),
        MetricInput("speed", weight=1.0, resolution=0.1, relative_resolution=True),
        MetricInput("latency", LOWER, weight=1.0, offset=400.0, resolution=5.0),
        MetricInput("memory", LOWER, weight=0.5, offset=16.0, resolution=0.1),
    ]
    for _ in range(30):
        count = generator.randint(1, 12)
        table = {
            f"m{index}": {
                "perf": round(generator.uniform(40, 95), generator.choice([0, 1, 4])),
                "speed": generator.choice([None, generator.uniform(0.5, 500)]),
                "latency": generator.uniform(20, 400),
                "memory": generator.choice([0.5, 0.5002, generator.uniform(0.2, 8)]),
            }
            for index in range(count)
        }
        reference = compute_dynascores(table, inputs, main_metric="perf")
        names = sorted(table)
        values = np.array(
            [
                [np.nan if table[name][m.name] is None else table[name][m.name] for m in inputs]
                for name in names
            ]
        )
        fast = compute_dynascore_arrays(names, values, inputs, main_metric="perf").as_result()
        assert fast.ranking == reference.ranking
        assert dict(fast.amrs) == dict(reference.amrs)
        assert fast.non_contributing_metrics == reference.non_contributing_metrics
