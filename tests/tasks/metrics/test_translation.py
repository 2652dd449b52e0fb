"""BLEU and chrF against sacrebleu itself; sp_bleu refuses to run without a local model."""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest
import sacrebleu

from tasks.metrics import MetricUnsupported, get_metric
from tasks.metrics.translation import _load_sentencepiece

WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "on",
    "mat",
    "rug",
    "quickly",
    "slowly",
    "red",
    "blue",
    "house",
    "garden",
]


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))


@pytest.fixture
def corpus():
    rng = random.Random(3)
    hypotheses = [_sentence(rng) for _ in range(40)]
    references = [[_sentence(rng) for _ in range(rng.randint(1, 3))] for _ in range(40)]
    return hypotheses, references


def _streams(references):
    width = max(len(r) for r in references)
    return [[r[i] if i < len(r) else None for r in references] for i in range(width)]


def test_bleu_equals_sacrebleu_with_variable_references(corpus):
    hypotheses, references = corpus
    expected = sacrebleu.corpus_bleu(hypotheses, _streams(references)).score
    assert get_metric("bleu").score(hypotheses, references) == pytest.approx(expected, abs=1e-9)


def test_chrf_equals_sacrebleu_with_variable_references(corpus):
    hypotheses, references = corpus
    expected = sacrebleu.corpus_chrf(hypotheses, _streams(references)).score
    assert get_metric("chrf").score(hypotheses, references) == pytest.approx(expected, abs=1e-9)


def test_single_string_gold_is_one_reference():
    hypotheses = ["the cat sat on the mat", "a dog"]
    golds = ["the cat sat on a mat", "a big dog"]
    expected = sacrebleu.corpus_bleu(hypotheses, [golds]).score
    assert get_metric("bleu").score(hypotheses, golds) == pytest.approx(expected)


@pytest.mark.parametrize("name", ["bleu", "chrf"])
def test_a_missing_translation_makes_the_corpus_score_0(name):
    golds = ["the cat sat on the mat", "a dog barked"]
    metric = get_metric(name)
    # An empty translation is an answer like any other...
    empty = metric.score(["the cat sat on the mat", ""], golds)
    assert empty > 0
    # ...but scoring a missing one as empty would beat a long wrong one, and a long
    # enough one brings the corpus score as close to 0 as it likes.
    junk = " ".join(["zzz"] * 2000)
    assert metric.score(["the cat sat on the mat", junk], golds) < min(empty, 5.0)
    assert metric.score(["the cat sat on the mat", None], golds) == 0.0
    assert metric.per_example_scores(["the cat sat on the mat", None], golds)[1] == 0.0
    # Resamples and tags without the missing example are scored as usual.
    statistics = metric.compute_statistics(["the cat sat on the mat", None], golds)
    assert metric.score_from_statistics(statistics[0], {}) == pytest.approx(
        metric.score(["the cat sat on the mat"], golds[:1])
    )


def test_per_example_scores_are_sentence_scores():
    scores = get_metric("chrf").per_example_scores(["a red house"], [["a red house"]])
    assert scores == [pytest.approx(100.0)]
    expected = sacrebleu.sentence_bleu("a red house", ["the red house"]).score
    assert get_metric("bleu").per_example_scores(["a red house"], ["the red house"]) == [
        pytest.approx(expected)
    ]


def test_subset_statistics_reproduce_the_subset_score(corpus):
    hypotheses, references = corpus
    metric = get_metric("bleu")
    statistics = metric.compute_statistics(hypotheses, references)
    rows = np.arange(0, 40, 3)
    subset = metric.score_from_statistics(statistics[rows].sum(axis=0), {})
    expected = metric.score([hypotheses[i] for i in rows], [references[i] for i in rows])
    assert subset == pytest.approx(expected, abs=1e-9)


def test_sp_bleu_without_model_is_unsupported():
    with pytest.raises(MetricUnsupported, match="spm_model") as raised:
        get_metric("sp_bleu").score(["a"], ["a"])
    assert raised.value.code == "metrics.E003"


def test_sp_bleu_with_missing_model_file_is_unsupported(tmp_path):
    with pytest.raises(MetricUnsupported, match="does not exist"):
        get_metric("sp_bleu").score(["a"], ["a"], options={"spm_model": tmp_path / "x.model"})


def test_sp_bleu_without_sentencepiece_package_is_unsupported(tmp_path, monkeypatch):
    model = tmp_path / "flores.model"
    model.write_bytes(b"not read")
    # A None entry in sys.modules makes ``import sentencepiece`` raise ImportError.
    monkeypatch.setitem(sys.modules, "sentencepiece", None)
    _load_sentencepiece.cache_clear()
    with pytest.raises(MetricUnsupported, match="'sentencepiece' package"):
        get_metric("sp_bleu").score(["a"], ["a"], options={"spm_model": str(model)})
    _load_sentencepiece.cache_clear()


def test_sp_bleu_per_example_needs_model_too():
    with pytest.raises(MetricUnsupported):
        get_metric("sp_bleu").per_example_scores(["a"], ["a"])


@pytest.mark.parametrize(
    ("name", "corpus_score"), [("bleu", "corpus_bleu"), ("chrf", "corpus_chrf")]
)
def test_summed_statistics_of_any_subset_equal_sacrebleus_corpus_score(corpus, name, corpus_score):
    """The metric keeps sacrebleu's per-segment statistics (its private
    ``_extract_corpus_statistics`` and ``_compute_score_from_stats``, pinned with sacrebleu in
    requirements.txt) so that tags and bootstrap resamples only sum rows: any subset's summed
    rows must score what sacrebleu's public corpus function gives that subset."""
    hypotheses, references = corpus
    metric = get_metric(name)
    rows = metric.compute_statistics(hypotheses, references)
    rng = random.Random(11)
    for _ in range(5):
        subset = sorted(rng.sample(range(len(hypotheses)), 15))
        picked = [references[i] for i in subset]
        expected = getattr(sacrebleu, corpus_score)(
            [hypotheses[i] for i in subset], _streams(picked)
        ).score
        summed = rows[subset].sum(axis=0)
        assert metric.score_from_statistics(summed, {}) == pytest.approx(expected, abs=1e-9)
