"""Attacks the site must withstand: XSS through free text, forged POSTs (CSRF), password
guessing (django-axes), SSRF through model endpoints, leaked secrets and leaked gold labels."""

from __future__ import annotations

import logging
import re

import pytest
from django.test import Client, override_settings

from models_hub import calls as hub_calls
from tests.security.world import (
    GOLD_MARK_HIDDEN,
    MODEL_TOKEN,
    ROLES,
    build_world,
    role_client,
)

XSS_PAYLOADS = [
    "<script>alert('xss-1')</script>",
    '"><img src=x onerror=alert("xss-2")>',
    "<svg/onload=alert('xss-3')>",
    "javascript:alert('xss-4')",
    "<a href=\"javascript:alert('xss-5')\">x</a>",
    "{{ 7*7 }}<iframe src=//evil.example>",
]
# What must never appear unescaped in a page: a live tag from a payload, or a live handler.
XSS_PATTERNS = [
    re.compile(r"<script>alert"),
    re.compile(r"<(img|svg|iframe)[\s/][^>]*(onerror|onload|evil)", re.IGNORECASE),
    re.compile(r"<a\s[^>]*href=\"javascript:", re.IGNORECASE),
]


@pytest.fixture
def world(db):
    return build_world()


def _assert_escaped(html: str, where: str) -> None:
    for pattern in XSS_PATTERNS:
        match = pattern.search(html)
        assert match is None, f"unescaped {match.group(0)!r} in {where}"


# --- XSS ------------------------------------------------------------------------------------
def test_markdown_instructions_are_sanitised():
    from tasks.markdown import render_markdown

    for payload in XSS_PAYLOADS:
        html = render_markdown(f"Hello **world**\n\n{payload}\n\n[link](javascript:alert(1))")
        _assert_escaped(html, "render_markdown")
        assert "<script" not in html
    assert "<strong>world</strong>" in render_markdown("Hello **world**")


@pytest.mark.parametrize("payload", XSS_PAYLOADS)
def test_free_text_is_rendered_escaped_everywhere(world, payload):
    from annotation.models import Example
    from leaderboards.models import LeaderboardFork
    from models_hub.models import RegisteredModel

    task = world.task
    task.description = payload
    task.instructions = payload
    task.name = "Sec " + payload[:40]
    task.save()
    RegisteredModel.objects.filter(pk=world.model.pk).update(
        name="m-" + payload[:150], description=payload, card=payload, license=payload[:100]
    )
    dataset = world.datasets["scoring"]
    dataset.description = payload
    dataset.save()
    Example.objects.filter(pk=world.example.pk).update(
        input={"statement": payload, "label": "positive"},
        metadata={"example_explanation": payload},
        creator_flag_reason=payload[:500],
        flag_count=1,
    )
    LeaderboardFork.objects.filter(pk=world.fork.pk).update(name=payload[:200], description=payload)
    code = task.code
    pages = {
        "worker": [
            "/",
            f"/tasks/{code}/",
            f"/tasks/{code}/create",
            f"/tasks/{code}/examples/{world.example.pk}/",
            f"/tasks/{code}/leaderboard/",
            f"/tasks/{code}/leaderboard/forks/{world.fork.slug}/",
            f"/models/{world.model.pk}/",
            f"/models/{world.model.pk}/results/",
            f"/tasks/{code}/datasets/",
            f"/tasks/{code}/datasets/{dataset.slug}/",
            "/leaderboards/",
        ],
        "owner": [
            f"/tasks/{code}/review?min_flags=0&include_settled=on",
            f"/tasks/{code}/examples/{world.example.pk}/",
            f"/admin/tasks/task/{task.pk}/change/",
            f"/admin/tasks/task/{task.pk}/preview/",
            f"/admin/tasks/task/{task.pk}/preview/frame/",
            f"/models/{world.model.pk}/edit",
        ],
        "other_owner": [f"/tasks/{code}/validate"],
    }
    for role, paths in pages.items():
        client = role_client(world, role)
        for path in paths:
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)
            _assert_escaped(response.content.decode(), f"{path} as {role}")


def test_example_inputs_posted_through_the_create_page_come_back_escaped(world):
    client = role_client(world, "worker")
    for payload in XSS_PAYLOADS:
        response = client.post(
            f"/tasks/{world.task.code}/create",
            {"context_id": world.context.pk, "statement": payload, "label": "positive"},
        )
        assert response.status_code in (200, 400)
        _assert_escaped(response.content.decode(), "the create POST answer")


# --- CSRF -----------------------------------------------------------------------------------
def _csrf_posts(world):
    code, pk = world.task.code, world.example.pk
    return {
        "worker": [
            (f"/tasks/{code}/create", {"context_id": world.context.pk, "statement": "x"}),
            (f"/tasks/{code}/examples/{pk}/flag", {}),
            (f"/tasks/{code}/examples/{pk}/retract", {}),
            (f"/tasks/{code}/examples/{pk}/metadata", {}),
            (f"/tasks/{code}/examples/{pk}/retry", {}),
            (f"/tasks/{code}/leaderboard/forks/", {"name": "f"}),
            (f"/models/{world.model.pk}/edit", {}),
            ("/propose/", {"code": "x", "name": "x", "description": "x"}),
            ("/profile/tokens/", {}),
            ("/accounts/password_change/", {}),
            (f"/tasks/{code}/models/register", {"name": "x"}),
        ],
        "other_owner": [(f"/tasks/{code}/validate", {"example_id": pk, "label": "correct"})],
        "owner": [
            (f"/tasks/{code}/review/{pk}", {"label": "correct"}),
            (f"/tasks/{code}/leaderboard/snapshots/", {"name": "s"}),
            (f"/tasks/{code}/campaigns/", {"name": "c"}),
            (f"/tasks/{code}/campaigns/{world.campaign.pk}/toggle/", {}),
            (f"/tasks/{code}/datasets/upload", {}),
            (f"/tasks/{code}/models/loop", {}),
            (f"/admin/tasks/task/{world.task.pk}/change/", {}),
            (f"/admin/tasks/task/{world.task.pk}/open-round/", {}),
        ],
        "anonymous": [("/accounts/login/", {"username": "a", "password": "b"})],
    }


def test_csrf_is_enforced_on_every_form(world):
    refused = []
    for role, posts in _csrf_posts(world).items():
        client = role_client(world, role, enforce_csrf_checks=True)
        for path, data in posts:
            response = client.post(path, data)
            if response.status_code != 403:
                refused.append(f"{path} as {role}: {response.status_code}")
    assert not refused, "POST without a CSRF token was not refused: " + "; ".join(refused)


def test_campaign_worker_posts_need_csrf_too(world):
    client = role_client(world, "campaign", enforce_csrf_checks=True)
    response = client.post(
        f"/tasks/{world.task.code}/create",
        {"context_id": world.context.pk, "statement": "x", "label": "positive"},
    )
    assert response.status_code == 403


# --- login rate limiting ----------------------------------------------------------------------
@override_settings(AXES_ENABLED=True, AXES_FAILURE_LIMIT=3)
def test_login_is_locked_out_after_repeated_failures(db):
    from tests.factories import UserFactory

    UserFactory(username="victim")
    client = Client(REMOTE_ADDR="10.1.2.3")
    statuses = [
        client.post("/accounts/login/", {"username": "victim", "password": f"wrong{i}"}).status_code
        for i in range(4)
    ]
    assert statuses[:2] == [200, 200]
    assert statuses[-1] in (403, 429)
    # Even the right password is refused while locked out.
    locked = client.post("/accounts/login/", {"username": "victim", "password": "password"})
    assert locked.status_code in (403, 429)
    assert "_auth_user_id" not in client.session
    # The admin login is covered by the same backend.
    admin = client.post("/admin/login/", {"username": "victim", "password": "password"})
    assert admin.status_code in (403, 429)


# --- SSRF -----------------------------------------------------------------------------------
SSRF_URLS = [
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/",
    "http://192.168.1.1/",
    "http://[fe80::1]/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://[::ffff:169.254.169.254]/",
    "http://0x7f000001.nip.example/",
]


@pytest.fixture
def no_loopback_allowance(settings):
    settings.MODELS_HUB_ALLOWED_HOSTS = []


@pytest.mark.parametrize("url", SSRF_URLS[:5])
def test_model_registration_refuses_internal_addresses_on_the_site(
    world, no_loopback_allowance, url
):
    from models_hub.models import RegisteredModel

    client = role_client(world, "worker")
    response = client.post(
        f"/tasks/{world.task.code}/models/register",
        {
            "name": "ssrf-model",
            "protocol": "dynatask",
            "endpoint_url": url,
            "connect_timeout": 1,
            "read_timeout": 1,
            "batch_size": 1,
            "max_concurrency": 1,
        },
    )
    assert response.status_code in (200, 400)
    assert not RegisteredModel.objects.filter(name="ssrf-model").exists()


@pytest.mark.parametrize("url", SSRF_URLS[:5])
def test_model_registration_refuses_internal_addresses_in_the_api(
    world, no_loopback_allowance, url
):
    from models_hub.models import RegisteredModel

    client = role_client(world, "worker")
    response = client.post(
        f"/api/v1/tasks/{world.task.code}/models/",
        {"name": "ssrf-api-model", "protocol": "dynatask", "endpoint_url": url},
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert not RegisteredModel.objects.filter(name="ssrf-api-model").exists()


def test_model_edit_cannot_point_an_endpoint_at_metadata(world, no_loopback_allowance):
    from core.errors import ServiceError
    from models_hub import services

    with pytest.raises(ServiceError):
        services.model_update_card(
            world.model_with_token,
            world.users["owner"],
            endpoint_url="http://169.254.169.254/",
            protocol="dynatask",
        )


# --- secrets --------------------------------------------------------------------------------
def test_model_token_never_appears_in_pages_api_or_logs(world, caplog):
    caplog.set_level(logging.DEBUG)
    model = world.model_with_token
    paths = [
        f"/models/{model.pk}/",
        f"/models/{model.pk}/edit",
        f"/models/{model.pk}/results/",
        f"/tasks/{world.task.code}/models/loop",
        f"/api/v1/models/{model.pk}/",
        f"/api/v1/tasks/{world.task.code}/models/",
        f"/admin/models_hub/registeredmodel/{model.pk}/change/",
        "/api/schema/",
    ]
    for role in ROLES:
        client = role_client(world, role)
        for path in paths:
            body = client.get(path).content.decode()
            assert MODEL_TOKEN not in body, f"token in {path} as {role}"
    # A failing call (nothing listens on port 9) logs and records an error without the token.
    hub_calls.model_record_health(model.pk)
    model.refresh_from_db()
    assert MODEL_TOKEN not in model.last_health_error
    assert MODEL_TOKEN not in caplog.text
    assert MODEL_TOKEN not in repr(model) and MODEL_TOKEN not in str(model)


def test_api_token_is_shown_once_and_stored_hashed(world):
    from rest_framework.authtoken.models import Token

    from api.auth import api_token_create

    raw = api_token_create(world.users["worker"])
    assert not Token.objects.filter(key=raw).exists()
    client = role_client(world, "worker")
    page = client.get("/profile/tokens/").content.decode()
    assert raw not in page
    api = Client(HTTP_AUTHORIZATION=f"Token {raw}")
    assert api.get(f"/api/v1/tasks/{world.task.code}/examples/").status_code == 200
    bad = Client(HTTP_AUTHORIZATION="Token dyn_wrong")
    response = bad.get(f"/api/v1/tasks/{world.task.code}/examples/")
    assert response.status_code == 401
    assert "dyn_wrong" not in response.content.decode()


def test_secret_key_never_appears_in_error_pages(world, settings):
    settings.DEBUG = False
    client = role_client(world, "worker")
    for path in ("/no/such/page/", f"/tasks/{world.task.code}/examples/999999/"):
        body = client.get(path).content.decode()
        assert settings.SECRET_KEY not in body


# --- gold labels ------------------------------------------------------------------------------
NON_OWNERS = ("anonymous", "campaign", "worker", "other_owner", "staff")


def _gold_paths(world):
    code = world.task.code
    paths = [
        f"/tasks/{code}/leaderboard/",
        f"/tasks/{code}/leaderboard.json",
        f"/tasks/{code}/leaderboard.csv",
        f"/tasks/{code}/datasets/",
        f"/models/{world.model.pk}/results/",
        f"/api/v1/tasks/{code}/datasets/",
        f"/api/v1/tasks/{code}/leaderboard/",
        f"/api/v1/models/{world.model.pk}/scores/",
        f"/api/v1/models/{world.model.pk}/runs/",
        f"/tasks/{code}/export.jsonl",
        f"/api/v1/tasks/{code}/export/",
    ]
    for kind in ("standard", "hidden"):
        slug = world.datasets[kind].slug
        paths += [
            f"/tasks/{code}/datasets/{slug}/",
            f"/api/v1/tasks/{code}/datasets/{slug}/",
            f"/api/v1/tasks/{code}/datasets/{slug}/examples/",
        ]
    return paths


def test_gold_of_hidden_and_standard_datasets_never_reaches_non_owners(world):
    from leaderboards.models import DatasetExample

    golds = {
        kind: list(
            DatasetExample.objects.filter(dataset=world.datasets[kind]).values_list(
                "gold", flat=True
            )
        )
        for kind in ("standard", "hidden")
    }
    assert all(golds.values())
    leaks = []
    for role in NON_OWNERS:
        client = role_client(world, role)
        for path in _gold_paths(world):
            response = client.get(path)
            if getattr(response, "streaming", False):
                body = b"".join(response.streaming_content).decode()
            else:
                body = response.content.decode()
            # Nothing of a hidden dataset reaches a non-owner, not even its inputs.
            if GOLD_MARK_HIDDEN in body:
                leaks.append(f"hidden dataset content in {path} as {role}")
            # Gold columns of any dataset: no HTML gold cell, no non-null "gold" in JSON.
            if 'class="gold"' in body:
                leaks.append(f"a gold cell in {path} as {role}")
            if path.startswith("/api/") and response.status_code == 200:
                for value in _json_values(response.json(), "gold"):
                    if value not in (None, {}, []):
                        leaks.append(f"gold {value!r} in {path} as {role}")
    assert not leaks, "\n".join(leaks)


def _json_values(document, key):
    if isinstance(document, dict):
        for name, value in document.items():
            if name == key:
                yield value
            yield from _json_values(value, key)
    elif isinstance(document, list):
        for item in document:
            yield from _json_values(item, key)


def test_owner_sees_the_gold(world):
    client = role_client(world, "owner")
    slug = world.datasets["hidden"].slug
    response = client.get(f"/api/v1/tasks/{world.task.code}/datasets/{slug}/examples/")
    assert response.status_code == 200
    golds = list(_json_values(response.json(), "gold"))
    assert golds and all(golds)
