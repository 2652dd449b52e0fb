"""The arena board from counted battles (pure: no DB; ``selectors.arena_board`` feeds it).

``build_board`` takes the counted battles (model ids and names, outcome, answer lengths, in
the order they were voted) and returns an ``ArenaBoard``: one row per model that played,
ranked by Bradley-Terry rating, with the 95% interval, the share of resamples in which it is
above the next row and the tie badge (``ratings.is_tie``), its online Elo, its battles, and
with style control its length-controlled rating; the battle-count and win-fraction matrices
in the rows' order; and, for pair sampling, each pair's share of resamples in which its
first model (lower id) is rated higher.

``board_view`` is what one viewer gets: the board without the rows and matrix lines of the
models hidden from them (unpublished models they may not see), ranks renumbered and each
row's "ahead of the next" share taken against the next row they see. The ratings, intervals
and Elo are those fitted on every counted battle, whoever looks.

Models are indexed by ascending id, so neither the order of the battles nor the ids' values
change a Bradley-Terry rating; the bootstrap seed is fixed, so a board never changes between
two visits with the same battles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from annotation.arena import ratings

OUTCOMES = {"a": ratings.A_WINS, "b": ratings.B_WINS, "tie": ratings.TIE, "both_bad": ratings.TIE}
SEED = 0


@dataclass(frozen=True)
class CountedBattle:
    model_a: int
    model_b: int
    name_a: str
    name_b: str
    vote: str
    length_a: int = 0
    length_b: int = 0


@dataclass
class BoardRow:
    rank: int
    model_id: int
    name: str
    rating: float
    low: float
    high: float
    ahead: float | None  # share of resamples above the next row; None for the last
    tie_with_next: bool
    elo: float
    battles: int
    identified: bool
    style_rating: float | None = None

    def as_dict(self) -> dict:
        return {
            "rank": self.rank,
            "model_id": self.model_id,
            "model": self.name,
            "rating": _round(self.rating),
            "ci_low": _round(self.low),
            "ci_high": _round(self.high),
            "ahead_of_next": _round(self.ahead, 4),
            "tie_with_next": self.tie_with_next,
            "elo": _round(self.elo),
            "battles": self.battles,
            "identified": self.identified,
            "style_controlled_rating": _round(self.style_rating),
        }


@dataclass
class ArenaBoard:
    rows: list[BoardRow] = field(default_factory=list)
    battle_matrix: list[list[int]] = field(default_factory=list)
    win_matrix: list[list[float | None]] = field(default_factory=list)
    pair_ahead: dict[tuple[int, int], float] = field(default_factory=dict)
    battles: int = 0
    resamples: int = ratings.RESAMPLES
    style_control: bool = False
    length_coefficient: float | None = None

    def as_dict(self) -> dict:
        names = [row.name for row in self.rows]
        return {
            "battles": self.battles,
            "resamples": self.resamples,
            "scale": {"base": ratings.BASE, "scale": ratings.SCALE, "anchor": ratings.ANCHOR},
            "style_control": self.style_control,
            "length_coefficient": _round(self.length_coefficient, 6),
            "rows": [row.as_dict() for row in self.rows],
            "models": names,
            "battle_matrix": self.battle_matrix,
            "win_fraction_matrix": self.win_matrix,
        }

    CSV_HEADER = (
        "rank",
        "model",
        "rating",
        "ci_low",
        "ci_high",
        "ahead_of_next",
        "tie_with_next",
        "elo",
        "battles",
        "identified",
        "style_controlled_rating",
    )

    def csv_rows(self) -> list[list]:
        rows = []
        for row in self.rows:
            body = row.as_dict()
            rows.append([_blank(body[column]) for column in self.CSV_HEADER])
        return rows


def _round(value: float | None, digits: int = 2) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits)


def _blank(value):
    return "" if value is None else value


def build_board(
    battles: Sequence[CountedBattle],
    *,
    style_control: bool = False,
    resamples: int = ratings.RESAMPLES,
) -> ArenaBoard:
    """The board of ``battles`` (see the module docstring)."""
    ids = sorted({b.model_a for b in battles} | {b.model_b for b in battles})
    if len(ids) < 2:
        return ArenaBoard(battles=len(battles), resamples=resamples, style_control=style_control)
    index = {model: position for position, model in enumerate(ids)}
    names = {b.model_a: b.name_a for b in battles} | {b.model_b: b.name_b for b in battles}
    a = np.array([index[b.model_a] for b in battles])
    b_side = np.array([index[b.model_b] for b in battles])
    outcome = np.array([OUTCOMES[b.vote] for b in battles])
    pairs = ratings.pair_counts(a, b_side, outcome, len(ids))
    fitted = ratings.arena_ratings(pairs, resamples=resamples, seed=SEED)
    elo = ratings.online_elo(a, b_side, outcome, len(ids))
    counts, fractions = ratings.battle_matrices(pairs)
    order = sorted(range(len(ids)), key=lambda i: (-fitted.ratings[i], names[ids[i]], ids[i]))
    shares = ratings.ahead_shares(order, fitted.resamples)
    style, coefficient = _style(battles, a, b_side, outcome, len(ids), style_control)
    rows = [
        BoardRow(
            rank=rank,
            model_id=ids[i],
            name=names[ids[i]],
            rating=float(fitted.ratings[i]),
            low=float(fitted.lows[i]),
            high=float(fitted.highs[i]),
            ahead=shares[rank - 1] if rank - 1 < len(shares) else None,
            tie_with_next=rank - 1 < len(shares) and ratings.is_tie(shares[rank - 1]),
            elo=float(elo[i]),
            battles=int(counts[i].sum()),
            identified=bool(fitted.identified[i]),
            style_rating=None if style is None else float(style[i]),
        )
        for rank, i in enumerate(order, start=1)
    ]
    return ArenaBoard(
        rows=rows,
        battle_matrix=[[int(counts[i, j]) for j in order] for i in order],
        win_matrix=[[_round(fractions[i, j], 4) for j in order] for i in order],
        pair_ahead=_pair_ahead(ids, fitted.resamples),
        battles=len(battles),
        resamples=resamples,
        style_control=style_control,
        length_coefficient=coefficient,
    )


def _style(battles, a, b_side, outcome, count: int, wanted: bool):
    if not wanted:
        return None, None
    lengths_a = [battle.length_a for battle in battles]
    lengths_b = [battle.length_b for battle in battles]
    strengths, coefficient = ratings.style_controlled_strengths(
        a, b_side, outcome, lengths_a, lengths_b, count
    )
    return ratings.to_ratings(strengths), coefficient


def _pair_ahead(ids: list[int], resamples: np.ndarray) -> dict[tuple[int, int], float]:
    """For each pair of ids (lower first), the share of resamples rating the first higher."""
    if not len(resamples):
        return {}
    above = (resamples[:, :, None] > resamples[:, None, :]).mean(axis=0)
    equal = (resamples[:, :, None] == resamples[:, None, :]).mean(axis=0)
    share = above + 0.5 * equal
    return {
        (ids[i], ids[j]): float(share[i, j])
        for i in range(len(ids))
        for j in range(i + 1, len(ids))
    }


def share_above(pair_ahead: dict[tuple[int, int], float], upper: int, lower: int) -> float:
    """The share of resamples rating model ``upper`` above ``lower`` (ties counting half)."""
    if upper < lower:
        return pair_ahead.get((upper, lower), float("nan"))
    return 1.0 - pair_ahead.get((lower, upper), float("nan"))


def board_view(board: ArenaBoard, hidden: frozenset[int] | set[int]) -> ArenaBoard:
    """The board without the models of ``hidden`` (see the module docstring)."""
    if not hidden or not any(row.model_id in hidden for row in board.rows):
        return board
    keep = [index for index, row in enumerate(board.rows) if row.model_id not in hidden]
    rows = []
    for rank, index in enumerate(keep, start=1):
        row = board.rows[index]
        ahead = None
        if rank < len(keep):
            ahead = share_above(board.pair_ahead, row.model_id, board.rows[keep[rank]].model_id)
        tie = ahead is not None and ratings.is_tie(ahead)
        rows.append(replace(row, rank=rank, ahead=ahead, tie_with_next=tie))
    return replace(
        board,
        rows=rows,
        battle_matrix=[[board.battle_matrix[i][j] for j in keep] for i in keep],
        win_matrix=[[board.win_matrix[i][j] for j in keep] for i in keep],
        pair_ahead={
            pair: share
            for pair, share in board.pair_ahead.items()
            if not (pair[0] in hidden or pair[1] in hidden)
        },
    )


def board_dict_without(body: dict, hidden: frozenset[int] | set[int]) -> dict:
    """A board's JSON (a snapshot frozen before snapshots kept their public view) without the
    rows and matrix lines of ``hidden``; a row whose next row is gone loses its share."""
    rows = body.get("rows", [])
    if not hidden or not any(row.get("model_id") in hidden for row in rows):
        return body
    keep = [index for index, row in enumerate(rows) if row.get("model_id") not in hidden]
    kept_rows = []
    for rank, index in enumerate(keep, start=1):
        row = dict(rows[index], rank=rank)
        following = keep[rank] if rank < len(keep) else None
        if following != index + 1:
            row["ahead_of_next"], row["tie_with_next"] = None, False
        kept_rows.append(row)

    def cut(matrix):
        return [[matrix[i][j] for j in keep] for i in keep] if matrix else matrix

    return {
        **body,
        "rows": kept_rows,
        "models": [row.get("model") for row in kept_rows],
        "battle_matrix": cut(body.get("battle_matrix")),
        "win_fraction_matrix": cut(body.get("win_fraction_matrix")),
    }
