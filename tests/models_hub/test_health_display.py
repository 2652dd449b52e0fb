"""The model's page shows its last health check's latency rounded for people."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.factories import ModelFactory, TaskFactory

pytestmark = pytest.mark.django_db


def test_the_health_latency_is_rounded(client):
    model = ModelFactory(
        task=TaskFactory(code="sentiment"),
        protocol="dynatask",  # a model with an endpoint: only those have health checks
        endpoint_url="http://127.0.0.1:9/",
        last_health_at=timezone.now(),
        last_health_latency_ms=3.2719802856445312,
    )
    html = client.get(f"/models/{model.pk}/").content.decode()
    assert "3.3 ms" in html
    assert "3.27198" not in html


def test_the_admins_model_list_shows_it_rounded_too(client, admin_user_obj):
    model = ModelFactory(
        task=TaskFactory(code="sentiment"),
        last_health_at=timezone.now(),
        last_health_latency_ms=87.41239,
    )
    client.force_login(admin_user_obj)
    html = client.get("/admin/models_hub/registeredmodel/").content.decode()
    assert model.name in html and "87 ms" in html and "87.41239" not in html
    change = client.get(f"/admin/models_hub/registeredmodel/{model.pk}/change/").content.decode()
    assert "87 ms" in change and "87.41239" not in change
