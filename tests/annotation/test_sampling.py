"""Context sampling strategies: least used, uniform, least fooled, failed validation, tags."""

from __future__ import annotations

import random

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from annotation.sampling import sample_context
from tasks.models import Context, ContextSampling
from tests.factories import ContextFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def round_(task):
    return task.rounds.get(number=1)


def make(task, n, **fields):
    return [ContextFactory(task=task, **fields) for _ in range(n)]


def test_least_used_takes_the_least_served_with_random_ties(task, round_):
    contexts = make(task, 6)
    Context.objects.filter(pk__in=[c.pk for c in contexts[:3]]).update(times_served=5)
    seen = {
        sample_context(round_, ContextSampling.LEAST_USED, rng=random.Random(seed)).pk
        for seed in range(40)
    }
    assert seen == {c.pk for c in contexts[3:]}


def test_uniform_reaches_every_context(task, round_):
    contexts = make(task, 4)
    Context.objects.filter(pk=contexts[0].pk).update(times_served=100)
    seen = {
        sample_context(round_, ContextSampling.UNIFORM, rng=random.Random(seed)).pk
        for seed in range(80)
    }
    assert seen == {c.pk for c in contexts}


def test_least_fooled(task, round_):
    contexts = make(task, 3)
    Context.objects.filter(pk__in=[contexts[0].pk, contexts[2].pk]).update(fooled_count=2)
    for seed in range(10):
        picked = sample_context(round_, ContextSampling.LEAST_FOOLED, rng=random.Random(seed))
        assert picked.pk == contexts[1].pk


def test_failed_validation_only_contexts_whose_examples_all_failed(task, round_):
    contexts = make(task, 3)
    Context.objects.filter(pk=contexts[0].pk).update(example_count=2, validated_incorrect_count=2)
    Context.objects.filter(pk=contexts[1].pk).update(example_count=2, validated_incorrect_count=1)
    for seed in range(10):
        picked = sample_context(round_, ContextSampling.FAILED_VALIDATION, rng=random.Random(seed))
        assert picked.pk == contexts[0].pk


def test_failed_validation_falls_back_to_least_used(task, round_):
    contexts = make(task, 2)
    Context.objects.filter(pk=contexts[0].pk).update(times_served=3)
    picked = sample_context(round_, ContextSampling.FAILED_VALIDATION, rng=random.Random(1))
    assert picked.pk == contexts[1].pk


@pytest.mark.parametrize("strategy", list(ContextSampling.values))
def test_every_strategy_filters_by_tag(task, round_, strategy):
    make(task, 4, tag="food")
    tech = make(task, 2, tag="tech")
    for seed in range(10):
        picked = sample_context(round_, strategy, tag="tech", rng=random.Random(seed))
        assert picked.pk in {c.pk for c in tech}


@pytest.mark.parametrize("strategy", list(ContextSampling.values))
def test_no_context_gives_none_and_queries_are_bounded(task, round_, strategy):
    assert sample_context(round_, strategy) is None
    make(task, 30)
    with CaptureQueriesContext(connection) as queries:
        assert sample_context(round_, strategy) is not None
    assert len(queries) <= 4


class _CountersMoveMeanwhile(random.Random):
    """An rng whose draw lets other requests serve every context (the race of a busy site)."""

    def randint(self, a, b):
        Context.objects.update(
            times_served=F("times_served") + 1, fooled_count=F("fooled_count") + 1
        )
        return super().randint(a, b)


@pytest.mark.parametrize("strategy", list(ContextSampling.values))
def test_a_context_comes_back_when_counters_move_between_queries(task, round_, strategy):
    contexts = make(task, 5)
    for seed in range(10):
        picked = sample_context(round_, strategy, rng=_CountersMoveMeanwhile(seed))
        assert picked is not None
        assert picked.pk in {c.pk for c in contexts}


def test_least_used_race_falls_back_to_the_least_served(task, round_):
    contexts = make(task, 3)
    Context.objects.filter(pk=contexts[0].pk).update(times_served=2)
    picked = sample_context(round_, ContextSampling.LEAST_USED, rng=_CountersMoveMeanwhile(3))
    assert picked.pk in {contexts[1].pk, contexts[2].pk}


def test_least_used_reads_its_pool_once_in_a_while(task, round_, monkeypatch):
    """One query reads the pool; the next samplings take it from the cache until it is
    ``SAMPLING_POOL_SECONDS`` old."""
    from django.core.cache import cache

    from annotation import sampling

    make(task, 40)
    with CaptureQueriesContext(connection) as queries:
        assert sample_context(round_, ContextSampling.LEAST_USED) is not None
    assert len(queries) == 1
    with CaptureQueriesContext(connection) as queries:
        for _ in range(5):
            assert sample_context(round_, ContextSampling.LEAST_USED) is not None
    assert len(queries) == 0
    cache.clear()  # the pool expired
    Context.objects.update(times_served=9)
    fresh = ContextFactory(task=task)
    assert sample_context(round_, ContextSampling.LEAST_USED).pk == fresh.pk
    assert sampling.SAMPLING_POOL_SECONDS <= 5
