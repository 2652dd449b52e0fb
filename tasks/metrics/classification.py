"""Label metrics: accuracy, macro F1 and micro F1.

* ``accuracy``: an example is right when the prediction equals the gold, or any of the
  gold's acceptable answers when the gold is a list. For a ``multilabel`` prediction (a
  list) the gold is one label set compared without regard to order, or a list of such sets.
* ``macro_f1`` / ``micro_f1``: scikit-learn's ``f1_score(average="macro"|"micro")`` over the
  labels seen in the golds and the predictions, when every example has an answer. A gold
  given as a list contributes its **first** answer (F1 needs one true class per example).
  Counts are kept per example so that tags and bootstrap resamples re-use them; a label
  absent from a resample drops out of the macro average, exactly as scikit-learn would do
  on that resample.

Missing answers. A ``None`` prediction (the model failed, or a partial predictions file
has no answer for the example) is wrong everywhere, and never scores more than a wrong
answer would, whichever wrong answer that is:

* accuracy: 0 for the example, as for any wrong answer;
* micro F1: a false negative of the gold label and one false positive (of a label that is
  no class), exactly what any wrong answer adds;
* macro F1: a wrong answer adds a false positive to the one label it names, or, if that
  label is new, a label of F1 0 to the average. A missing answer counts both at once: a
  false negative of its gold label, a false positive of **every other** label seen (at
  most what any set of wrong answers can add to a label), and one phantom label of F1 0
  in the average (at most one new label per wrong answer). So the macro F1 of a file with
  ``m`` missing answers is at most that of the same file with any ``m`` answers put in.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from tasks.metrics.base import (
    Metric,
    Options,
    gold_alternatives,
    is_alternatives,
    mean_from_statistics,
    mean_statistics,
    means_from_statistics,
)


def _comparable(value: object) -> object:
    """Return what equality is decided on: a selection's text, else the value itself."""
    if isinstance(value, Mapping) and "text" in value:
        return value["text"]
    return value


def _same_label_set(prediction: Sequence[object], gold: object) -> bool:
    if not is_alternatives(gold):
        return False
    try:
        return frozenset(prediction) == frozenset(gold)  # type: ignore[arg-type]
    except TypeError:  # unhashable items: fall back on ordered comparison
        return list(prediction) == list(gold)  # type: ignore[arg-type]


def is_correct(prediction: object, gold: object) -> bool:
    """Return True when ``prediction`` is an acceptable answer for ``gold``."""
    if prediction is None:
        return False
    prediction = _comparable(prediction)
    if is_alternatives(prediction):
        # A multilabel value: the gold is one label set, or a list of acceptable sets.
        candidates = gold if gold and all(is_alternatives(g) for g in gold) else [gold]  # type: ignore[union-attr]
        return any(_same_label_set(prediction, candidate) for candidate in candidates)  # type: ignore[arg-type]
    return any(
        candidate is not None and _comparable(candidate) == prediction
        for candidate in gold_alternatives(gold)
    )


def _accuracy_example(prediction: object, gold: object, options: Options) -> float:
    return 100.0 if is_correct(prediction, gold) else 0.0


def _accuracy_statistics(
    predictions: Sequence[Any], golds: Sequence[Any], options: Options
) -> np.ndarray:
    return mean_statistics(
        [
            _accuracy_example(prediction, gold, options)
            for prediction, gold in zip(predictions, golds, strict=True)
        ]
    )


# -- F1 ------------------------------------------------------------------------------------


def first_gold_label(gold: object) -> object:
    """Return the label F1 scores against: the gold, or its first answer if a list."""
    if is_alternatives(gold):
        return gold[0] if gold else None  # type: ignore[index]
    return gold


def _label_key(value: object) -> Hashable:
    value = _comparable(value)
    if is_alternatives(value):
        return tuple(_label_key(item) for item in value)  # type: ignore[union-attr]
    if isinstance(value, Hashable):
        return value
    return repr(value)


def _f1_statistics(
    predictions: Sequence[Any], golds: Sequence[Any], options: Options
) -> np.ndarray:
    """Return per-example counts: ``[TP | FP | FN | missing per gold label]`` per label, then
    one column counting the missing answers (see ``missing answers`` in the module docstring).
    """
    gold_keys = [
        None if (label := first_gold_label(gold)) is None else _label_key(label) for gold in golds
    ]
    prediction_keys = [None if p is None else _label_key(p) for p in predictions]
    index: dict[Hashable, int] = {}
    for key in (*gold_keys, *prediction_keys):
        if key is not None and key not in index:
            index[key] = len(index)
    label_count = len(index)
    rows = np.zeros((len(golds), 4 * label_count + 1), dtype=np.float64)
    for row, (gold_key, prediction_key) in enumerate(zip(gold_keys, prediction_keys, strict=True)):
        if gold_key is not None and gold_key == prediction_key:
            rows[row, index[gold_key]] = 1
            continue
        if prediction_key is not None:
            rows[row, label_count + index[prediction_key]] = 1
        else:
            rows[row, -1] = 1
            if gold_key is not None:
                rows[row, 3 * label_count + index[gold_key]] = 1
        if gold_key is not None:
            rows[row, 2 * label_count + index[gold_key]] = 1
    return rows


def _f1_counts(summed_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return, for rows of summed ``_f1_statistics``, the true positives and the F1
    denominators (``2 TP + FP + FN``) per label with the missing answers' false positives
    added to every label seen in the row except their gold, and the missing answers' count.
    """
    label_count = (summed_rows.shape[1] - 1) // 4
    true_positives = summed_rows[:, :label_count]
    false_positives = summed_rows[:, label_count : 2 * label_count]
    false_negatives = summed_rows[:, 2 * label_count : 3 * label_count]
    denominators = 2 * true_positives + false_positives + false_negatives
    missing = summed_rows[:, -1]
    missing_of_gold = summed_rows[:, 3 * label_count : 4 * label_count]
    seen = denominators > 0  # labels that occur in this (re)sample at all
    denominators = denominators + np.where(seen, missing[:, None] - missing_of_gold, 0.0)
    return true_positives, denominators, missing


def _macro_f1_rows(summed_rows: np.ndarray, options: Options) -> np.ndarray:
    """Return the macro F1 of every row of summed statistics (0 where nothing is seen).

    Each missing answer also adds one phantom label of F1 0 to the average.
    """
    true_positives, denominators, missing = _f1_counts(np.atleast_2d(summed_rows))
    seen = denominators > 0
    ratios = np.zeros_like(true_positives)
    np.divide(2 * true_positives, denominators, out=ratios, where=seen)
    labels_averaged = seen.sum(axis=1) + missing
    scores = np.zeros(len(missing), dtype=np.float64)
    np.divide(ratios.sum(axis=1), labels_averaged, out=scores, where=labels_averaged > 0)
    return 100.0 * scores


def _micro_f1_rows(summed_rows: np.ndarray, options: Options) -> np.ndarray:
    """Return the micro F1 of every row: a missing answer is a false negative of its gold and
    a false positive (of a phantom label)."""
    rows = np.atleast_2d(summed_rows)
    label_count = (rows.shape[1] - 1) // 4
    true_positives = rows[:, :label_count].sum(axis=1)
    denominators = 2 * true_positives + rows[:, label_count : 3 * label_count].sum(axis=1)
    denominators = denominators + rows[:, -1]
    scores = np.zeros(rows.shape[0], dtype=np.float64)
    np.divide(2 * true_positives, denominators, out=scores, where=denominators > 0)
    return 100.0 * scores


def _macro_f1_from_statistics(summed: np.ndarray, options: Options) -> float:
    return float(_macro_f1_rows(summed, options)[0])


def _micro_f1_from_statistics(summed: np.ndarray, options: Options) -> float:
    return float(_micro_f1_rows(summed, options)[0])


def _f1_example(prediction: object, gold: object, options: Options) -> float:
    return 100.0 if is_correct(prediction, first_gold_label(gold)) else 0.0


ACCURACY = Metric(
    name="accuracy",
    description="Share of examples whose prediction is an acceptable gold answer.",
    statistics=_accuracy_statistics,
    score_from_statistics=mean_from_statistics,
    example_score=_accuracy_example,
    scores_from_statistics=means_from_statistics,
)
MACRO_F1 = Metric(
    name="macro_f1",
    description="Unweighted mean of the per-label F1 over the labels seen.",
    statistics=_f1_statistics,
    score_from_statistics=_macro_f1_from_statistics,
    example_score=_f1_example,
    is_decomposable=False,
    scores_from_statistics=_macro_f1_rows,
)
MICRO_F1 = Metric(
    name="micro_f1",
    description="F1 of the pooled true/false positives and false negatives.",
    statistics=_f1_statistics,
    score_from_statistics=_micro_f1_from_statistics,
    example_score=_f1_example,
    is_decomposable=False,
    scores_from_statistics=_micro_f1_rows,
)
