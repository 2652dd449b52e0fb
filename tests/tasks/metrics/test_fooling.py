"""model_fooled follows the config's model_wrong_metric."""

from __future__ import annotations

import pytest

from tasks.config import parse_task_config

QA_CONFIG = """
context:
  - name: passage
    type: string
input:
  - name: question
    type: string
  - name: answer
    type: context_string_selection
    reference_name: passage
output:
  - name: answer
model_wrong_metric:
  type: string_f1
  reference_name: answer
  threshold: 0.4
perf_metric:
  type: squad_f1
  reference_name: answer
"""

NLI_CONFIG = """
context:
  - name: premise
    type: string
input:
  - name: hypothesis
    type: string
  - name: label
    type: multiclass
    labels: [entailed, neutral, contradictory]
  - name: answer
    type: context_string_selection
    reference_name: premise
output:
  - name: label
  - name: answer
model_wrong_metric:
  type: exact_match
  reference_names: [label, answer]
perf_metric:
  type: accuracy
  reference_name: label
"""

ASK_CONFIG = """
input:
  - name: statement
    type: string
  - name: label
    type: multiclass
    labels: [agree, disagree]
output:
  - name: label
perf_metric:
  type: accuracy
  reference_name: label
"""


@pytest.fixture(scope="module")
def model_fooled():
    from tasks.metrics import model_fooled

    return model_fooled


def test_string_f1_threshold(model_fooled):
    config = parse_task_config(QA_CONFIG)
    target = {"answer": {"text": "Barack Obama", "start": 10}}
    assert model_fooled(config, target, {"answer": "Obama"}) is False  # F1 2/3
    assert model_fooled(config, target, {"answer": "the president"}) is True
    assert model_fooled(config, target, {}) is True  # no answer at all


def test_string_f1_at_threshold_is_not_fooled(model_fooled):
    config = parse_task_config(QA_CONFIG.replace("0.4", "0.5"))
    # F1 of "a b" against "a c" is exactly 0.5: fooled only below the threshold.
    assert model_fooled(config, {"answer": "a b"}, {"answer": "b c"}) is False


def test_exact_match_any_difference_fools(model_fooled):
    config = parse_task_config(NLI_CONFIG)
    target = {"label": "neutral", "answer": {"text": "a cat", "start": 0}}
    assert model_fooled(config, target, {"label": "neutral", "answer": "a cat"}) is False
    assert (
        model_fooled(config, target, {"label": "neutral", "answer": {"text": "a cat", "start": 9}})
        is False
    )
    assert model_fooled(config, target, {"label": "entailed", "answer": "a cat"}) is True
    assert model_fooled(config, target, {"label": "neutral", "answer": "cat"}) is True
    assert model_fooled(config, target, {"label": "neutral"}) is True


def test_exact_match_without_target_cannot_decide(model_fooled):
    config = parse_task_config(NLI_CONFIG)
    assert model_fooled(config, {"label": "neutral"}, {"label": "neutral", "answer": "x"}) is None


def test_ask_user_leaves_it_to_the_worker(model_fooled):
    config = parse_task_config(ASK_CONFIG)
    assert model_fooled(config, {"label": "agree"}, {"label": "disagree"}) is None
