"""What each annotation event adds to the cached counter rows. Pure: no database, no Redis.

The counter rows are ``RoundStats`` (one per round), ``WorkerStats`` (one per round and user or
campaign worker) and the usage counters of ``tasks.Context``. Their meaning, shared by the
event functions here and by ``annotation.stats.recompute.stats_recompute``:

- ``RoundStats.collected`` / ``WorkerStats.examples``: examples that are not retracted.
- ``fooled``: of those, the ones whose ``model_wrong`` is True.
- ``verified_fooled``: of those, the ones settled ``correct`` (by validators or an owner).
- ``WorkerStats.rejected``: examples not retracted and settled ``incorrect``.
- ``RoundStats.validated``: examples not retracted and settled (any state but pending).
- ``retracted``: retracted examples.
- ``WorkerStats.validations``: crowd validations (owners' verdicts are not crowd work).
- ``WorkerStats.time_spent_ms``: the time of the worker's examples (retracted ones too) and
  validations.
- ``Context.example_count``: examples written on the context and not retracted;
  ``times_served``: how often the create page showed it; ``fooled_count`` /
  ``validated_correct_count`` / ``validated_incorrect_count``: its examples, not retracted,
  that fooled the model / were settled correct / were settled incorrect.

Each event function returns the ``CounterDeltas`` of one change of one example (or one
validation, or one showing of a context), computed from the example's state before and after
that change. The caller makes the change under the example's row lock (or with a conditional
UPDATE), so every change is counted once and the sum of all deltas equals a recount, whatever
order they are applied in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

ROUND_FIELDS = ("collected", "fooled", "verified_fooled", "retracted", "validated")
WORKER_FIELDS = (
    "examples",
    "fooled",
    "verified_fooled",
    "rejected",
    "retracted",
    "validations",
    "time_spent_ms",
)
CONTEXT_FIELDS = (
    "times_served",
    "example_count",
    "fooled_count",
    "validated_correct_count",
    "validated_incorrect_count",
)

# The order in which counter rows are written: every writer takes the rows in this order
# (then by key), so two writers never wait on each other's rows in opposite orders.
KIND_ORDER = ("context", "worker", "round")
FIELDS_OF_KIND = {"context": CONTEXT_FIELDS, "worker": WORKER_FIELDS, "round": ROUND_FIELDS}

PENDING = "pending"
CORRECT = "correct"
INCORRECT = "incorrect"


@dataclass(frozen=True, order=True)
class CounterRow:
    """One counter row: ``kind`` is "context", "worker" or "round".

    ``key``: ``(context_id,)``, ``(round_id,)``, or for a worker ``(round_id, owner, id,
    task_id)`` where ``owner`` is "user" or "campaign_worker".
    """

    kind: str
    key: tuple

    @classmethod
    def context(cls, context_id: int) -> CounterRow:
        return cls("context", (int(context_id),))

    @classmethod
    def round(cls, round_id: int) -> CounterRow:
        return cls("round", (int(round_id),))

    @classmethod
    def worker(
        cls, *, task_id: int, round_id: int, user_id: int | None, campaign_worker_id: int | None
    ) -> CounterRow | None:
        """The row of a user, else of a campaign worker; None for neither (no row)."""
        if user_id is not None:
            return cls("worker", (int(round_id), "user", int(user_id), int(task_id)))
        if campaign_worker_id is not None:
            return cls(
                "worker", (int(round_id), "campaign_worker", int(campaign_worker_id), int(task_id))
            )
        return None

    def name(self) -> str:
        """A stable text form, ``kind:part:part``, for a Redis key."""
        return ":".join([self.kind, *map(str, self.key)])

    @classmethod
    def from_name(cls, name: str) -> CounterRow:
        """The row of ``name()``; ValueError for a text that is not one."""
        kind, *parts = name.split(":")
        if kind in ("context", "round") and len(parts) == 1:
            return cls(kind, (int(parts[0]),))
        if kind == "worker" and len(parts) == 4 and parts[1] in ("user", "campaign_worker"):
            return cls(kind, (int(parts[0]), parts[1], int(parts[2]), int(parts[3])))
        raise ValueError(f"not a counter row: {name!r}")


class CounterDeltas:
    """Amounts to add to counter rows: ``{CounterRow: {field: amount}}``, zeros left out."""

    def __init__(self) -> None:
        self._rows: dict[CounterRow, dict[str, int]] = defaultdict(dict)

    def add(self, row: CounterRow | None, amounts: Mapping[str, int]) -> CounterDeltas:
        """Add ``amounts`` to ``row`` (nothing for a None row); return self."""
        if row is None:
            return self
        fields = FIELDS_OF_KIND[row.kind]
        target = self._rows[row]
        for field, amount in amounts.items():
            if field not in fields:
                raise ValueError(f"{row.kind} rows have no counter {field!r}")
            total = target.get(field, 0) + int(amount)
            if total:
                target[field] = total
            else:
                target.pop(field, None)
        if not target:
            del self._rows[row]
        return self

    def merge(self, other: CounterDeltas) -> CounterDeltas:
        for row, amounts in other.items():
            self.add(row, amounts)
        return self

    def items(self) -> Iterator[tuple[CounterRow, dict[str, int]]]:
        """The rows in write order (``KIND_ORDER``, then by key) with their amounts."""
        for row in sorted(self._rows, key=lambda row: (KIND_ORDER.index(row.kind), row.key)):
            yield row, dict(self._rows[row])

    def __bool__(self) -> bool:
        return bool(self._rows)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CounterDeltas) and dict(self.items()) == dict(other.items())

    def __repr__(self) -> str:
        return f"CounterDeltas({dict(self.items())!r})"


@dataclass(frozen=True)
class Contribution:
    """What one example that is not retracted adds beyond being collected."""

    fooled: int = 0
    verified_fooled: int = 0
    rejected: int = 0
    validated: int = 0
    context_correct: int = 0
    context_incorrect: int = 0

    @classmethod
    def of(cls, model_wrong: bool | None, state: str) -> Contribution:
        return cls(
            fooled=int(model_wrong is True),
            verified_fooled=int(model_wrong is True and state == CORRECT),
            rejected=int(state == INCORRECT),
            validated=int(state != PENDING),
            context_correct=int(state == CORRECT),
            context_incorrect=int(state == INCORRECT),
        )


NOTHING = Contribution()


def _writer_row(example) -> CounterRow | None:
    return CounterRow.worker(
        task_id=example.task_id,
        round_id=example.round_id,
        user_id=example.user_id,
        campaign_worker_id=example.campaign_worker_id,
    )


def _change(
    example, old: Contribution, new: Contribution, *, collected: int = 0, retracted: int = 0
) -> CounterDeltas:
    """The deltas of ``example`` going from ``old`` to ``new``, plus ``collected`` examples
    and ``retracted`` retractions, on its round, its writer and its context."""
    fooled = new.fooled - old.fooled
    verified = new.verified_fooled - old.verified_fooled
    deltas = CounterDeltas()
    deltas.add(
        CounterRow.round(example.round_id),
        {
            "collected": collected,
            "fooled": fooled,
            "verified_fooled": verified,
            "validated": new.validated - old.validated,
            "retracted": retracted,
        },
    )
    deltas.add(
        _writer_row(example),
        {
            "examples": collected,
            "fooled": fooled,
            "verified_fooled": verified,
            "rejected": new.rejected - old.rejected,
            "retracted": retracted,
        },
    )
    if example.context_id is not None:
        deltas.add(
            CounterRow.context(example.context_id),
            {
                "example_count": collected,
                "fooled_count": fooled,
                "validated_correct_count": new.context_correct - old.context_correct,
                "validated_incorrect_count": new.context_incorrect - old.context_incorrect,
            },
        )
    return deltas


def example_created(example) -> CounterDeltas:
    """A new example, with its verdict and validation state as created, and its time."""
    contribution = Contribution.of(example.model_wrong, example.validation_state)
    deltas = _change(example, NOTHING, contribution, collected=1)
    if example.time_spent_ms and example.time_spent_ms > 0:
        deltas.add(_writer_row(example), {"time_spent_ms": int(example.time_spent_ms)})
    return deltas


def example_verdict(example, previous_model_wrong: bool | None = None) -> CounterDeltas:
    """``example.model_wrong`` is now set (it was ``previous_model_wrong``)."""
    if example.retracted:
        return CounterDeltas()
    state = example.validation_state
    return _change(
        example,
        Contribution.of(previous_model_wrong, state),
        Contribution.of(example.model_wrong, state),
    )


def example_retracted(example) -> CounterDeltas:
    """``example`` was retracted; it carries its verdict and validation state of that time."""
    old = Contribution.of(example.model_wrong, example.validation_state)
    return _change(example, old, NOTHING, collected=-1, retracted=1)


def example_settled(example, previous_state: str) -> CounterDeltas:
    """``example.validation_state`` changed from ``previous_state``."""
    if example.retracted or previous_state == example.validation_state:
        return CounterDeltas()
    return _change(
        example,
        Contribution.of(example.model_wrong, previous_state),
        Contribution.of(example.model_wrong, example.validation_state),
    )


def validation_created(validation, example) -> CounterDeltas:
    """A crowd validation of ``example`` (an owner's verdict counts nothing here)."""
    deltas = CounterDeltas()
    if validation.is_owner_verdict:
        return deltas
    row = CounterRow.worker(
        task_id=example.task_id,
        round_id=example.round_id,
        user_id=validation.user_id,
        campaign_worker_id=validation.campaign_worker_id,
    )
    return deltas.add(row, {"validations": 1, "time_spent_ms": validation.time_spent_ms or 0})


def time_spent(example, *, user_id, campaign_worker_id, milliseconds: int) -> CounterDeltas:
    """``milliseconds`` more work by a worker in ``example``'s round (a late time record)."""
    deltas = CounterDeltas()
    if milliseconds <= 0:
        return deltas
    row = CounterRow.worker(
        task_id=example.task_id,
        round_id=example.round_id,
        user_id=user_id,
        campaign_worker_id=campaign_worker_id,
    )
    return deltas.add(row, {"time_spent_ms": int(milliseconds)})


def context_served(context_id: int) -> CounterDeltas:
    """The create page showed context ``context_id`` once more."""
    return CounterDeltas().add(CounterRow.context(context_id), {"times_served": 1})
