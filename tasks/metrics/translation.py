"""Translation metrics from sacrebleu: ``bleu``, ``chrf`` and ``sp_bleu``.

Scores equal ``sacrebleu.corpus_bleu`` / ``sacrebleu.corpus_chrf`` with their defaults. A
gold given as a list holds several references (lists may differ in length).
sacrebleu's per-segment statistics are kept so tags and bootstrap resamples only sum
counts instead of re-tokenising.

Missing answers. A ``None`` prediction (the model failed, or a partial predictions file
has no answer for the example) makes the corpus score 0. No smaller penalty is safe: a
wrong translation may be as long as it likes, and a long enough one that matches nothing
brings corpus BLEU (its n-gram precisions) and chrF (its character n-gram precision) as
close to 0 as it likes, so any other value for a file with a missing answer could be more
than the same file with some wrong answer put in. The statistics carry one more column,
the count of missing answers; a resample or a tag without any is scored as usual. The
example's own score (the per-example browser) is 0.
sacrebleu's statistics come from two private methods of its metrics
(``_extract_corpus_statistics``, ``_compute_score_from_stats``): sacrebleu is pinned in
requirements.txt, and ``tests/tasks/metrics/test_translation.py`` checks that any subset's
summed rows score what the public ``corpus_bleu`` / ``corpus_chrf`` give that subset.

``sp_bleu`` (FLORES spBLEU) is BLEU over SentencePiece pieces. Nothing is downloaded: it
needs the ``spm_model`` option, a path to a local ``.model`` file, and the
``sentencepiece`` package; otherwise it raises ``MetricUnsupported``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from sacrebleu.metrics import BLEU, CHRF

from tasks.metrics.base import Metric, Options, answer_text, gold_alternatives
from tasks.metrics.errors import MetricUnsupported

SENTENCEPIECE_MODEL_OPTION = "spm_model"


def _hypotheses(predictions: Sequence[Any]) -> list[str]:
    return [answer_text(prediction) or "" for prediction in predictions]


def _references(golds: Sequence[Any]) -> list[list[str]]:
    """Return one list of reference texts per example (an empty gold is one empty text)."""
    per_example = []
    for gold in golds:
        texts = [t for value in gold_alternatives(gold) if (t := answer_text(value)) is not None]
        per_example.append(texts or [""])
    return per_example


def _reference_streams(references: list[list[str]]) -> list[list[str | None]]:
    """Transpose per-example references into sacrebleu's streams, padding with None."""
    stream_count = max(len(texts) for texts in references)
    return [
        [texts[stream] if stream < len(texts) else None for texts in references]
        for stream in range(stream_count)
    ]


def _sacrebleu_metric(
    name: str,
    description: str,
    make_corpus_metric: Callable[[], BLEU | CHRF],
    make_sentence_metric: Callable[[], BLEU | CHRF],
    tokenize: Callable[[str, Options], str] | None = None,
    check_options: Callable[[Options], object] | None = None,
) -> Metric:
    def prepare(text: str, options: Options) -> str:
        return tokenize(text, options) if tokenize else text

    def statistics(
        predictions: Sequence[Any], golds: Sequence[Any], options: Options
    ) -> np.ndarray:
        if check_options:
            check_options(options)
        hypotheses = [prepare(text, options) for text in _hypotheses(predictions)]
        references = [[prepare(t, options) for t in texts] for texts in _references(golds)]
        rows = make_corpus_metric()._extract_corpus_statistics(
            hypotheses, _reference_streams(references)
        )
        missing = [[float(answer_text(prediction) is None)] for prediction in predictions]
        return np.hstack([np.asarray(rows, dtype=np.float64).reshape(len(golds), -1), missing])

    def score_from_statistics(summed: np.ndarray, options: Options) -> float:
        if summed[-1] > 0:  # a missing answer (see the module docstring)
            return 0.0
        return float(make_corpus_metric()._compute_score_from_stats(summed[:-1]).score)

    def example_score(prediction: object, gold: object, options: Options) -> float:
        if check_options:
            check_options(options)
        if answer_text(prediction) is None:
            return 0.0
        hypothesis = prepare(_hypotheses([prediction])[0], options)
        references = [prepare(t, options) for t in _references([gold])[0]]
        return float(make_sentence_metric().sentence_score(hypothesis, references).score)

    return Metric(
        name=name,
        description=description,
        statistics=statistics,
        score_from_statistics=score_from_statistics,
        example_score=example_score,
        is_decomposable=False,
    )


@lru_cache(maxsize=4)
def _load_sentencepiece(model_path: str) -> Any:
    try:
        import sentencepiece
    except ImportError:
        raise MetricUnsupported(
            "sp_bleu needs the 'sentencepiece' package, which is not installed here"
        ) from None
    return sentencepiece.SentencePieceProcessor(model_file=model_path)


def sentencepiece_model(options: Options) -> Any:
    """Return the SentencePiece processor named by ``options``, or raise MetricUnsupported."""
    configured = options.get(SENTENCEPIECE_MODEL_OPTION)
    if not configured:
        raise MetricUnsupported(
            "sp_bleu is not supported offline: set the perf_metric option "
            f"'{SENTENCEPIECE_MODEL_OPTION}' to a local SentencePiece .model file"
        )
    path = Path(str(configured))
    if not path.is_file():
        raise MetricUnsupported(f"sp_bleu: the SentencePiece model file {path} does not exist")
    return _load_sentencepiece(str(path.resolve()))


def _sentencepiece_pieces(text: str, options: Options) -> str:
    return " ".join(sentencepiece_model(options).encode(text, out_type=str))


BLEU_METRIC = _sacrebleu_metric(
    "bleu",
    "sacrebleu corpus BLEU (13a tokenisation, exp smoothing).",
    BLEU,
    lambda: BLEU(effective_order=True),
)
CHRF_METRIC = _sacrebleu_metric("chrf", "sacrebleu corpus chrF.", CHRF, CHRF)
SP_BLEU_METRIC = _sacrebleu_metric(
    "sp_bleu",
    "BLEU over SentencePiece pieces (needs a local SentencePiece model).",
    lambda: BLEU(tokenize="none"),
    lambda: BLEU(tokenize="none", effective_order=True),
    tokenize=_sentencepiece_pieces,
    check_options=sentencepiece_model,
)
