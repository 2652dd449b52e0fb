"""The demo seeder registers the demo model servers once, re-points them, puts them in the loop."""

from __future__ import annotations

import io

import pytest

from models_hub import services
from models_hub.models import ModelStatus, RegisteredModel, RoundModel
from models_hub.seed import models_repoint, seed_models
from tasks.demo_registry import SeedOptions
from tests.factories import UserFactory
from tests.models_hub.hub_helpers import dead_url, model_server

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_admin(db):
    return UserFactory(username="admin", is_staff=True, is_superuser=True)


def test_seeder_is_idempotent_and_follows_new_ports(task, demo_admin):
    out = io.StringIO()
    with model_server() as server:
        options = SeedOptions(model_urls={"sentiment": server.url, "absent": server.url}, out=out)
        seed_models(options)
        seed_models(options)
    [model] = RegisteredModel.objects.all()
    assert model.name == "VADER sentiment (demo)"
    assert model.owner == demo_admin and model.is_published and model.protocol == "dynatask"
    assert model.status == ModelStatus.HEALTHY
    assert list(RoundModel.objects.values_list("round_id", flat=True)) == [task.rounds.get().pk]
    assert "skipped" in out.getvalue()

    # A new run: the server moved and is down; the seeder tolerates it.
    new_url = dead_url()
    seed_models(SeedOptions(model_urls={"sentiment": new_url}))
    model.refresh_from_db()
    assert model.endpoint_url == new_url
    assert model.status == ModelStatus.UNHEALTHY
    assert RegisteredModel.objects.count() == 1 and RoundModel.objects.count() == 1


def test_seeder_without_admin_does_nothing(task):
    seed_models(SeedOptions(model_urls={"sentiment": "http://127.0.0.1:9/"}))
    assert not RegisteredModel.objects.exists()


def test_the_main_model_joins_the_loop_the_others_only_rank(task, demo_admin):
    with model_server() as server:
        seed_models(
            SeedOptions(
                model_urls={
                    "sentiment": server.url,
                    "sentiment-narrow": server.url,
                    "sentiment-predictions": server.url,  # not a served model: skipped
                }
            )
        )
    names = set(RegisteredModel.objects.values_list("name", flat=True))
    assert names == {"VADER sentiment (demo)", "VADER, narrow neutral band (demo)"}
    in_loop = RegisteredModel.objects.filter(in_loop_rounds__isnull=False).values_list(
        "name", flat=True
    )
    assert list(in_loop) == ["VADER sentiment (demo)"]


def test_a_moved_demo_server_takes_the_models_registered_at_its_address_along(
    task, demo_admin, user
):
    """A worker registered their own model at the demo server's address; the server comes
    back on another port (its port was taken): both models follow it."""
    old_url = "http://127.0.0.1:8101/"
    seed_models(SeedOptions(model_urls={"sentiment": old_url}))
    task.accepts_models = True
    task.save()
    copy = services.model_register(
        task=task, owner=user, name="my VADER", endpoint_url="http://127.0.0.1:8101"
    )
    elsewhere = services.model_register(
        task=task, owner=user, name="other", endpoint_url="http://localhost:8101/"
    )
    out = io.StringIO()
    with model_server() as server:
        seed_models(SeedOptions(model_urls={"sentiment": server.url}, out=out))
        demo = RegisteredModel.objects.get(name="VADER sentiment (demo)")
        copy.refresh_from_db()
        elsewhere.refresh_from_db()
        assert demo.endpoint_url == server.url
        assert copy.endpoint_url == server.url.rstrip("/")
        assert elsewhere.endpoint_url == "http://localhost:8101/"  # another address
    assert "moved from http://127.0.0.1:8101/" in out.getvalue()
    assert "re-pointed 1 other model(s)" in out.getvalue()


def test_repointing_leaves_other_addresses_and_the_same_address_alone(task, demo_admin):
    model = services.model_register(
        task=task, owner=demo_admin, name="m", endpoint_url="http://127.0.0.1:8102/v1/predict"
    )
    assert models_repoint("http://127.0.0.1:8101/", "http://127.0.0.1:9999/", demo_admin) == 0
    # "http://127.0.0.1:81" starts the model's URL but is another address.
    assert models_repoint("http://127.0.0.1:81/", "http://127.0.0.1:9999/", demo_admin) == 0
    assert models_repoint("", "http://127.0.0.1:9999/", demo_admin) == 0
    assert models_repoint("http://127.0.0.1:8102/", "http://127.0.0.1:8102/", demo_admin) == 0
    assert models_repoint("http://127.0.0.1:8102/", "http://127.0.0.1:9999/", demo_admin) == 1
    model.refresh_from_db()
    assert model.endpoint_url == "http://127.0.0.1:9999/v1/predict"  # the path is kept
