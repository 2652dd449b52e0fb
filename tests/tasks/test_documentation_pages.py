"""The reference documents served by the site (``/docs/<slug>/``): offline, linked, anchored."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tasks.config import codes
from tasks.documentation import DOCUMENTS, documentation_page
from tests.shared_files import REPOSITORY

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("slug", DOCUMENTS)
def test_every_listed_document_exists_and_renders(client, slug):
    assert (REPOSITORY / "docs" / DOCUMENTS[slug]).is_file()
    response = client.get(reverse("tasks:documentation", args=[slug]))
    assert response.status_code == 200
    page = response.content.decode()
    assert f"<title>{documentation_page(slug).title} &middot; Dynatask</title>" in page
    # Served by the site itself, with its own static files (works offline).
    assert not re.search(r'<(script|link)[^>]+(src|href)="(https?:)?//', page)


def test_the_config_reference_keeps_its_tables_code_and_anchors(client):
    page = client.get(reverse("tasks:documentation", args=["task-config"])).content.decode()
    assert "<table>" in page and '<code class="language-yaml">' not in page  # classes dropped
    assert "<pre><code>schema_version: 1" in page
    assert 'id="model_wrong_metric"' in page and 'id="inputs-outputs-and-targets"' in page
    # Links between documents lead to their pages, anchors kept.
    assert 'href="/docs/task-config-errors/"' in page
    assert 'href="/docs/model-protocol/"' in page
    assert ".md" not in re.findall(r'href="([^"]*)"', page)[-1]


def test_every_config_code_has_an_anchor_in_the_error_catalogue(client):
    page = client.get(reverse("tasks:documentation", args=["task-config-errors"])).content.decode()
    config_codes = [
        value
        for name, value in vars(codes).items()
        if name.isupper() and isinstance(value, str) and value.startswith("config.E")
    ]
    assert config_codes
    for code in config_codes:
        assert f'<tr id="{code.lower().replace(".", "-")}">' in page, code


def test_unknown_or_sneaky_documents_are_404(client):
    for slug in ("nope", "CONTRIBUTING", "README", "task-config.md"):
        assert client.get(f"/docs/{slug}/").status_code == 404
    assert client.get("/docs/../settings/").status_code == 404


def test_the_documents_are_public(client):
    assert client.get(reverse("tasks:documentation", args=["task-config"])).status_code == 200
