"""Test settings: fast hashing, loopback model servers allowed, the database of DATABASE_URL."""

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


def _xdist_worker_redis_url(url: str, worker: str) -> str:
    """The Redis database of pytest-xdist worker ``gwN``: REDIS_URL's number plus N.

    Each worker flushes its own database; the tests' child processes (RQ workers, cron, a
    child pytest) inherit the result through the environment.
    """
    parts = urlsplit(url)
    database = int(parts.path.strip("/") or 0) + int(worker.removeprefix("gw"))
    return urlunsplit(parts._replace(path=f"/{database}"))


# Under pytest-xdist (scripts/dev.py runs the suite on several workers) each worker process
# gets its own Redis database. The worker's id is recorded beside it, so a child process that
# inherits both (PYTEST_XDIST_WORKER too) keeps the database instead of adding N again.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker.startswith("gw") and os.environ.get("DYNATASK_TEST_REDIS_WORKER") != _worker:
    os.environ["REDIS_URL"] = _xdist_worker_redis_url(
        os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), _worker
    )
    os.environ["DYNATASK_TEST_REDIS_WORKER"] = _worker

from dynatask_site.settings.base import *  # noqa: E402, F403
from dynatask_site.settings.base import BASE_DIR, DATABASES  # noqa: E402

DEBUG = False
SECRET_KEY = "test-only-secret-key"  # noqa: S105
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
MODELS_HUB_ALLOWED_HOSTS = ["localhost", "127.0.0.1", "::1"]
EXPORT_WORKER_ID_SALT = "test-salt"
AXES_ENABLED = os.environ.get("AXES_ENABLED_IN_TESTS", "0") == "1"
DATABASES["default"]["CONN_MAX_AGE"] = 0
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite's test database is in memory by default, which only the test's own thread sees:
    # live_server, the RQ SimpleWorker threads and the evaluation thread pools need a file.
    # It sits next to the DATABASE_URL file (prefixed "test_") so parallel runs with different
    # DATABASE_URLs do not share it. base.py's WAL and busy timeout apply to it too.
    _name = str(DATABASES["default"].get("NAME") or "")
    if _name and _name != ":memory:" and not _name.startswith("file:"):
        _path = Path(_name)
        _test_name = _path.with_name(f"test_{_path.name}")
    else:
        _test_name = BASE_DIR / "var" / "test_db.sqlite3"
    _test_name.parent.mkdir(parents=True, exist_ok=True)
    DATABASES["default"]["TEST"] = {"NAME": str(_test_name)}
# Each test starts from an empty cache of its own process: the shared Redis cache of the
# other settings would carry pages and sessions from one test (and one test run) to the next.
# ``tests/test_cache.py`` covers the Redis backend itself.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# A drain run by a burst worker in a test answers what is pending and returns.
ANNOTATION_LIVE_LINGER_SECONDS = 0.0
# The API's rates (settings/api.py) stay out of the way of the suite; the throttle tests set
# their own low rates.
REST_FRAMEWORK = {
    **REST_FRAMEWORK,  # noqa: F405
    "DEFAULT_THROTTLE_RATES": {
        **REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],  # noqa: F405
        "writes": "100000/min",
        "heavy_writes": "100000/min",
    },
}
