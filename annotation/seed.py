"""Demo seeding of the annotation app (autodiscovered by ``tasks.demo_registry``)."""

from __future__ import annotations

from annotation.arena.demo import seed_arena
from tasks.demo_registry import SeedOptions, register_seeder


@register_seeder(order=20)
def seed_arena_demo(options: SeedOptions) -> None:
    """The demo arena over the chat task's demo models (after the models hub, order 10)."""
    seed_arena(options.say)
