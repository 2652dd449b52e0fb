"""The metric registry."""

from __future__ import annotations

import pytest

from tasks.metrics import METRICS, MetricError, UnknownMetric, get_metric

DOCUMENTED = {
    "accuracy",
    "macro_f1",
    "micro_f1",
    "squad_f1",
    "exact_match",
    "bleu",
    "chrf",
    "sp_bleu",
    "vqa_accuracy",
}


def test_every_documented_metric_is_registered():
    assert set(METRICS) == DOCUMENTED
    for name in DOCUMENTED:
        assert get_metric(name).name == name


def test_unknown_metric_names_the_known_ones():
    with pytest.raises(UnknownMetric, match="accuracy") as raised:
        get_metric("rouge")
    assert raised.value.code == "metrics.E001"
    assert isinstance(raised.value, MetricError)
    assert "rouge" in str(raised.value)


@pytest.mark.parametrize("name", sorted(DOCUMENTED - {"sp_bleu"}))
def test_perfect_predictions_score_100(name):
    golds = ["the cat sat on the mat today", "a dog barked at the postman loudly"]
    assert get_metric(name).score(list(golds), golds) == pytest.approx(100.0)


@pytest.mark.parametrize("name", sorted(DOCUMENTED - {"sp_bleu"}))
def test_failed_predictions_score_0(name):
    golds = ["the cat sat on the mat today", "a dog barked at the postman loudly"]
    assert get_metric(name).score([None, None], golds) == 0.0
