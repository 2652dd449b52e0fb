"""Contexts' rows in the cache: the create POST reads the context it names from there.

The rows come from the sampling pool (``annotation.sampling``) and from reads that missed;
a save or a deletion of a context forgets its row (``annotation.receivers``). A cached row's
counters may be behind the table's: readers use its data and keys only.
"""

from __future__ import annotations

from django.core.cache import cache

CONTEXT_SECONDS = 300


def context_key(context_id: int) -> str:
    return f"annotation:context:1:{context_id}"


def context_id_or_none(value) -> int | None:
    """``value`` as a context id, or None for anything that is not one."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 0 < number < 2**63 else None


def contexts_remember(contexts) -> None:
    """Keep the rows of ``contexts`` in the cache."""
    cache.set_many({context_key(context.pk): context for context in contexts}, CONTEXT_SECONDS)


def contexts_forget(*context_ids: int) -> None:
    """Drop the cached rows of contexts ``context_ids``."""
    cache.delete_many([context_key(context_id) for context_id in context_ids])
