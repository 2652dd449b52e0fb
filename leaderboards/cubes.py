"""A task's leaderboard data as one binary value: the score cube (pure: no DB, no HTTP).

A leaderboard page needs every model of the task and every Score on its datasets. Read
from the Score table, a 1,000-model board is 2,000 rows to transfer and decode and to
scatter into arrays on every computed page. The cube holds the result of that work:
``leaderboards.tables.Board``'s arrays (models x datasets x metrics, CIs, per-tag main
metrics, coverage) for *every* model of the task
and every original dataset, with what decides who sees a model (published, owner,
anonymous). It is stored in one row
(``leaderboards.models.BoardCube``), rebuilt when the task's models or scores change
(``leaderboards.selectors.cubes.score_cube``), and each page takes from it the models and
datasets its viewer may see (``cube_board``) and computes the Dynascore of the requested
weighting as before.

``cube_build`` reuses ``Board.load``, so a board taken from a cube has the same values as
one loaded from the scores; ``cube_encode``/``cube_decode`` store it as a small JSON
header (names, shapes) followed by the raw arrays: no pickle, nothing executable.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import orjson

from leaderboards.scoring import BOOTSTRAP_RESAMPLES
from leaderboards.tables.board import Board
from leaderboards.tables.records import DatasetRecord, ModelRecord, ScoreColumns

# Bump when the layout changes: a stored cube of another format is rebuilt, never read.
CUBE_FORMAT = 5  # 5: job figures outside their plausible range are missing
_HEADER_LENGTH = struct.Struct("<I")
# The arrays of a cube, in the order they are stored, and their dtypes.
_ARRAYS = {
    "model_ids": "<i8",
    "owner_ids": "<i8",
    "published": "|b1",
    "anonymous": "|b1",
    "values": "<f8",
    "main": "<f8",
    "present": "|b1",
    "ci_lows": "<f8",
    "ci_highs": "<f8",
    "tag_values": "<f8",
    "covered": "<i8",
    "totals": "<i8",
}


class CubeFormatError(ValueError):
    """A stored cube that cannot be read (another format, or damaged): rebuild it."""


@dataclass(frozen=True)
class CubeModel:
    """A model of the task, with what decides who may see it and its name."""

    model_id: int
    name: str
    owner_id: int | None
    owner_name: str
    is_anonymous: bool
    is_published: bool


@dataclass(frozen=True, eq=False)
class ScoreCube:
    """Every model (sorted by id) x every dataset (``dataset_ids``) x ``metric_names``.

    The arrays are ``Board``'s (see there); ``owner_ids`` is -1 for a model without owner.
    """

    keys: list[str]
    names: list[str]
    owner_names: list[str]
    dataset_ids: list[int]
    metric_names: list[str]
    tag_names: list[str]
    model_ids: np.ndarray
    owner_ids: np.ndarray
    published: np.ndarray
    anonymous: np.ndarray
    values: np.ndarray
    main: np.ndarray
    present: np.ndarray
    ci_lows: np.ndarray
    ci_highs: np.ndarray
    tag_values: np.ndarray
    covered: np.ndarray
    totals: np.ndarray


def cube_build(
    models: Sequence[CubeModel],
    scores: ScoreColumns,
    metric_names: Sequence[str],
    main_metric: str,
) -> ScoreCube:
    """Return the cube of ``models`` and ``scores``.

    ``scores.dataset_slugs`` hold the datasets' ids as text (a cube names datasets by id,
    so renaming one does not touch it). Scores of other models are left out.
    """
    dataset_ids = sorted({int(slug) for slug in scores.dataset_slugs})
    board = Board.load(
        [
            ModelRecord(model.model_id, model.name, model.owner_name, model.is_anonymous, True)
            for model in models
        ],
        [DatasetRecord(str(pk), "", "", None, 0.0) for pk in dataset_ids],
        scores,
        metric_names,
        main_metric,
    )
    by_id = {model.model_id: model for model in models}
    listed = [by_id[record.model_id] for record in board.models]
    return ScoreCube(
        keys=board.keys,
        names=[model.name for model in listed],
        owner_names=[model.owner_name for model in listed],
        dataset_ids=dataset_ids,
        metric_names=board.metric_names,
        tag_names=board.tag_names,
        model_ids=np.array([model.model_id for model in listed], dtype=np.int64),
        owner_ids=np.array(
            [-1 if model.owner_id is None else model.owner_id for model in listed], dtype=np.int64
        ),
        published=np.array([model.is_published for model in listed], dtype=bool),
        anonymous=np.array([model.is_anonymous for model in listed], dtype=bool),
        values=board.values,
        main=np.array(board.main),
        present=board.present,
        ci_lows=board.ci_lows,
        ci_highs=board.ci_highs,
        tag_values=board.tag_values,
        covered=board.covered,
        totals=board.totals,
    )


def cube_encode(cube: ScoreCube) -> bytes:
    """Return ``cube`` as bytes: a length-prefixed JSON header, then the raw arrays."""
    arrays = [
        np.ascontiguousarray(getattr(cube, name), dtype=dtype) for name, dtype in _ARRAYS.items()
    ]
    header = orjson.dumps(
        {
            "format": CUBE_FORMAT,
            "keys": cube.keys,
            "names": cube.names,
            "owner_names": cube.owner_names,
            "dataset_ids": cube.dataset_ids,
            "metric_names": cube.metric_names,
            "tag_names": cube.tag_names,
            "shapes": [list(array.shape) for array in arrays],
        }
    )
    return b"".join(
        [_HEADER_LENGTH.pack(len(header)), header, *(array.tobytes() for array in arrays)]
    )


def cube_decode(payload: bytes | memoryview) -> ScoreCube:
    """Return the cube ``cube_encode`` stored (read-only arrays over ``payload``).

    Raises ``CubeFormatError`` for another format or a damaged value.
    """
    try:
        (length,) = _HEADER_LENGTH.unpack_from(payload, 0)
        start = _HEADER_LENGTH.size
        header = orjson.loads(bytes(payload[start : start + length]))
        if header.get("format") != CUBE_FORMAT:
            raise CubeFormatError(f"cube format {header.get('format')!r}, not {CUBE_FORMAT}")
        offset = start + length
        arrays: dict[str, np.ndarray] = {}
        for (name, dtype), shape in zip(_ARRAYS.items(), header["shapes"], strict=True):
            count = int(np.prod(shape, dtype=np.int64))
            array = np.frombuffer(payload, dtype=dtype, count=count, offset=offset)
            arrays[name] = array.reshape(shape)
            offset += array.nbytes
        if offset != len(payload):
            raise CubeFormatError("the cube's length does not match its header")
        return ScoreCube(
            keys=header["keys"],
            names=header["names"],
            owner_names=header["owner_names"],
            dataset_ids=header["dataset_ids"],
            metric_names=header["metric_names"],
            tag_names=header["tag_names"],
            **arrays,
        )
    except (struct.error, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        if isinstance(error, CubeFormatError):
            raise
        raise CubeFormatError(f"the cube cannot be read: {error}") from error


class ResampleReader(Protocol):
    """Return the stored resamples of each (model id, dataset id) pair asked that has some."""

    def __call__(
        self, model_ids: Sequence[int], dataset_ids: Sequence[int]
    ) -> Mapping[tuple[int, int], np.ndarray]: ...


@dataclass(frozen=True, eq=False)
class _CubeResamples:
    """A board's ``ResampleSource``: rows by the cube's model ids, positions by dataset id."""

    model_ids: np.ndarray
    dataset_ids: Sequence[int]
    read: ResampleReader | None

    def __call__(self, rows: np.ndarray, positions: Sequence[int]) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        result = np.full((rows.size, len(positions), BOOTSTRAP_RESAMPLES), np.nan)
        if self.read is None or rows.size == 0 or not positions:
            return result
        model_ids = self.model_ids[rows].tolist()
        dataset_ids = [self.dataset_ids[position] for position in positions]
        found = self.read(model_ids, dataset_ids)
        for row, model_id in enumerate(model_ids):
            for column, dataset_id in enumerate(dataset_ids):
                values = found.get((model_id, dataset_id))
                if values is not None:
                    result[row, column] = values
        return result


class _CubeModels(Sequence):
    """The ``ModelRecord`` of each listed model, built when asked for (only page rows are)."""

    def __init__(self, cube: ScoreCube, listed: np.ndarray, shown: np.ndarray) -> None:
        self._cube = cube
        self._listed = listed.tolist()
        self._shown = shown.tolist()

    def __len__(self) -> int:
        return len(self._listed)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(len(self)))]
        position = self._listed[index]
        cube = self._cube
        return ModelRecord(
            int(cube.model_ids[position]),
            cube.names[position],
            cube.owner_names[position],
            bool(cube.anonymous[position]),
            self._shown[index],
        )


def cube_board(
    cube: ScoreCube,
    *,
    datasets: Sequence[tuple[int, str]],
    manages: bool,
    user_id: int | None,
    resamples_of: ResampleReader | None = None,
) -> Board:
    """Return the ``Board`` a viewer gets: their models, ``datasets`` as (id, slug) in order.

    Task owners (``manages``) see every model; anyone else the published ones and their
    own (``user_id``). Someone else's anonymous model keeps no name (``show_identity``).
    A dataset the cube does not hold (no scores yet) is all missing. The cube keeps no
    bootstrap resamples (4 kB a score): the board reads those of the rows a page needs
    through ``resamples_of`` (none without it).
    """
    own = cube.owner_ids == (-2 if user_id is None else user_id)
    listed = np.arange(len(cube.keys)) if manages else np.flatnonzero(cube.published | own)
    shown = np.ones(listed.size, dtype=bool) if manages else (~cube.anonymous | own)[listed]
    column_of = {pk: index for index, pk in enumerate(cube.dataset_ids)}
    columns = [column_of.get(pk, -1) for pk, _ in datasets]
    slugs = [slug for _, slug in datasets]
    return Board(
        keys=[cube.keys[index] for index in listed.tolist()],
        models=_CubeModels(cube, listed, shown),
        slugs=slugs,
        slug_position={slug: index for index, slug in enumerate(slugs)},
        metric_names=list(cube.metric_names),
        metric_position={name: index for index, name in enumerate(cube.metric_names)},
        values=_pick(cube.values, listed, columns, np.nan),
        main=_pick(cube.main, listed, columns, np.nan),
        present=_pick(cube.present, listed, columns, False),
        ci_lows=_pick(cube.ci_lows, listed, columns, np.nan),
        ci_highs=_pick(cube.ci_highs, listed, columns, np.nan),
        tag_names=list(cube.tag_names),
        tag_values=_pick(cube.tag_values, listed, columns, np.nan),
        covered=_pick(cube.covered, listed, columns, -1),
        totals=_pick(cube.totals, listed, columns, 0),
        resamples_of=_CubeResamples(
            cube.model_ids[listed], [pk for pk, _ in datasets], resamples_of
        ),
    )


def _pick(array: np.ndarray, rows: np.ndarray, columns: list[int], fill: Any) -> np.ndarray:
    """Return ``array[rows][:, columns]`` (a copy), ``fill`` where a column is -1."""
    if columns and min(columns) >= 0:
        return array[np.ix_(rows, columns)]
    taken = array[rows]
    result = np.full((rows.size, len(columns), *array.shape[2:]), fill, dtype=array.dtype)
    for position, column in enumerate(columns):
        if column >= 0:
            result[:, position] = taken[:, column]
    return result
