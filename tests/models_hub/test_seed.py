"""The demo seeder registers the demo model servers once, re-points them, puts them in the loop."""

from __future__ import annotations

import io

import pytest

from models_hub.models import Model, ModelStatus, RoundModel
from models_hub.seed import seed_models
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
    [model] = Model.objects.all()
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
    assert Model.objects.count() == 1 and RoundModel.objects.count() == 1


def test_seeder_without_admin_does_nothing(task):
    seed_models(SeedOptions(model_urls={"sentiment": "http://127.0.0.1:9/"}))
    assert not Model.objects.exists()
