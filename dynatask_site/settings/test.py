"""Test settings: fast hashing, loopback model servers allowed, PostgreSQL via DATABASE_URL."""

import os

from dynatask_site.settings.base import *  # noqa: F403
from dynatask_site.settings.base import DATABASES

DEBUG = False
SECRET_KEY = "test-only-secret-key"  # noqa: S105
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
MODELS_HUB_ALLOWED_HOSTS = ["localhost", "127.0.0.1", "::1"]
EXPORT_WORKER_ID_SALT = "test-salt"
AXES_ENABLED = os.environ.get("AXES_ENABLED_IN_TESTS", "0") == "1"
DATABASES["default"]["CONN_MAX_AGE"] = 0
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
