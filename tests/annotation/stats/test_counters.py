"""What each event adds to the counter rows (pure: no database)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from annotation.stats import counters
from annotation.stats.counters import CounterDeltas, CounterRow


def example(**fields):
    values = {
        "task_id": 1,
        "round_id": 2,
        "context_id": 3,
        "user_id": 4,
        "campaign_worker_id": None,
        "model_wrong": None,
        "validation_state": "pending",
        "retracted": False,
        "time_spent_ms": None,
    }
    values.update(fields)
    return SimpleNamespace(**values)


ROUND = CounterRow.round(2)
WORKER = CounterRow("worker", (2, "user", 4, 1))
CONTEXT = CounterRow.context(3)


def test_a_new_example_counts_once_on_its_round_writer_and_context_with_its_time():
    deltas = counters.example_created(example(time_spent_ms=1500))
    assert dict(deltas.items()) == {
        CONTEXT: {"example_count": 1},
        WORKER: {"examples": 1, "time_spent_ms": 1500},
        ROUND: {"collected": 1},
    }


def test_rows_come_in_the_fixed_order_context_worker_round():
    deltas = counters.example_verdict(example(model_wrong=True))
    assert [row.kind for row, _ in deltas.items()] == ["context", "worker", "round"]


def test_a_fooling_verdict_then_a_correct_settlement_then_a_retraction():
    fooled = example(model_wrong=True)
    assert dict(counters.example_verdict(fooled).items()) == {
        CONTEXT: {"fooled_count": 1},
        WORKER: {"fooled": 1},
        ROUND: {"fooled": 1},
    }
    fooled.validation_state = "correct"
    settled = counters.example_settled(fooled, "pending")
    assert dict(settled.items()) == {
        CONTEXT: {"validated_correct_count": 1},
        WORKER: {"verified_fooled": 1},
        ROUND: {"verified_fooled": 1, "validated": 1},
    }
    retracted = counters.example_retracted(fooled)
    assert dict(retracted.items()) == {
        CONTEXT: {"example_count": -1, "fooled_count": -1, "validated_correct_count": -1},
        WORKER: {"examples": -1, "fooled": -1, "verified_fooled": -1, "retracted": 1},
        ROUND: {
            "collected": -1,
            "fooled": -1,
            "verified_fooled": -1,
            "validated": -1,
            "retracted": 1,
        },
    }


def test_a_retracted_example_moves_nothing_on_a_verdict_or_a_settlement():
    gone = example(model_wrong=True, retracted=True, validation_state="correct")
    assert not counters.example_verdict(gone)
    assert not counters.example_settled(gone, "pending")


def test_an_override_from_correct_to_incorrect_moves_verified_to_rejected():
    item = example(model_wrong=True, validation_state="incorrect")
    deltas = dict(counters.example_settled(item, "correct").items())
    assert deltas[WORKER] == {"verified_fooled": -1, "rejected": 1}
    assert deltas[ROUND] == {"verified_fooled": -1}
    assert deltas[CONTEXT] == {"validated_correct_count": -1, "validated_incorrect_count": 1}


def test_a_crowd_validation_counts_for_its_validator_an_owners_verdict_does_not():
    item = example()
    crowd = SimpleNamespace(
        is_owner_verdict=False, user_id=9, campaign_worker_id=None, time_spent_ms=700
    )
    validator = CounterRow("worker", (2, "user", 9, 1))
    assert dict(counters.validation_created(crowd, item).items()) == {
        validator: {"validations": 1, "time_spent_ms": 700}
    }
    owner = SimpleNamespace(
        is_owner_verdict=True, user_id=9, campaign_worker_id=None, time_spent_ms=700
    )
    assert not counters.validation_created(owner, item)


def test_a_campaign_worker_has_a_row_of_its_own_and_nobody_has_none():
    crowd = example(user_id=None, campaign_worker_id=5)
    rows = [row for row, _ in counters.example_created(crowd).items()]
    assert CounterRow("worker", (2, "campaign_worker", 5, 1)) in rows
    nobody = example(user_id=None, campaign_worker_id=None)
    assert [row.kind for row, _ in counters.example_created(nobody).items()] == [
        "context",
        "round",
    ]


def test_deltas_add_up_drop_zeros_and_refuse_unknown_counters():
    deltas = CounterDeltas().add(ROUND, {"collected": 1}).add(ROUND, {"collected": -1})
    assert not deltas
    merged = counters.context_served(3).merge(counters.context_served(3))
    assert dict(merged.items()) == {CONTEXT: {"times_served": 2}}
    with pytest.raises(ValueError):
        CounterDeltas().add(ROUND, {"times_served": 1})


@pytest.mark.parametrize("row", [ROUND, WORKER, CONTEXT])
def test_a_row_name_round_trips(row):
    assert CounterRow.from_name(row.name()) == row


@pytest.mark.parametrize("name", ["", "round", "round:x", "worker:1:admin:2:3", "task:1"])
def test_a_malformed_row_name_is_refused(name):
    with pytest.raises(ValueError):
        CounterRow.from_name(name)
