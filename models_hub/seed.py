"""Demo seeding of the models hub: register the demo model servers as in-the-loop models.

``scripts/dev.py run`` starts one ``serve_model`` process per demo task on a free port and
passes ``--model-url TASK=URL`` to ``seed_demo``; this seeder registers (or re-points) each.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from models_hub import services
from models_hub.models import Model
from tasks.demo_registry import SeedOptions, register_seeder
from tasks.errors import ServiceError
from tasks.models import Task

DEMO_OWNER_USERNAME = "admin"

DEMO_MODELS = {
    "sentiment": {
        "name": "VADER sentiment (demo)",
        "description": "The VADER lexicon and rules, mapped to negative/neutral/positive.",
        "license": "MIT",
        "source_url": "https://github.com/cjhutto/vaderSentiment",
        "languages": "en",
        "card": "A rule-based sentiment model (VADER) served by `manage.py serve_model`. "
        "Fast, offline and easy to fool with sarcasm or negation.",
    },
    "hs": {
        "name": "profanity-check (demo)",
        "description": "alt-profanity-check's linear SVM, used as a hate-speech detector.",
        "license": "MIT",
        "source_url": "https://github.com/dimitrismistriotis/alt-profanity-check",
        "languages": "en",
        "card": "A profanity classifier standing in for a hate-speech model: it flags "
        "offensive words, not hateful meaning.",
    },
    "nli": {
        "name": "Overlap NLI heuristic (demo)",
        "description": "Word overlap and negation cues for entailment/neutral/contradiction.",
        "license": "MIT",
        "languages": "en",
        "card": "A heuristic NLI model: high overlap means entailment, a negation means "
        "contradiction. Written for Dynatask as an easy-to-fool demo.",
    },
    "qa": {
        "name": "Sliding-window QA (demo)",
        "description": "Extracts the passage window that overlaps the question most.",
        "license": "MIT",
        "languages": "en",
        "card": "A sliding-window overlap span extractor (the classic MCTest baseline idea). "
        "Written for Dynatask as an easy-to-fool demo.",
    },
}


def _ensure_model(task: Task, owner, url: str, spec: dict) -> Model:
    """Register the demo model of ``task``, or point the existing one at ``url``."""
    model = Model.objects.filter(task=task, name=spec["name"]).first()
    if model is None:
        return services.model_register(
            task=task, owner=owner, protocol="dynatask", endpoint_url=url, is_published=True, **spec
        )
    # The demo servers get new ports on every run.
    services.model_update_card(model, owner, endpoint_url=url, protocol="dynatask")
    return services.model_set_published(model, owner, True)


@register_seeder(order=10)
def seed_models(options: SeedOptions) -> None:
    """Register each ``options.model_urls`` demo model, put it in the loop, check its health."""
    owner = get_user_model().objects.filter(username=DEMO_OWNER_USERNAME).first()
    if owner is None or not options.model_urls:
        return
    for code, url in sorted(options.model_urls.items()):
        task = Task.objects.filter(code=code).first()
        spec = DEMO_MODELS.get(code)
        if task is None or spec is None:
            options.say(f"no demo task or model for {code!r}; skipped")
            continue
        try:
            with transaction.atomic():
                model = _ensure_model(task, owner, url, spec)
                open_rounds = set(task.rounds.filter(is_open=True))
                services.model_set_rounds(
                    model, open_rounds | set(model.in_loop_rounds.all()), owner
                )
        except ServiceError as error:
            options.say(f"cannot register the {code} demo model: {error.message}")
            continue
        # Synchronously, so the site shows a status at once; an unreachable model is recorded
        # as unhealthy, never an error of the seeding.
        health = services.model_record_health(model.pk)
        state = "healthy" if health.ok else f"unhealthy ({health.error})"
        options.say(f"model {model.name} at {url}: {state}")
