"""Context sampling strategies for the create page (``Task.context_sampling``).

Every strategy reads only the round's contexts (optionally one tag) through the indexes of
``tasks.Context``: ``context_least_used`` (round, times_served, id), ``context_tag_least_used``
(round, tag, times_served) and ``context_least_fooled`` (round, fooled_count, id). Random
choices never use ``ORDER BY random()``: a random id between the smallest and the largest
candidate id is drawn and the first candidate at or after it is taken (a bounded index scan).

- ``least_used`` (default): the smallest ``times_served``; ties broken at random.
- ``uniform``: any context of the round, at random.
- ``least_fooled``: the smallest ``fooled_count``; ties broken at random.
- ``failed_validation``: contexts whose examples were all settled incorrect (at least one);
  when there are none, falls back to ``least_used`` so workers are never stuck.

Every strategy returns a context whenever the round (or tag) has one. Counters move under
concurrent requests between the queries of one sampling; when the random pick comes back
empty because of that, the least-used (or lowest-id) candidate is taken instead.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from django.db.models import F, Max, Min, QuerySet, Subquery

from tasks.models import Context, ContextSampling, Round


def _random_at_or_after(queryset: QuerySet, rng: random.Random) -> Context | None:
    bounds = queryset.aggregate(low=Min("id"), high=Max("id"))
    if bounds["low"] is None:
        return None
    pivot = rng.randint(bounds["low"], bounds["high"])
    picked = queryset.filter(id__gte=pivot).order_by("id").first()
    # Rows can leave the candidates between the two queries (a counter moved): never stuck.
    return picked or queryset.order_by("id").first()


def _least_by(queryset: QuerySet, counter: str, rng: random.Random) -> Context | None:
    """The candidates with the lowest ``counter``, one of them at random (two queries).

    The lowest value and the id bounds of its candidates come from one statement. A counter
    that moved meanwhile can empty the pick; then the least-``counter`` context is taken.
    """
    lowest = queryset.order_by(counter, "id").values(counter)[:1]
    bounds = queryset.filter(**{counter: Subquery(lowest)}).aggregate(
        low=Min("id"), high=Max("id"), value=Min(counter)
    )
    if bounds["low"] is not None:
        pivot = rng.randint(bounds["low"], bounds["high"])
        picked = (
            queryset.filter(**{counter: bounds["value"], "id__gte": pivot}).order_by("id").first()
        )
        if picked is not None:
            return picked
    return queryset.order_by(counter, "id").first()


def sample_least_used(queryset: QuerySet, rng: random.Random) -> Context | None:
    return _least_by(queryset, "times_served", rng)


def sample_uniform(queryset: QuerySet, rng: random.Random) -> Context | None:
    return _random_at_or_after(queryset, rng)


def sample_least_fooled(queryset: QuerySet, rng: random.Random) -> Context | None:
    return _least_by(queryset, "fooled_count", rng)


def sample_failed_validation(queryset: QuerySet, rng: random.Random) -> Context | None:
    failed = queryset.filter(example_count__gt=0, validated_incorrect_count__gte=F("example_count"))
    return _random_at_or_after(failed, rng) or sample_least_used(queryset, rng)


STRATEGIES: dict[str, Callable[[QuerySet, random.Random], Context | None]] = {
    ContextSampling.LEAST_USED: sample_least_used,
    ContextSampling.UNIFORM: sample_uniform,
    ContextSampling.LEAST_FOOLED: sample_least_fooled,
    ContextSampling.FAILED_VALIDATION: sample_failed_validation,
}


def sample_context(
    round_: Round, strategy: str, tag: str = "", rng: random.Random | None = None
) -> Context | None:
    """Return a context of ``round_`` chosen by ``strategy`` (unknown: least used), or None."""
    queryset = Context.objects.filter(round=round_)
    if tag:
        queryset = queryset.filter(tag=tag)
    function = STRATEGIES.get(strategy, sample_least_used)
    return function(queryset, rng or random.Random())  # noqa: S311 - not security sensitive
