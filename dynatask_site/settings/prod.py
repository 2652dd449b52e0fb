"""Production settings: every secret comes from the environment; no fallbacks."""

import os

from django.core.exceptions import ImproperlyConfigured

from dynatask_site.settings.base import *  # noqa: F403
from dynatask_site.settings.base import env_bool

DEBUG = False
try:
    SECRET_KEY = os.environ["SECRET_KEY"]
except KeyError:
    raise ImproperlyConfigured("SECRET_KEY must be set in the environment in production.")
if len(SECRET_KEY) < 50:
    raise ImproperlyConfigured("SECRET_KEY must be at least 50 characters long.")
EXPORT_WORKER_ID_SALT = os.environ.get("EXPORT_WORKER_ID_SALT", SECRET_KEY)

SECURE_SSL_REDIRECT = os.environ.get("SECURE_SSL_REDIRECT", "1") == "1"
# The load balancer's health check talks plain HTTP to each web host (docs/deploy.md).
SECURE_REDIRECT_EXEMPT = [r"^readyz$"]
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Cookies go over HTTPS only. Turn this off only where no browser ever sees the site over
# plain HTTP on a public network (the namespace cluster of bench/cluster.py).
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
