"""Delta metrics: perturbed predictions scored against the model's own originals."""

from __future__ import annotations

import pytest

from tasks.config.types import PerfMetric
from tasks.metrics import MetricInputError, delta_consistency


def test_consistency_with_pairs_and_several_copies():
    originals = {"u1": "pos", "u2": "neg", "u3": "pos"}
    perturbed = [("u1", "pos"), ("u1", "neg"), ("u2", "neg"), ("u3", "pos")]
    assert delta_consistency("accuracy", originals, perturbed) == 75.0


def test_consistency_with_a_mapping_and_a_perf_metric_object():
    metric = PerfMetric(type="squad_f1", reference_name="answer", name="squad_f1")
    originals = {"u1": "Barack Obama", "u2": "Paris"}
    assert delta_consistency(metric, originals, {"u1": "Obama", "u2": "paris"}) == pytest.approx(
        (200 / 3 + 100) / 2
    )


def test_consistency_ignores_gold_answers_entirely():
    # Both predictions are wrong against any gold, yet perfectly consistent.
    assert delta_consistency("accuracy", {"u1": "wrong"}, [("u1", "wrong")]) == 100.0


def test_missing_original_prediction_counts_as_inconsistent():
    assert delta_consistency("accuracy", {"u1": None, "u2": "a"}, {"u1": None, "u2": "a"}) == 50.0


def test_orphan_perturbed_example_is_an_error():
    with pytest.raises(MetricInputError, match="u9") as raised:
        delta_consistency("accuracy", {"u1": "a"}, [("u9", "a")])
    assert raised.value.code == "metrics.E005"


def test_no_perturbed_examples_is_an_error():
    with pytest.raises(MetricInputError):
        delta_consistency("accuracy", {"u1": "a"}, [])
