"""Demo seeding shared by the apps: each app seeds its own part in ``<app>/seed.py``.

``seed_demo`` lives in ``tasks`` (the base layer) but must also create models and datasets,
which belong to apps above it. Rather than importing them, it autodiscovers each app's
``seed`` module, whose ``@register_seeder`` functions run in ``order``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from django.utils.module_loading import autodiscover_modules


@dataclass
class SeedOptions:
    shared_data: Path | None = None
    model_urls: dict[str, str] = field(default_factory=dict)
    evaluate: bool = True
    out: TextIO | None = None

    def say(self, message: str) -> None:
        if self.out is not None:
            self.out.write(message + "\n")


_SEEDERS: list[tuple[int, str, Callable[[SeedOptions], None]]] = []


def register_seeder(order: int) -> Callable:
    def decorator(function: Callable[[SeedOptions], None]) -> Callable[[SeedOptions], None]:
        name = f"{function.__module__}.{function.__qualname__}"
        if all(existing != name for _, existing, _ in _SEEDERS):
            _SEEDERS.append((order, name, function))
        return function

    return decorator


def run_seeders(options: SeedOptions) -> None:
    autodiscover_modules("seed")
    for _, _, function in sorted(_SEEDERS, key=lambda item: (item[0], item[1])):
        function(options)
