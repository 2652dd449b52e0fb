"""The model's page shows its last health check's latency rounded for people."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.factories import ModelFactory, TaskFactory

pytestmark = pytest.mark.django_db


def test_the_health_latency_is_rounded(client):
    model = ModelFactory(
        task=TaskFactory(code="sentiment"),
        last_health_at=timezone.now(),
        last_health_latency_ms=3.2719802856445312,
    )
    html = client.get(f"/models/{model.pk}/").content.decode()
    assert "3.3 ms" in html
    assert "3.27198" not in html
