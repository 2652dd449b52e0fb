"""Context sampling strategies for the create page (``Task.context_sampling``).

Every strategy reads only the round's contexts (optionally one tag) through the indexes of
``tasks.Context``: ``context_least_used`` (round, times_served, id), ``context_tag_least_used``
(round, tag, times_served) and ``context_least_fooled`` (round, fooled_count, id). Random
choices never use ``ORDER BY random()``: a random id between the smallest and the largest
candidate id is drawn and the first candidate at or after it is taken (a bounded index scan).

- ``least_used`` (default): the fewest showings (``times_served``), ties broken at random.
  The ``SAMPLING_POOL`` contexts shown least are read at most every ``SAMPLING_POOL_SECONDS``
  per round and tag and kept in the cache: the counters they are ordered by are themselves
  applied every few seconds (``annotation.stats.buffer``), so a fresher read would not be
  more exact. A tie wider than the pool is broken among its lowest ids, which move on as
  their counters grow.
- ``uniform``: any context of the round, at random.
- ``least_fooled``: as ``least_used``, by the fewest examples that fooled the model.
- ``failed_validation``: contexts whose examples were all settled incorrect (at least one);
  when there are none, falls back to ``least_used`` so workers are never stuck.

Every strategy returns a context whenever the round (or tag) has one. Counters move under
concurrent requests between the queries of one sampling; when the random pick comes back
empty because of that, the lowest-id candidate is taken instead.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import F, Max, Min, QuerySet

from annotation.selectors.contexts import contexts_remember
from tasks.models import Context, ContextSampling, Round


def _candidates(round_id: int, tag: str | None = None) -> QuerySet:
    queryset = Context.objects.filter(round_id=round_id)
    return queryset if tag is None else queryset.filter(tag=tag)


@dataclass(frozen=True)
class _Pool:
    """The contexts a strategy draws from: a round's, or its contexts of one tag."""

    round_id: int
    tag: str = ""

    def queryset(self) -> QuerySet:
        return _candidates(self.round_id, self.tag or None)


def _random_at_or_after(queryset: QuerySet, rng: random.Random) -> Context | None:
    bounds = queryset.aggregate(low=Min("id"), high=Max("id"))
    if bounds["low"] is None:
        return None
    pivot = rng.randint(bounds["low"], bounds["high"])
    picked = queryset.filter(id__gte=pivot).order_by("id").first()
    # Rows can leave the candidates between the two queries (a counter moved): never stuck.
    return picked or queryset.order_by("id").first()


SAMPLING_POOL = 32
SAMPLING_POOL_SECONDS = 2


def _least_by(pool: _Pool, counter: str, rng: random.Random) -> Context | None:
    """A candidate with the lowest ``counter`` at random, from the cached list of the
    ``SAMPLING_POOL`` lowest (read again once it is ``SAMPLING_POOL_SECONDS`` old)."""
    key = f"annotation:sampling:{counter}:{pool.round_id}:{pool.tag}"
    candidates = cache.get(key)
    if candidates is None:
        candidates = list(pool.queryset().order_by(counter, "id")[:SAMPLING_POOL])
        if not candidates:
            return None  # not kept: contexts uploaded now are sampled at once
        cache.set(key, candidates, SAMPLING_POOL_SECONDS)
        contexts_remember(candidates)  # the create POST reads the one it names from there
    lowest = getattr(candidates[0], counter)
    return rng.choice([context for context in candidates if getattr(context, counter) == lowest])


def sample_least_used(pool: _Pool, rng: random.Random) -> Context | None:
    return _least_by(pool, "times_served", rng)


def sample_uniform(pool: _Pool, rng: random.Random) -> Context | None:
    return _random_at_or_after(pool.queryset(), rng)


def sample_least_fooled(pool: _Pool, rng: random.Random) -> Context | None:
    return _least_by(pool, "fooled_count", rng)


def sample_failed_validation(pool: _Pool, rng: random.Random) -> Context | None:
    failed = pool.queryset().filter(
        example_count__gt=0, validated_incorrect_count__gte=F("example_count")
    )
    return _random_at_or_after(failed, rng) or sample_least_used(pool, rng)


STRATEGIES: dict[str, Callable[[_Pool, random.Random], Context | None]] = {
    ContextSampling.LEAST_USED: sample_least_used,
    ContextSampling.UNIFORM: sample_uniform,
    ContextSampling.LEAST_FOOLED: sample_least_fooled,
    ContextSampling.FAILED_VALIDATION: sample_failed_validation,
}


def sample_context(
    round_: Round, strategy: str, tag: str = "", rng: random.Random | None = None
) -> Context | None:
    """Return a context of ``round_`` chosen by ``strategy`` (unknown: least used), or None."""
    function = STRATEGIES.get(strategy, sample_least_used)
    return function(_Pool(round_.pk, tag), rng or random.Random())  # noqa: S311 - not security sensitive
