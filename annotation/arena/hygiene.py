"""Vote hygiene rules of the arena (pure: no DB).

- ``names_a_model``: whether an answer names a model (one of the owner's identity words or
  phrases, matched on whole words, case-insensitively). A vote on such a battle is void: the
  rater could tell who answered. One pass over the answer's words.
- ``rater_agreement``: for each rater, the share of their decisive votes that agree with the
  crowd's direction on the same pair, the crowd being every *other* rater (a pair's
  direction is the side with more wins among the others' decisive votes; a pair the others
  split evenly, or never judged, does not count). ``flag_outliers`` marks the raters whose
  share is far below the others': under the median by more than ``spread`` robust standard
  deviations (1.4826 x the median absolute deviation), among raters with at least
  ``min_votes`` counted votes.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

WORD = re.compile(r"\w+")
A_WINS, B_WINS = 0, 1


def _words(text: str) -> list[str]:
    return [match.group(0).lower() for match in WORD.finditer(text)]


def identity_phrases(words: Iterable[str]) -> set[tuple[str, ...]]:
    """Return the identity words and phrases as tuples of lower-case words."""
    return {tuple(_words(word)) for word in words if _words(word)}


def names_a_model(answer: str, phrases: set[tuple[str, ...]]) -> str | None:
    """Return the first identity phrase the answer contains (as written in it), or None."""
    if not phrases:
        return None
    longest = max(len(phrase) for phrase in phrases)
    words = _words(answer)
    for start in range(len(words)):
        for length in range(1, min(longest, len(words) - start) + 1):
            candidate = tuple(words[start : start + length])
            if candidate in phrases:
                return " ".join(candidate)
    return None


@dataclass(frozen=True)
class Vote:
    rater: str
    model_a: int
    model_b: int
    outcome: int  # A_WINS, B_WINS, or anything else for a tie / both bad


def _winner_loser(vote: Vote) -> tuple[int, int] | None:
    if vote.outcome == A_WINS:
        return vote.model_a, vote.model_b
    if vote.outcome == B_WINS:
        return vote.model_b, vote.model_a
    return None


def rater_agreement(votes: Sequence[Vote]) -> dict[str, tuple[int, int]]:
    """Return {rater: (votes agreeing with the other raters, votes counted)}."""
    everyone = Counter()
    mine: dict[str, Counter] = defaultdict(Counter)
    for vote in votes:
        decided = _winner_loser(vote)
        if decided:
            everyone[decided] += 1
            mine[vote.rater][decided] += 1
    result: dict[str, tuple[int, int]] = {}
    for rater, own in mine.items():
        agreeing = counted = 0
        for (winner, loser), times in own.items():
            with_them = everyone[(winner, loser)] - times
            against = everyone[(loser, winner)] - own[(loser, winner)]
            if with_them != against:
                counted += times
                agreeing += times if with_them > against else 0
        result[rater] = (agreeing, counted)
    return result


def flag_outliers(
    agreement: dict[str, tuple[int, int]], min_votes: int = 10, spread: float = 3.0
) -> dict[str, float]:
    """Return {rater: agreement share} for the raters far below the others."""
    shares = {
        rater: agreeing / counted
        for rater, (agreeing, counted) in agreement.items()
        if counted >= min_votes
    }
    if len(shares) < 3:
        return {}
    values = sorted(shares.values())
    median = _median(values)
    deviation = 1.4826 * _median(sorted(abs(value - median) for value in values))
    margin = max(spread * deviation, 0.1)  # a crowd that agrees perfectly still allows slips
    return {rater: share for rater, share in shares.items() if share < median - margin}


def _median(values: Sequence[float]) -> float:
    middle = len(values) // 2
    if len(values) % 2:
        return values[middle]
    return (values[middle - 1] + values[middle]) / 2.0
