"""The settings docs/deploy.md names, read from each host's environment."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRINT = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "d = s.DATABASES['default']; print(json.dumps({'options': d.get('OPTIONS', {}), "
    "'no_cursors': d.get('DISABLE_SERVER_SIDE_CURSORS', False), 'static': str(s.STATIC_ROOT), "
    "'media': str(s.MEDIA_ROOT), 'secure_cookies': s.SESSION_COOKIE_SECURE, "
    "'csrf_secure': s.CSRF_COOKIE_SECURE, 'exempt': s.SECURE_REDIRECT_EXEMPT}))"
)


def settings_with(**env) -> dict:
    base = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    base.update(
        DJANGO_SETTINGS_MODULE="dynatask_site.settings.prod",
        SECRET_KEY=secrets.token_urlsafe(48),
        DATABASE_URL="postgres://dynatask@db.internal:6432/dynatask",
        LOG_LEVEL="WARNING",
        **env,
    )
    completed = subprocess.run(
        [sys.executable, "-c", PRINT], cwd=ROOT, env=base, capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_production_defaults_and_a_transaction_pooler():
    plain = settings_with()
    assert plain["options"]["server_side_binding"] is True and not plain["no_cursors"]
    assert plain["secure_cookies"] and plain["csrf_secure"]
    assert plain["exempt"] == [r"^readyz$"]  # the balancer's check speaks plain HTTP
    pooled = settings_with(DB_TRANSACTION_POOLING="1")
    assert pooled["no_cursors"] and "server_side_binding" not in pooled["options"]
    assert "options" not in pooled["options"]  # no session options through the pooler


def test_shared_folders_and_cookie_flags_from_the_environment(tmp_path):
    found = settings_with(
        STATIC_ROOT=str(tmp_path / "static"), MEDIA_ROOT=str(tmp_path / "media"),
        SECURE_COOKIES="0",
    )  # fmt: skip
    assert found["static"] == str(tmp_path / "static")
    assert found["media"] == str(tmp_path / "media")
    assert not found["secure_cookies"] and not found["csrf_secure"]
