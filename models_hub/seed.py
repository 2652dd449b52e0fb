"""Demo seeding of the models hub: register the demo model servers, keep them pointed right.

``scripts/dev.py run`` starts one demo server per task (``python -m models_hub.demo.serve``),
which serves each of the task's ``served`` models (``models_hub.demo.catalog``) on a port of
its own, and passes ``--model-url KEY=URL`` for each to ``seed_demo``. This seeder registers
the model of each key (or finds it again by its name), puts the task's main model in the loop
of the open rounds, and checks its health.

The demo ports are fixed, so the URLs normally stay the same from one run to the next. When a
port was taken and the server fell back to another one, the model is re-pointed, and so is
every other model registered against the old address (a copy a worker registered by hand):
none of them is left unhealthy by a restart.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.db import transaction

from core.errors import ServiceError
from models_hub import calls, services
from models_hub.demo.catalog import SERVED, DemoModel, demo_model
from models_hub.models import RegisteredModel
from tasks.demo_registry import SeedOptions, register_seeder
from tasks.models import Task

DEMO_OWNER_USERNAME = "admin"


def demo_owner():
    """Return the demo's admin account (owner of the demo models), or None."""
    return get_user_model().objects.filter(username=DEMO_OWNER_USERNAME).first()


def ensure_demo_model(task: Task, owner, spec: DemoModel, **endpoint) -> RegisteredModel:
    """Register ``spec`` for ``task`` (published), or bring its card and ``endpoint`` up to
    date when a model of its name exists."""
    model = RegisteredModel.objects.filter(task=task, name=spec.name).first()
    if model is None:
        # The loop is the seeder's choice (``_seed_one``), not the owner's default.
        return services.model_register(
            task=task,
            owner=owner,
            is_published=True,
            in_loop=False,
            **endpoint,
            **spec.card_fields(),
        )
    fields = {**spec.card_fields(), **endpoint}
    fields.pop("name")
    services.model_update_card(model, owner, **fields)
    return services.model_set_published(model, owner, True)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def models_repoint(old_url: str, new_url: str, owner, *, exclude: int | None = None) -> int:
    """Point every model whose endpoint is on ``old_url``'s address at ``new_url``'s instead
    (same path); return how many moved. Models ``owner`` may not edit are left alone."""
    old, new = _origin(old_url), _origin(new_url)
    if not old_url or old == new:
        return 0
    moved = 0
    candidates = RegisteredModel.objects.select_related("task").filter(
        endpoint_url__istartswith=old
    )
    for model in candidates.exclude(pk=exclude):
        if _origin(model.endpoint_url) != old:
            continue  # "http://host:81" is a prefix of "http://host:8101"
        try:
            services.model_update_card(
                model, owner, endpoint_url=new + model.endpoint_url[len(old) :]
            )
        except ServiceError:
            continue
        moved += 1
    return moved


def _seed_one(
    task: Task, owner, spec: DemoModel, url: str, options: SeedOptions
) -> RegisteredModel:
    previous = (
        RegisteredModel.objects.filter(task=task, name=spec.name).values_list(
            "endpoint_url", flat=True
        )
    ).first()
    with transaction.atomic():
        model = ensure_demo_model(
            task, owner, spec, protocol=spec.protocol, endpoint_url=url, options=spec.options
        )
        if spec.in_loop:
            open_rounds = set(task.rounds.filter(is_open=True))
            services.model_set_rounds(model, open_rounds | set(model.in_loop_rounds.all()), owner)
        moved = models_repoint(previous or "", url, owner, exclude=model.pk)
    if previous and previous != url:
        options.say(f"the {spec.key} demo server moved from {previous} to {url}")
    if moved:
        options.say(f"re-pointed {moved} other model(s) registered at {previous}")
    return model


@register_seeder(order=10)
def seed_models(options: SeedOptions) -> None:
    """Register each ``options.model_urls`` demo model, re-point it, check its health."""
    owner = demo_owner()
    if owner is None or not options.model_urls:
        return
    for key, url in sorted(options.model_urls.items()):
        spec = demo_model(key)
        task = Task.objects.filter(code=spec.task).first() if spec is not None else None
        if spec is None or spec.kind != SERVED or task is None:
            options.say(f"no demo task or model for {key!r}; skipped")
            continue
        try:
            model = _seed_one(task, owner, spec, url, options)
        except ServiceError as error:
            options.say(f"cannot register the {key} demo model: {error.message}")
            continue
        # Synchronously, so the site shows a status at once; an unreachable model is recorded
        # as unhealthy, never an error of the seeding.
        health = calls.model_record_health(model.pk)
        state = "healthy" if health.ok else f"unhealthy ({health.error})"
        options.say(f"model {model.name} at {url}: {state}")
