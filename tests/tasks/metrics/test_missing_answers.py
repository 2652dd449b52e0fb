"""Leaving answers out never raises a score, for every metric of the registry.

A missing answer (``None``: the model failed, or a predictions file accepted as partial has
no line for the example) is scored so that a file with answers left out never scores more
than the same file with *any* answers in their place, right or wrong: leaving out the
hard examples cannot buy rank. Checked on random datasets, on the corpus score and on
weighted rows of statistics (what bootstrap resamples and tags sum).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.metrics import METRICS, get_metric
from tasks.metrics import translation as translation_metrics

LABELS = ["a", "b", "c", "d"]
# Answers may name labels no gold has: a wrong answer can be anything.
ANSWER_LABELS = [*LABELS, "x", "y", "z"]
WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "red", "2", "two", ".", "Cat!", "an"]

label_golds = st.one_of(
    st.sampled_from(LABELS), st.lists(st.sampled_from(LABELS), min_size=1, max_size=3)
)
label_answers = st.sampled_from(ANSWER_LABELS)
texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)
text_golds = st.one_of(texts, st.lists(texts, min_size=1, max_size=10))
selection_answers = st.one_of(texts, texts.map(lambda text: {"text": text, "start": 0}))

# What each metric of the registry scores: (gold strategy, answer strategy).
DATA = {
    "accuracy": (label_golds, label_answers),
    "macro_f1": (label_golds, label_answers),
    "micro_f1": (label_golds, label_answers),
    "squad_f1": (text_golds, selection_answers),
    "exact_match": (text_golds, selection_answers),
    "vqa_accuracy": (st.lists(texts, min_size=1, max_size=10), texts),
    "bleu": (text_golds, texts),
    "chrf": (text_golds, texts),
    "sp_bleu": (text_golds, texts),
}


class CharacterPieces:
    """A SentencePiece stand-in: sentencepiece is not a dependency, and spBLEU's rule for
    missing answers is BLEU's whatever the pieces are. Splits a text into characters, with
    SentencePiece's word-boundary mark."""

    def encode(self, text: str, out_type=str) -> list[str]:
        return list("▁" + "▁".join(text.split())) if text.split() else []


@pytest.fixture
def metric_options(tmp_path, monkeypatch):
    model = tmp_path / "pieces.model"
    model.write_bytes(b"character pieces")
    monkeypatch.setattr(translation_metrics, "_load_sentencepiece", lambda path: CharacterPieces())
    return {"sp_bleu": {"spm_model": str(model)}}


@st.composite
def files_with_answers_left_out(draw, metric_name: str):
    """Return (golds, full answers, the same answers with some left out, weights)."""
    gold_strategy, answer_strategy = DATA[metric_name]
    size = draw(st.integers(min_value=1, max_value=14))
    golds = draw(st.lists(gold_strategy, min_size=size, max_size=size))
    full = draw(st.lists(answer_strategy, min_size=size, max_size=size))
    # Often the left-out answers are the wrong ones, as a participant would choose them.
    kept = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    partial = [answer if keep else None for answer, keep in zip(full, kept, strict=True)]
    weights = draw(st.lists(st.integers(min_value=0, max_value=3), min_size=size, max_size=size))
    return golds, full, partial, weights


def test_every_metric_of_the_registry_is_checked():
    assert set(DATA) == set(METRICS)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_leaving_answers_out_never_raises_a_score(name, metric_options):
    metric = get_metric(name)
    options = metric_options.get(name, {})

    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(files_with_answers_left_out(name))
    def check(case):
        golds, full, partial, weights = case
        full_score = metric.score(full, golds, options=options)
        partial_score = metric.score(partial, golds, options=options)
        assert np.isfinite(partial_score)
        assert partial_score <= full_score + 1e-9, (golds, full, partial)
        # The same on a resample or a tag: each example counted 0 to 3 times.
        counts = np.asarray([weights], dtype=np.float64)
        full_rows = counts @ metric.compute_statistics(full, golds, options=options)
        partial_rows = counts @ metric.compute_statistics(partial, golds, options=options)
        if full_rows.shape[1] == partial_rows.shape[1]:  # the same labels (F1) or tokens
            full_resample = metric.batch_scores(full_rows, options)[0]
            partial_resample = metric.batch_scores(partial_rows, options)[0]
            assert partial_resample <= full_resample + 1e-9, (golds, full, partial, weights)

    check()
