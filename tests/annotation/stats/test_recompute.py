"""Cached stats: each event's counter deltas move the rows they should, and stats_recompute
rebuilds the same numbers from the data."""

from __future__ import annotations

import random

import pytest

from annotation.models import Example, RoundStats, Validation, ValidationState, WorkerStats
from annotation.services import answers
from annotation.stats import counters
from annotation.stats.buffer import counters_apply, counters_flush
from annotation.stats.recompute import stats_recompute
from annotation.stats.summaries import round_stats
from tasks import services as task_services
from tasks.models import Context
from tests.annotation.conftest import snapshot
from tests.factories import (
    CampaignWorkerFactory,
    ContextFactory,
    ExampleFactory,
    UserFactory,
    ValidationFactory,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("redis_connection")]


def new_example(task, **kwargs):
    example = ExampleFactory(task=task, model_wrong=None, **kwargs)
    counters_apply(counters.example_created(example))
    return example


def set_verdict(example, model_wrong):
    example.model_wrong = model_wrong
    example.save(update_fields=["model_wrong"])
    counters_apply(counters.example_verdict(example))


def settle(example, state):
    previous = example.validation_state
    example.validation_state = state
    example.save(update_fields=["validation_state"])
    counters_apply(counters.example_settled(example, previous))


def retract(example):
    example.retracted = True
    example.save(update_fields=["retracted"])
    counters_apply(counters.example_retracted(example))


def validate(validation):
    counters_apply(counters.validation_created(validation, validation.example))


def test_example_lifecycle_moves_round_worker_and_context_counters(task):
    example = new_example(task, time_spent_ms=1500)
    row = RoundStats.objects.get(round=example.round)
    assert (row.collected, row.fooled) == (1, 0)
    set_verdict(example, True)
    settle(example, ValidationState.CORRECT)
    summary = round_stats(example.round)
    assert (summary.collected, summary.fooled, summary.verified_fooled, summary.validated) == (
        1,
        1,
        1,
        1,
    )
    assert summary.model_error_rate == 1.0
    assert summary.verified_model_error_rate == 1.0
    worker = WorkerStats.objects.get(user=example.user)
    assert (worker.examples, worker.fooled, worker.verified_fooled, worker.time_spent_ms) == (
        1,
        1,
        1,
        1500,
    )
    context = Context.objects.get(pk=example.context_id)
    assert (context.fooled_count, context.validated_correct_count) == (1, 1)

    # The owner overrides: incorrect. Verified fooled is undone, rejected counted.
    settle(example, ValidationState.INCORRECT)
    worker.refresh_from_db()
    context.refresh_from_db()
    assert (worker.verified_fooled, worker.rejected) == (0, 1)
    assert (context.validated_correct_count, context.validated_incorrect_count) == (0, 1)
    assert round_stats(example.round).verified_fooled == 0

    # Retraction removes the example from every count and counts it as retracted.
    retract(example)
    worker.refresh_from_db()
    assert (worker.examples, worker.fooled, worker.rejected, worker.retracted) == (0, 0, 0, 1)
    summary = round_stats(example.round)
    assert (summary.collected, summary.fooled, summary.validated, summary.retracted) == (
        0,
        0,
        0,
        1,
    )
    assert summary.model_error_rate is None
    context.refresh_from_db()
    assert (context.fooled_count, context.validated_incorrect_count) == (0, 0)


def test_hooks_on_retracted_examples_do_not_count(task):
    example = new_example(task)
    retract(example)
    set_verdict(example, True)  # a late model answer
    assert round_stats(example.round).fooled == 0
    settle(example, ValidationState.CORRECT)
    assert round_stats(example.round).verified_fooled == 0


def test_verdict_after_settling_counts_verified_fooled(task):
    example = new_example(task)
    settle(example, ValidationState.CORRECT)
    assert round_stats(example.round).verified_fooled == 0
    set_verdict(example, True)
    assert round_stats(example.round).verified_fooled == 1


def test_validation_hook_counts_crowd_work_only(task, owner):
    example = new_example(task)
    validation = ValidationFactory(example=example, time_spent_ms=700)
    validate(validation)
    owner_verdict = ValidationFactory(example=example, user=owner, is_owner_verdict=True)
    validate(owner_verdict)
    row = WorkerStats.objects.get(user=validation.user)
    assert (row.validations, row.time_spent_ms, row.examples) == (1, 700, 0)
    assert not WorkerStats.objects.filter(user=owner).exists()


def test_decrement_on_a_drifted_row_does_not_go_negative(task):
    example = ExampleFactory(task=task, model_wrong=True)  # created without the hook
    retract(example)
    row = RoundStats.objects.get(round=example.round)
    assert (row.collected, row.fooled, row.retracted) == (0, 0, 1)


def test_campaign_worker_gets_its_own_row(task):
    worker = CampaignWorkerFactory(campaign__task=task)
    example = new_example(task, user=None, campaign_worker=worker)
    set_verdict(example, True)
    row = WorkerStats.objects.get(campaign_worker=worker)
    assert (row.user_id, row.examples, row.fooled) == (None, 1, 1)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_cached_counters_equal_recomputed_after_random_operations(task, seed):
    """Property-style: any sequence of service events keeps cached == recomputed."""
    rng = random.Random(seed)
    round_two = task_services.round_open(task, close_previous=False)
    rounds = [task.rounds.get(number=1), round_two]
    contexts = [ContextFactory(task=task, round=round_) for round_ in rounds for _ in range(2)]
    users = [UserFactory() for _ in range(4)]
    campaign_workers = [CampaignWorkerFactory(campaign__task=task) for _ in range(2)]
    examples: list[Example] = []

    def pick_worker():
        if rng.random() < 0.7:
            return {"user": rng.choice(users), "campaign_worker": None}
        return {"user": None, "campaign_worker": rng.choice(campaign_workers)}

    for _ in range(120):
        operation = rng.choice(
            ["create", "create", "verdict", "verdicts", "validate", "settle", "retract"]
        )
        if operation == "create" or not examples:
            context = rng.choice(contexts)
            examples.append(
                new_example(
                    task,
                    round=context.round,
                    context=context,
                    time_spent_ms=rng.choice([None, rng.randint(1, 90_000)]),
                    **pick_worker(),
                )
            )
            continue
        if operation == "verdicts":  # a drain's batch: several first verdicts at once
            batch = [e for e in rng.sample(examples, min(4, len(examples)))]
            for example in batch:
                example.refresh_from_db()
            batch = [example for example in batch if example.model_wrong is None]
            deltas = counters.CounterDeltas()
            for example in batch:
                example.model_wrong = rng.random() < 0.5
                example.save(update_fields=["model_wrong"])
                deltas.merge(counters.example_verdict(example))
            counters_apply(deltas)
            continue
        example = rng.choice(examples)
        example.refresh_from_db()
        if operation == "verdict" and example.model_wrong is None:
            set_verdict(example, rng.random() < 0.5)
        elif operation == "validate":
            worker = pick_worker()
            if Validation.objects.filter(example=example, **worker).exists():
                continue
            validation = ValidationFactory(
                example=example,
                label=rng.choice(["correct", "incorrect", "flagged"]),
                time_spent_ms=rng.choice([None, rng.randint(1, 30_000)]),
                **worker,
            )
            validate(validation)
        elif operation == "settle":
            state = rng.choice([s for s in ValidationState.values if s != example.validation_state])
            settle(example, state)
        elif operation == "retract" and not example.retracted:
            retract(example)

    cached = snapshot(task)
    assert cached[0], "the sequence produced some stats"
    result = stats_recompute(task)
    assert result["rounds"] == 2
    assert snapshot(task) == cached


def test_recompute_repairs_drift(task):
    example = new_example(task)
    set_verdict(example, True)
    RoundStats.objects.filter(round=example.round).update(collected=99, fooled=0)
    WorkerStats.objects.filter(user=example.user).update(examples=7)
    Context.objects.filter(pk=example.context_id).update(fooled_count=5)
    stats_recompute(task)
    summary = round_stats(example.round)
    assert (summary.collected, summary.fooled) == (1, 1)
    assert WorkerStats.objects.get(user=example.user).examples == 1
    assert Context.objects.get(pk=example.context_id).fooled_count == 1


@pytest.mark.parametrize("retracted_meanwhile", [False, True])
def test_a_batch_of_answers_counts_as_answers_one_by_one(
    task, retracted_meanwhile, django_capture_on_commit_callbacks
):
    """A drain stores its batch in one transaction, from the rows it read: a stale copy (an
    example retracted since) falls back to locking the row; the buffered counters, once
    flushed, equal a recount."""
    from annotation.models import ExampleStatus

    contexts = [ContextFactory(task=task) for _ in range(2)]
    users = [UserFactory() for _ in range(2)]
    examples = [
        new_example(
            task, status=ExampleStatus.AWAITING_MODEL, context=contexts[n % 2], user=users[n // 2]
        )
        for n in range(4)
    ]
    read = list(
        Example.objects.select_related("config_version").filter(pk__in=[e.pk for e in examples])
    )
    if retracted_meanwhile:
        retract(examples[0])
    labels = ["negative", "positive", "negative", "neutral"]
    batch = [
        answers.ModelAnswer(example, {"label": label, "prob": {label: 0.9}}, 12.5, "v1")
        for example, label in zip(sorted(read, key=lambda e: -e.pk), labels, strict=True)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        stored = answers.examples_record_model_answers(batch)
    assert set(stored) == {e.pk for e in examples}
    for pk, row in stored.items():
        fresh = Example.objects.get(pk=pk)
        assert fresh.status == row.status == ExampleStatus.MODEL_ANSWERED
        assert fresh.retracted is (retracted_meanwhile and pk == examples[0].pk)
        assert (fresh.model_wrong, fresh.model_latency_ms, fresh.model_version) == (
            row.model_wrong,
            12.5,
            "v1",
        )
    assert any(row.model_wrong for row in stored.values())
    counters_flush()
    cached = snapshot(task)
    stats_recompute(task)
    assert snapshot(task) == cached
    # Answers to examples already answered are ignored.
    assert set(answers.examples_record_model_answers(batch).values()) == {None}
