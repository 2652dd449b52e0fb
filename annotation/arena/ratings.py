"""Arena ratings from pairwise battles (pure: no DB, no network).

A battle shows two anonymous models' answers to one prompt; the rater says which is better,
or that they tie (a "both bad" vote counts as a tie, as in Chatbot Arena's ratings).

**Bradley-Terry** (Bradley and Terry 1952, on the scale of Chiang et al. 2024, "Chatbot
Arena", arXiv 2403.04132): each model ``i`` has a strength ``beta_i`` and

    P(i beats j) = 1 / (1 + 10 ** (beta_j - beta_i)),

fitted by maximum likelihood with a tie counting half a win to each side. A rating is
``SCALE * beta + ANCHOR`` (400 and 1000), and the strengths are centred (their mean is 0,
so the ratings average 1000): the likelihood only sees differences. The likelihood depends
on the battles only through, for each pair of models, the number of battles and the first
model's score (wins plus half the ties), so the fit works on those counts: a few Newton
steps on a models x models system, whatever the number of battles. A ridge of
``RIDGE`` (in likelihood units) keeps a model that never lost (or never won) finite; its
rating is then large and it is reported as not identified.

**Bootstrap**: a resample draws as many battles as there are, with replacement, which is a
multinomial draw over the (pair, outcome) cells; the resamples are fitted together in
batches (one batched Newton solve). The 95% interval is the 2.5 and 97.5 percentiles of a
model's resampled ratings; ``ahead_shares`` gives, for each model and the next one down, the
share of resamples in which it is rated higher (equal counts half), and a pair is a
statistical tie when neither is ahead in 95% of resamples.

**Online Elo** (the classic update, K = 4 on the same scale) is order dependent by nature; it
is reported beside Bradley-Terry for comparison, over the battles in the order given.

**Style control** (as Chatbot Arena describes it): the normalised length difference of the
two answers, ``(len_a - len_b) / (len_a + len_b)`` standardised over the battles, enters the
logit as a covariate with its own coefficient, so a model is not rated up for answering at
length; it needs the battles themselves, not only the counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SCALE = 400.0
ANCHOR = 1000.0
BASE = 10.0
ELO_K = 4.0
CONFIDENCE = 0.95
TIE_AT = 0.95
RESAMPLES = 1000
RIDGE = 1e-8
A_WINS, B_WINS, TIE = 0, 1, 2
_LOG_BASE = float(np.log(BASE))
_MAX_STEP = 1.0  # strengths are in base-10 units: at most 400 rating points per Newton step
_TOLERANCE = 1e-12
_MAX_ITERATIONS = 200
_BATCH = 250


@dataclass(frozen=True)
class PairCounts:
    """Battles reduced to counts: for pair ``p`` (models ``first[p] < second[p]``) the number of
    battles the first won, the second won, and tied (columns 0, 1, 2 of ``counts``)."""

    model_count: int
    first: np.ndarray
    second: np.ndarray
    counts: np.ndarray  # pairs x 3

    @property
    def battles(self) -> int:
        return int(self.counts.sum())


@dataclass(frozen=True)
class ArenaRatings:
    """Ratings with their bootstrap intervals; arrays are indexed by model."""

    ratings: np.ndarray
    lows: np.ndarray
    highs: np.ndarray
    identified: np.ndarray
    resamples: np.ndarray  # resamples x models


def pair_counts(model_a, model_b, outcome, model_count: int) -> PairCounts:
    """Reduce battles (model indices and outcomes ``A_WINS``, ``B_WINS``, ``TIE``) to counts.

    Side A or B does not matter to the rating: a battle of ``j`` (A) against ``i`` (B) with
    ``i < j`` is counted as the pair ``(i, j)`` with the outcome seen from ``i``.
    """
    a = np.asarray(model_a, dtype=np.int64)
    b = np.asarray(model_b, dtype=np.int64)
    result = np.asarray(outcome, dtype=np.int64)
    if not (a.shape == b.shape == result.shape):
        raise ValueError("model_a, model_b and outcome must have the same length")
    if np.any(a == b):
        raise ValueError("a battle needs two different models")
    if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= model_count):
        raise ValueError("a model index is outside 0..model_count-1")
    if np.any((result < 0) | (result > TIE)):
        raise ValueError("an outcome is not A_WINS, B_WINS or TIE")
    low = np.minimum(a, b)
    high = np.maximum(a, b)
    swapped = a > b
    seen_from_low = np.where(swapped & (result != TIE), 1 - result, result)
    pair_code = low * model_count + high
    codes, pair_index = np.unique(pair_code, return_inverse=True)
    counts = np.zeros((codes.size, 3), dtype=np.float64)
    np.add.at(counts, (pair_index, seen_from_low), 1.0)
    return PairCounts(
        model_count=model_count,
        first=codes // model_count,
        second=codes % model_count,
        counts=counts,
    )


def fit_strengths(pairs: PairCounts, counts: np.ndarray | None = None) -> np.ndarray:
    """Return centred Bradley-Terry strengths (base-10 units) for one or a batch of count sets.

    ``counts`` (optional) replaces ``pairs.counts`` and may carry a leading batch axis
    (resamples x pairs x 3); the result then has one row of strengths per resample.
    """
    table = pairs.counts if counts is None else np.asarray(counts, dtype=np.float64)
    single = table.ndim == 2
    batch = table[None] if single else table
    totals = batch.sum(axis=2)
    scores = batch[:, :, 0] + 0.5 * batch[:, :, 2]
    strengths = _newton(pairs.first, pairs.second, pairs.model_count, totals, scores)
    return strengths[0] if single else strengths


def _newton(first, second, model_count, totals, scores) -> np.ndarray:
    """Maximise the Bradley-Terry log-likelihood for each row of ``totals``/``scores``."""
    rows = totals.shape[0]
    strengths = np.zeros((rows, model_count))
    diagonal = np.arange(model_count)
    centring = np.full((model_count, model_count), 1.0 / model_count)
    for _ in range(_MAX_ITERATIONS):
        gradient, hessian = _gradient_and_curvature(
            strengths, first, second, model_count, totals, scores, diagonal
        )
        gradient -= RIDGE * strengths
        hessian[:, diagonal, diagonal] += RIDGE
        step = np.linalg.solve(hessian + centring, gradient[:, :, None])[:, :, 0]
        largest = np.abs(step).max(axis=1, keepdims=True)
        step *= np.minimum(1.0, _MAX_STEP / np.maximum(largest, 1e-300))
        strengths += step
        if largest.max() < _TOLERANCE:
            break
    return strengths - strengths.mean(axis=1, keepdims=True)


def _gradient_and_curvature(strengths, first, second, model_count, totals, scores, diagonal):
    """Return the log-likelihood's gradient and its negated Hessian (a weighted Laplacian)."""
    gap = _LOG_BASE * (strengths[:, first] - strengths[:, second])
    expected = 0.5 * (1.0 + np.tanh(0.5 * gap))  # the logistic function, without overflow
    residual = _LOG_BASE * (scores - totals * expected)
    gradient = np.zeros_like(strengths)
    np.add.at(gradient.T, first, residual.T)
    np.add.at(gradient.T, second, -residual.T)
    weight = _LOG_BASE**2 * totals * expected * (1.0 - expected)
    hessian = np.zeros((strengths.shape[0], model_count, model_count))
    hessian[:, first, second] = -weight
    hessian[:, second, first] = -weight
    hessian[:, diagonal, diagonal] = -hessian.sum(axis=2)
    return gradient, hessian


def to_ratings(strengths: np.ndarray) -> np.ndarray:
    """Return ratings on the arena scale (base 10, scale 400, anchored at 1000)."""
    return SCALE * np.asarray(strengths) + ANCHOR


def bootstrap_counts(pairs: PairCounts, resamples: int, seed: int) -> np.ndarray:
    """Return ``resamples`` multinomial redraws of the battles (resamples x pairs x 3)."""
    flat = pairs.counts.reshape(-1)
    total = int(flat.sum())
    rng = np.random.default_rng(seed)
    if total == 0:
        return np.zeros((resamples, *pairs.counts.shape))
    draws = rng.multinomial(total, flat / total, size=resamples)
    return draws.reshape(resamples, *pairs.counts.shape).astype(np.float64)


def identified_models(pairs: PairCounts) -> np.ndarray:
    """Return, per model, whether its maximum-likelihood rating exists (is finite).

    The centred ratings exist when every model that played can reach every other through a
    chain of wins or ties (the "scored against" graph is strongly connected): a model that
    never lost, or never won, has no finite strength, and centring spreads that to all. A
    model that never played has no rating either.
    """
    count = pairs.model_count
    scored = np.eye(count, dtype=np.int64)
    won_first = pairs.counts[:, 0] + pairs.counts[:, 2] > 0
    won_second = pairs.counts[:, 1] + pairs.counts[:, 2] > 0
    scored[pairs.first[won_first], pairs.second[won_first]] = 1
    scored[pairs.second[won_second], pairs.first[won_second]] = 1
    for _ in range(int(np.ceil(np.log2(max(count, 2))))):
        scored = np.minimum(scored @ scored, 1)
    played = np.zeros(count, dtype=bool)
    played[pairs.first] = True
    played[pairs.second] = True
    reach = scored[np.ix_(played, played)].astype(bool)
    return played & bool(reach.all())


def arena_ratings(
    pairs: PairCounts, resamples: int = RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE
) -> ArenaRatings:
    """Fit the ratings and their bootstrap intervals (percentiles of ``resamples`` refits)."""
    point = to_ratings(fit_strengths(pairs))
    draws = bootstrap_counts(pairs, resamples, seed)
    fitted = np.empty((resamples, pairs.model_count))
    for start in range(0, resamples, _BATCH):
        fitted[start : start + _BATCH] = fit_strengths(pairs, draws[start : start + _BATCH])
    spread = to_ratings(fitted)
    tail = 100.0 * (1.0 - confidence) / 2.0
    if resamples:
        lows, highs = np.percentile(spread, [tail, 100.0 - tail], axis=0)
    else:
        lows = highs = np.full(pairs.model_count, np.nan)
    return ArenaRatings(
        ratings=point,
        lows=lows,
        highs=highs,
        identified=identified_models(pairs),
        resamples=spread,
    )


def ahead_shares(order, resamples: np.ndarray) -> list[float]:
    """For each model in ``order`` but the last, the share of resamples it is above the next."""
    shares = []
    for upper, lower in zip(order, order[1:], strict=False):
        above = resamples[:, upper] > resamples[:, lower]
        equal = resamples[:, upper] == resamples[:, lower]
        shares.append(float(above.mean() + 0.5 * equal.mean()) if len(resamples) else float("nan"))
    return shares


def is_tie(share: float) -> bool:
    """Return whether two neighbours are a statistical tie: neither ahead in 95% of resamples."""
    return not (share >= TIE_AT or (1.0 - share) >= TIE_AT)


def online_elo(model_a, model_b, outcome, model_count: int, k: float = ELO_K) -> np.ndarray:
    """Return online Elo ratings after the battles, in the order given (starting at 1000)."""
    ratings = np.full(model_count, ANCHOR)
    for a, b, result in zip(model_a, model_b, outcome, strict=True):
        expected_a = 1.0 / (1.0 + BASE ** ((ratings[b] - ratings[a]) / SCALE))
        score_a = 1.0 if result == A_WINS else 0.0 if result == B_WINS else 0.5
        ratings[a] += k * (score_a - expected_a)
        ratings[b] -= k * (score_a - expected_a)
    return ratings


def battle_matrices(pairs: PairCounts) -> tuple[np.ndarray, np.ndarray]:
    """Return the battle-count matrix and the win-fraction matrix (row's wins over the
    column's in their battles that were not ties; NaN where there are none)."""
    count = pairs.model_count
    battles = np.zeros((count, count))
    wins = np.zeros((count, count))
    totals = pairs.counts.sum(axis=1)
    battles[pairs.first, pairs.second] = totals
    battles[pairs.second, pairs.first] = totals
    wins[pairs.first, pairs.second] = pairs.counts[:, 0]
    wins[pairs.second, pairs.first] = pairs.counts[:, 1]
    decided = wins + wins.T
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = np.where(decided > 0, wins / np.where(decided > 0, decided, 1.0), np.nan)
    return battles, fraction


def style_controlled_strengths(
    model_a, model_b, outcome, length_a, length_b, model_count: int, weights=None
) -> tuple[np.ndarray, float]:
    """Return centred strengths and the length coefficient, with length as a covariate.

    Fitted per battle (a tie is half a win to each side), by Newton's method on the
    models' strengths and one coefficient for the standardised normalised length gap.
    ``weights`` (optional) weighs each battle, for resampling.
    """
    a = np.asarray(model_a, dtype=np.int64)
    b = np.asarray(model_b, dtype=np.int64)
    result = np.asarray(outcome, dtype=np.int64)
    score = np.where(result == A_WINS, 1.0, np.where(result == B_WINS, 0.0, 0.5))
    length_sum = np.asarray(length_a, dtype=np.float64) + np.asarray(length_b, dtype=np.float64)
    gap = (np.asarray(length_a) - np.asarray(length_b)) / np.where(length_sum > 0, length_sum, 1.0)
    spread = gap.std()
    covariate = (gap - gap.mean()) / spread if spread > 0 else np.zeros_like(gap)
    weight = np.ones_like(score) if weights is None else np.asarray(weights, dtype=np.float64)
    design = np.zeros((a.size, model_count + 1))
    rows = np.arange(a.size)
    design[rows, a] = _LOG_BASE
    design[rows, b] = -_LOG_BASE
    design[:, model_count] = covariate
    parameters = np.zeros(model_count + 1)
    centring = np.zeros((model_count + 1, model_count + 1))
    centring[:model_count, :model_count] = 1.0 / model_count
    for _ in range(_MAX_ITERATIONS):
        expected = 0.5 * (1.0 + np.tanh(0.5 * (design @ parameters)))
        gradient = design.T @ (weight * (score - expected)) - RIDGE * parameters
        curvature = (design * (weight * expected * (1.0 - expected))[:, None]).T @ design
        curvature += RIDGE * np.eye(model_count + 1)
        step = np.linalg.solve(curvature + centring, gradient)
        largest = np.abs(step).max()
        step *= min(1.0, _MAX_STEP / max(largest, 1e-300))
        parameters += step
        if largest < _TOLERANCE:
            break
    strengths = parameters[:model_count]
    return strengths - strengths.mean(), float(parameters[model_count])
