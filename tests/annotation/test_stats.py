"""Cached stats: the hooks move the counters, stats_recompute rebuilds the same numbers."""

from __future__ import annotations

import random

import pytest

from annotation import stats
from annotation.models import Example, RoundStats, Validation, ValidationState, WorkerStats
from tasks import services as task_services
from tasks.models import Context
from tests.factories import (
    CampaignWorkerFactory,
    ContextFactory,
    ExampleFactory,
    UserFactory,
    ValidationFactory,
)

pytestmark = pytest.mark.django_db


def snapshot(task):
    """All cached counters of a task, comparable across a recompute."""
    rounds = {
        row.round_id: tuple(getattr(row, field) for field in stats.ROUND_FIELDS)
        for row in RoundStats.objects.filter(round__task=task)
        if any(getattr(row, field) for field in stats.ROUND_FIELDS)
    }
    workers = {
        (row.round_id, row.user_id, row.campaign_worker_id): tuple(
            getattr(row, field) for field in stats.WORKER_FIELDS
        )
        for row in WorkerStats.objects.filter(task=task)
        if any(getattr(row, field) for field in stats.WORKER_FIELDS)
    }
    contexts = {
        row.pk: tuple(getattr(row, field) for field in stats.CONTEXT_FIELDS)
        for row in Context.objects.filter(task=task)
    }
    return rounds, workers, contexts


def new_example(task, **kwargs):
    example = ExampleFactory(task=task, model_wrong=None, **kwargs)
    stats.stats_example_created(example)
    return example


def set_verdict(example, model_wrong):
    example.model_wrong = model_wrong
    example.save(update_fields=["model_wrong"])
    stats.stats_example_verdict(example)


def settle(example, state):
    previous = example.validation_state
    example.validation_state = state
    example.save(update_fields=["validation_state"])
    stats.stats_example_settled(example, previous)


def retract(example):
    example.retracted = True
    example.save(update_fields=["retracted"])
    stats.stats_example_retracted(example)


def test_example_lifecycle_moves_round_worker_and_context_counters(task):
    example = new_example(task, time_spent_ms=1500)
    round_stats = RoundStats.objects.get(round=example.round)
    assert (round_stats.collected, round_stats.fooled) == (1, 0)
    set_verdict(example, True)
    settle(example, ValidationState.CORRECT)
    summary = stats.round_stats(example.round)
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
    assert stats.round_stats(example.round).verified_fooled == 0

    # Retraction removes the example from every count and counts it as retracted.
    retract(example)
    worker.refresh_from_db()
    assert (worker.examples, worker.fooled, worker.rejected, worker.retracted) == (0, 0, 0, 1)
    summary = stats.round_stats(example.round)
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
    assert stats.round_stats(example.round).fooled == 0
    settle(example, ValidationState.CORRECT)
    assert stats.round_stats(example.round).verified_fooled == 0


def test_verdict_after_settling_counts_verified_fooled(task):
    example = new_example(task)
    settle(example, ValidationState.CORRECT)
    assert stats.round_stats(example.round).verified_fooled == 0
    set_verdict(example, True)
    assert stats.round_stats(example.round).verified_fooled == 1


def test_validation_hook_counts_crowd_work_only(task, owner):
    example = new_example(task)
    validation = ValidationFactory(example=example, time_spent_ms=700)
    stats.stats_validation_created(validation)
    owner_verdict = ValidationFactory(example=example, user=owner, is_owner_verdict=True)
    stats.stats_validation_created(owner_verdict)
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
            for example in batch:
                example.model_wrong = rng.random() < 0.5
                example.save(update_fields=["model_wrong"])
            stats.stats_examples_verdict(batch)
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
            stats.stats_validation_created(validation)
        elif operation == "settle":
            state = rng.choice([s for s in ValidationState.values if s != example.validation_state])
            settle(example, state)
        elif operation == "retract" and not example.retracted:
            retract(example)

    cached = snapshot(task)
    assert cached[0], "the sequence produced some stats"
    result = stats.stats_recompute(task)
    assert result["rounds"] == 2
    assert snapshot(task) == cached


def test_recompute_repairs_drift(task):
    example = new_example(task)
    set_verdict(example, True)
    RoundStats.objects.filter(round=example.round).update(collected=99, fooled=0)
    WorkerStats.objects.filter(user=example.user).update(examples=7)
    Context.objects.filter(pk=example.context_id).update(fooled_count=5)
    stats.stats_recompute(task)
    summary = stats.round_stats(example.round)
    assert (summary.collected, summary.fooled) == (1, 1)
    assert WorkerStats.objects.get(user=example.user).examples == 1
    assert Context.objects.get(pk=example.context_id).fooled_count == 1


@pytest.mark.parametrize("retracted_meanwhile", [False, True])
def test_model_answer_from_a_read_copy_counts_as_the_locked_path(task, retracted_meanwhile):
    """The live job passes the row it read: a stale copy falls back to locking the row."""
    from annotation import services
    from annotation.models import ExampleStatus

    example = new_example(task, status=ExampleStatus.AWAITING_MODEL)
    read_by_job = Example.objects.select_related("config_version").get(pk=example.pk)
    if retracted_meanwhile:
        retract(example)
    answered = services.example_record_model_answer(
        example.pk, output={"label": "negative", "prob": {"negative": 0.9}}, example=read_by_job
    )
    stored = Example.objects.get(pk=example.pk)
    assert stored.status == ExampleStatus.MODEL_ANSWERED
    assert stored.retracted is retracted_meanwhile
    assert answered.model_wrong == stored.model_wrong
    assert answered.model_output == stored.model_output
    cached = snapshot(task)
    stats.stats_recompute(task)
    assert snapshot(task) == cached
    # A second answer is ignored, whichever copy it comes with.
    assert services.example_record_model_answer(example.pk, output={}, example=answered) is None


@pytest.mark.parametrize("retracted_meanwhile", [False, True])
def test_a_batch_of_answers_counts_as_answers_one_by_one(task, retracted_meanwhile):
    """A drain stores its batch in one transaction, from the rows it read: the same rows and
    counters as the answers stored one at a time (a stale copy falls back to locking)."""
    from annotation import services
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
    answers = [
        services.ModelAnswer(example, {"label": label, "prob": {label: 0.9}}, 12.5, "v1")
        for example, label in zip(sorted(read, key=lambda e: -e.pk), labels, strict=True)
    ]
    stored = services.examples_record_model_answers(answers)
    assert set(stored) == {e.pk for e in examples}
    for pk, row in stored.items():
        fresh = Example.objects.get(pk=pk)
        assert fresh.status == row.status == ExampleStatus.MODEL_ANSWERED
        assert (fresh.model_wrong, fresh.model_latency_ms, fresh.model_version) == (
            row.model_wrong,
            12.5,
            "v1",
        )
    assert any(row.model_wrong for row in stored.values())
    cached = snapshot(task)
    stats.stats_recompute(task)
    assert snapshot(task) == cached
    # Answers to examples already answered are ignored.
    assert set(services.examples_record_model_answers(answers).values()) == {None}
