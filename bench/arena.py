#!/usr/bin/env python
"""Arena ratings: Bradley-Terry with bootstrap intervals, on counts against per battle.

    .venv/bin/python bench/arena.py [--quick] [--battles N] [--models K] [--resamples R]

Draws ``--battles`` battles (default 100,000) among ``--models`` models (50) from known
strengths, then times:

- ``ours``: ``annotation.arena.ratings.arena_ratings``: the point fit and ``--resamples``
  (1,000) bootstrap refits, on the pair counts, resamples as multinomial draws;
- ``per_battle``: the way Chatbot Arena's notebook does it, one scikit-learn
  ``LogisticRegression`` (no intercept, no penalty, tol 1e-6) per resample over the
  resampled battles (each battle written twice, a tie once as a win of each side). It is
  timed on ``--reference-resamples`` (5) resamples and its time per resample is multiplied
  by ``--resamples``: a thousand fits of 200,000 rows take tens of minutes.

``speedup`` is per_battle's estimated total over ours (target: at least 10). Equality is
checked on the point fit and on the timed resamples, with the same resampled battles given
to both: ``max_rating_gap`` is the largest difference in rating points, with scikit-learn
run to a tight tolerance for that check (``newton-cholesky``, tol 1e-12, the last model
held at 0 so that the Hessian is regular, then centred).
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.arena.ratings import (  # noqa: E402
    A_WINS,
    ANCHOR,
    B_WINS,
    SCALE,
    TIE,
    arena_ratings,
    fit_strengths,
    pair_counts,
    to_ratings,
)


def draw_battles(models: int, battles: int, seed: int):
    rng = np.random.default_rng(seed)
    strengths = rng.normal(0.0, 0.4, models)
    a = rng.integers(0, models, battles)
    b = (a + rng.integers(1, models, battles)) % models
    p_a = 1.0 / (1.0 + 10.0 ** (strengths[b] - strengths[a]))
    outcome = np.where(rng.random(battles) < p_a, A_WINS, B_WINS)
    outcome[rng.random(battles) < 0.1] = TIE
    return a, b, outcome


def per_battle_fit(a, b, outcome, models: int, tight: bool = False) -> np.ndarray:
    """One logistic regression over the battles, each written twice (ties split)."""
    rows = len(a)
    design = np.zeros((2 * rows, models))
    index = np.arange(rows)
    for copy in (0, 1):
        design[copy * rows + index, a] = np.log(10.0)
        design[copy * rows + index, b] = -np.log(10.0)
    labels = np.concatenate([np.where(outcome == B_WINS, 0, 1), np.where(outcome == A_WINS, 1, 0)])
    if not tight:
        model = LogisticRegression(fit_intercept=False, penalty=None, tol=1e-6)
        model.fit(design, labels)
        strengths = model.coef_[0]
        return SCALE * (strengths - strengths.mean()) + ANCHOR
    # For the equality check: the last model held at 0 (the likelihood sees only
    # differences), so that Newton's method has a regular Hessian, then centred.
    model = LogisticRegression(
        fit_intercept=False, penalty=None, solver="newton-cholesky", tol=1e-12, max_iter=200
    )
    model.fit(design[:, :-1], labels)
    strengths = np.append(model.coef_[0], 0.0)
    return SCALE * (strengths - strengths.mean()) + ANCHOR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--battles", type=int, default=100_000)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--reference-resamples", type=int, default=5)
    options = parser.parse_args()
    if options.quick:
        options.reference_resamples = 2
    a, b, outcome = draw_battles(options.models, options.battles, seed=0)
    pairs = pair_counts(a, b, outcome, options.models)

    started = time.perf_counter()
    ours = arena_ratings(pairs, resamples=options.resamples, seed=0)
    ours_seconds = time.perf_counter() - started

    rng = np.random.default_rng(1)
    picks = [rng.integers(0, len(a), len(a)) for _ in range(options.reference_resamples)]
    started = time.perf_counter()
    for pick in picks:
        per_battle_fit(a[pick], b[pick], outcome[pick], options.models)
    per_resample = (time.perf_counter() - started) / max(1, len(picks))
    per_battle_total = per_resample * (options.resamples + 1)

    gaps = [np.abs(ours.ratings - per_battle_fit(a, b, outcome, options.models, tight=True))]
    for pick in picks:
        resampled = pair_counts(a[pick], b[pick], outcome[pick], options.models)
        mine = to_ratings(fit_strengths(resampled))
        theirs = per_battle_fit(a[pick], b[pick], outcome[pick], options.models, tight=True)
        gaps.append(np.abs(mine - theirs))
    print(
        json.dumps(
            {
                "battles": options.battles,
                "models": options.models,
                "resamples": options.resamples,
                "ours_seconds": round(ours_seconds, 3),
                "per_battle_seconds_per_resample": round(per_resample, 3),
                "per_battle_estimated_seconds": round(per_battle_total, 1),
                "speedup": round(per_battle_total / ours_seconds, 1),
                "max_rating_gap": float(np.max(gaps)),
            }
        )
    )


if __name__ == "__main__":
    main()
