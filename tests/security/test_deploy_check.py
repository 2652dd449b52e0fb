"""``manage.py check --deploy`` is clean under the production settings."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]


def _prod_env(**extra) -> dict[str, str]:
    # DJANGO_ALLOW_ASYNC_UNSAFE is set by tests/browser/conftest.py for Playwright: never in prod.
    dropped = {"DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {key: value for key, value in os.environ.items() if key not in dropped}
    env.update(
        DJANGO_SETTINGS_MODULE="dynatask_site.settings.prod",
        SECRET_KEY=secrets.token_urlsafe(48)[:64],
        DYNATASK_SECRET_KEYS=Fernet.generate_key().decode(),
        LOG_LEVEL="WARNING",
        **extra,
    )
    env.pop("DEBUG", None)
    return env


def test_check_deploy_is_clean_with_production_settings():
    completed = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_prod_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "no issues" in output, output


def test_check_deploy_warns_when_model_tokens_use_the_derived_key():
    env = _prod_env()
    env.pop("DYNATASK_SECRET_KEYS")
    completed = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "models_hub.W001" in output, output


@pytest.mark.parametrize("secret_key", [None, "short"])
def test_production_settings_refuse_a_missing_or_short_secret_key(secret_key):
    env = _prod_env()
    if secret_key is None:
        env.pop("SECRET_KEY")
    else:
        env["SECRET_KEY"] = secret_key
    completed = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode != 0
    assert "SECRET_KEY" in completed.stderr
    # The refusal never echoes a key back.
    assert "short" not in completed.stderr.replace("SECRET_KEY", "")
