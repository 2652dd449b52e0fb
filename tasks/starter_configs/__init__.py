"""Starter task configs that the admin's config editor loads with one click.

Each starter is a commented YAML file of this package, listed in ``STARTERS`` (the order of
the editor's buttons). They are plain task configs: the test suite parses every one with
``tasks.config.parse_task_config``, so a starter never teaches a broken config.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True)
class Starter:
    """One starter config: ``slug`` names its file (``<slug>.yaml``) and its button."""

    slug: str
    title: str
    summary: str

    @property
    def text(self) -> str:
        return starter_text(self.slug)


STARTERS: tuple[Starter, ...] = (
    Starter(
        "classification",
        "3-way classification",
        "A statement and one of three labels; the model is fooled when its label differs.",
    ),
    Starter(
        "nli",
        "NLI with a context",
        "A hypothesis about an uploaded passage: entailed, neutral or contradictory.",
    ),
    Starter(
        "qa",
        "QA span selection",
        "A question about a passage, answered by selecting words in it; string F1 decides.",
    ),
    Starter(
        "generation",
        "Generation with string F1",
        "A question and its short answer; the model writes its own, scored by token F1.",
    ),
)


@cache
def starter_text(slug: str) -> str:
    """Return the YAML text of the starter ``slug``; raise ``KeyError`` for an unknown one."""
    if slug not in {starter.slug for starter in STARTERS}:
        raise KeyError(slug)
    return resources.files(__package__).joinpath(f"{slug}.yaml").read_text(encoding="utf-8")
