"""The daily budget: registrations, endpoint changes and runs share it, per user, task and
dataset; refused or failed actions spend nothing; concurrent requests never overspend."""

from __future__ import annotations

import io
import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from core.errors import InvalidUpload, TooManyRequests
from leaderboards.services.predictions import predictions_import
from leaderboards.services.runs import evaluation_run_create
from models_hub import services
from models_hub.budget import budget_wait_seconds
from models_hub.models import BudgetCharge, RegisteredModel
from tests.leaderboards.evalkit import import_sentiment, sentiment_prob, sentiment_rows

URL = "http://127.0.0.1:9/"


def _refused(code: str, action, *args, **kwargs) -> TooManyRequests:
    with pytest.raises(TooManyRequests) as caught:
        action(*args, **kwargs)
    assert caught.value.code == code and caught.value.status == 429
    assert 0 < caught.value.details["wait_seconds"] <= 86_400
    return caught.value


def test_the_wait_is_until_the_charge_that_frees_a_unit_expires():
    now = timezone.now()
    hour = timedelta(hours=1)
    # Dataset 1: a registration 5 h ago and runs 3 h and 1 h ago; dataset 2: one run.
    charges = [(None, now - 5 * hour), (1, now - 3 * hour), (1, now - hour), (2, now - hour)]
    assert budget_wait_seconds(charges, 2, 3, now) == 0
    assert budget_wait_seconds(charges, 1, 3, now) == 19 * 3600  # the registration expires
    assert budget_wait_seconds(charges, 1, 2, now) == 21 * 3600  # then the run 3 h ago
    # A registration or an endpoint change needs a unit of every dataset: dataset 1 binds.
    assert budget_wait_seconds(charges, None, 3, now) == 19 * 3600
    assert budget_wait_seconds(charges, None, 4, now) == 0


@pytest.mark.django_db
def test_registrations_endpoint_changes_and_runs_share_the_budget(settings, task, owner, user):
    """The repro of issue 30 (one model re-pointed and rerun without limit) stops at the
    budget: 3 a day per task and dataset."""
    settings.MODELS_HUB_REGISTRATIONS_PER_DAY = 3
    first = import_sentiment(task, 4, slug="first", evaluate=False)
    second = import_sentiment(task, 4, slug="second", evaluate=False)
    public = import_sentiment(task, 4, slug="open", evaluate=False, access_type="public")
    model = services.model_register(task=task, owner=user, name="probe", endpoint_url=URL)
    evaluation_run_create(model, first, user=user)
    services.model_update_card(model, user, endpoint_url="http://127.0.0.1:8/")
    error = _refused("run.daily_limit", evaluation_run_create, model, first, user=user)
    assert "registrations, endpoint changes and runs" in error.message
    evaluation_run_create(model, second, user=user)  # its own dataset: one unit left
    _refused("run.daily_limit", evaluation_run_create, model, second, user=user)
    _refused(
        "model.endpoint_change_limit",
        services.model_update_card,
        model,
        user,
        endpoint_url="http://127.0.0.1:7/",
    )
    _refused(
        "model.registration_limit",
        services.model_register,
        task=task,
        owner=user,
        name="b",
        endpoint_url=URL,
    )
    assert RegisteredModel.objects.get(pk=model.pk).endpoint_url == "http://127.0.0.1:8/"
    assert not RegisteredModel.objects.filter(name="b").exists()
    # A card edit is free, so are runs on a public dataset (its gold is published), and the
    # task's owners are not limited.
    services.model_update_card(model, user, card="# Still the same model")
    for _ in range(4):
        evaluation_run_create(model, public, user=user)
        evaluation_run_create(model, first, user=owner)
    assert BudgetCharge.objects.count() == 4  # the refusals spent nothing
    # A day later the units come back.
    BudgetCharge.objects.update(created_at=timezone.now() - timedelta(days=1, seconds=1))
    evaluation_run_create(model, first, user=user)


@pytest.mark.django_db
def test_a_predictions_file_spends_a_unit_unless_it_is_refused(settings, task, user):
    settings.MODELS_HUB_REGISTRATIONS_PER_DAY = 2
    dataset = import_sentiment(task, 4, evaluate=False)
    model = services.model_register(task=task, owner=user, name="file-model", protocol="none")
    rows = [
        {"uid": row["uid"], "label": row["label"], "prob": sentiment_prob(row["label"])}
        for row in sentiment_rows(4)
    ]

    def upload(lines):
        body = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return predictions_import(model, dataset, io.BytesIO(body), filename="p.jsonl", user=user)

    with pytest.raises(InvalidUpload):
        upload([{"uid": "nope", "label": "neutral"}])
    upload(rows)
    _refused("run.daily_limit", upload, rows)


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite serialises these transactions (one writer at a time), lock or not: "
    "the race is shown on PostgreSQL",
)
def test_concurrent_registrations_never_overspend_the_budget(settings, task, user):
    """Ten registrations at once against a budget of five: five models, five 429s (before,
    each request counted the models before any was saved, and 9 of 10 got through)."""
    settings.MODELS_HUB_REGISTRATIONS_PER_DAY = 5
    start = threading.Barrier(10)
    outcomes: list[str] = []

    def register(number: int) -> None:
        try:
            start.wait(timeout=30)
            services.model_register(task=task, owner=user, name=f"m{number}", protocol="none")
            outcomes.append("created")
        except TooManyRequests:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=register, args=(number,)) for number in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["created"] * 5 + ["refused"] * 5
    assert RegisteredModel.objects.filter(task=task, owner=user).count() == 5
    assert BudgetCharge.objects.count() == 5


@pytest.mark.django_db
def test_the_migration_counts_the_last_days_registrations(task, owner, user, apps_after):
    import importlib

    from tests.factories import ModelFactory

    migration = importlib.import_module("models_hub.migrations.0005_daily_budget")
    ModelFactory(task=task, owner=user, name="recent")
    ModelFactory(task=task, owner=owner, name="the task owner's")
    old = ModelFactory(task=task, owner=user, name="old")
    RegisteredModel.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=2))
    migration.charge_recent_registrations(apps_after("models_hub", "0005_daily_budget"), None)
    assert list(BudgetCharge.objects.values_list("budget__user", "kind")) == [
        (user.pk, "registration")
    ]
