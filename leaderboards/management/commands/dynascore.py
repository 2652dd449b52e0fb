"""``manage.py dynascore <file.json>``: compute Dynascores from a JSON file.

Input: ``{"metrics": [{"name", "direction", "offset", "weight"}], "models": {"name":
{"metric": value}}}``; the first metric is the main one unless one says ``"main": true``.
A metric may add ``"resolution"`` (and ``"relative_resolution": true``) to be compared at
that resolution; without it values are exact, as the reference vectors are. An optional
top-level ``"epsilon"`` (default 1e-4) is how close two main values must be to be one
level of the AMRS, whose pairs form no ratio (the leaderboard uses 0.1 point; see
docs/leaderboard.md).
Output: ``{"name": dynascore}`` as JSON, ranked; an incomplete model maps to null.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from leaderboards.dynascore import (
    DEFAULT_EPSILON,
    HIGHER,
    DynascoreError,
    MetricInput,
    compute_dynascores,
)


class Command(BaseCommand):
    help = "Compute the Dynascore of models from a JSON file and print {model: dynascore}."

    def add_arguments(self, parser):
        parser.add_argument("file", help="JSON file with 'metrics' and 'models'")

    def handle(self, *args, file: str, **options):
        try:
            document = json.loads(Path(file).read_text(encoding="utf-8"))
        except OSError as error:
            raise CommandError(f"cannot read {file}: {error.strerror}") from None
        except (ValueError, UnicodeDecodeError) as error:
            raise CommandError(f"{file} is not valid JSON: {error}") from None
        metrics, main_metric, models = _parse(document)
        epsilon = document.get("epsilon", DEFAULT_EPSILON)
        try:
            result = compute_dynascores(models, metrics, main_metric=main_metric, epsilon=epsilon)
        except DynascoreError as error:
            raise CommandError(str(error)) from None
        ranked = {score.model: score.dynascore for score in result.ranking}
        self.stdout.write(json.dumps(ranked, indent=2))
        if result.incomplete:
            missing = "; ".join(
                f"{model}: {', '.join(names)}" for model, names in result.incomplete.items()
            )
            self.stderr.write(f"incomplete models (no Dynascore): {missing}")


def _parse(document) -> tuple[list[MetricInput], str, dict]:
    if not isinstance(document, dict):
        raise CommandError('the file must hold an object with "metrics" and "models"')
    raw_metrics = document.get("metrics")
    models = document.get("models")
    if not isinstance(raw_metrics, list) or not raw_metrics:
        raise CommandError('"metrics" must be a non-empty list')
    if not isinstance(models, dict) or not all(isinstance(v, dict) for v in models.values()):
        raise CommandError('"models" must map each model name to {metric: value}')
    metrics = []
    main_metric = None
    for position, item in enumerate(raw_metrics):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise CommandError(f"metrics[{position}] needs a string 'name'")
        try:
            metrics.append(
                MetricInput(
                    name=item["name"],
                    direction=str(item.get("direction", HIGHER)),
                    weight=item.get("weight", 1.0),
                    offset=item.get("offset", 0.0),
                    resolution=item.get("resolution", 0.0),
                    relative_resolution=item.get("relative_resolution") is True,
                )
            )
        except TypeError as error:
            raise CommandError(f"metrics[{position}]: {error}") from None
        if item.get("main") is True:
            main_metric = item["name"]
    return metrics, main_metric or metrics[0].name, models
