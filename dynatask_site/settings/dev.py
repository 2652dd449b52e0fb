"""Development settings: DEBUG on, an insecure key allowed, the local demo models allowed."""

import os

from dynatask_site.settings.base import *  # noqa: F403
from dynatask_site.settings.base import env_bool, env_list

DEBUG = env_bool("DEBUG", True)
# Development only: production settings have no fallback and refuse to start without one.
SECRET_KEY = os.environ.get("SECRET_KEY", "dev-insecure-key-only-for-local-development")
# The demo model servers run on loopback.
MODELS_HUB_ALLOWED_HOSTS = env_list("MODELS_HUB_ALLOWED_HOSTS", "localhost,127.0.0.1,::1")
EXPORT_WORKER_ID_SALT = os.environ.get("EXPORT_WORKER_ID_SALT", "dev-salt")
