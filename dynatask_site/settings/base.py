"""Settings shared by every environment. Everything that varies comes from the environment."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

import dj_database_url
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

BASE_DIR = Path(__file__).resolve().parent.parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "crispy_forms",
    "crispy_bootstrap5",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_rq",
    "axes",
    # Shared plumbing with no models (the run_cron command); see core/__init__.py.
    "core",
    "tasks",
    "models_hub",
    "annotation",
    "leaderboards",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "dynatask_site.urls"
WSGI_APPLICATION = "dynatask_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dynatask_site.context_processors.site_urls",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
    )
}
# Behind a transaction-pooling PgBouncer (docs/deploy.md), DB_TRANSACTION_POOLING=1: no
# prepared statements, no session options, and no server-side cursors (a cursor outlives the
# transaction that the pooler gives back).
DB_TRANSACTION_POOLING = env_bool("DB_TRANSACTION_POOLING", False)
if DB_TRANSACTION_POOLING:
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
if (
    DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    and env_bool("DB_SERVER_SIDE_BINDING", True)
    and not DB_TRANSACTION_POOLING
):
    # Parameters bound on the server: the text of a query is the same whatever its values,
    # so psycopg prepares the hot queries (after 5 runs on a connection) and PostgreSQL
    # parses them once. Every run is still planned with its values (force_custom_plan): a
    # generic plan cannot use a partial index whose condition names a value (the validation
    # queue's), and scanned the whole table instead. Django turns psycopg's prepared
    # statements off by default (for transaction-pooling poolers); with a pooler in that
    # mode, set DB_SERVER_SIDE_BINDING=0.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "server_side_binding": True,
            "prepare_threshold": 5,
            "options": "-c plan_cache_mode=force_custom_plan",
        }
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process and the RQ workers read while one of them writes.
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update(
        {
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            # A deferred transaction that later writes fails at once with "database is locked"
            # when another process writes; IMMEDIATE takes the write lock up front and waits.
            "transaction_mode": "IMMEDIATE",
        }
    )
    DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# The site ships in English only (no LocaleMiddleware, no catalogues): without the translation
# machinery, each of the 20-odd lazy strings and number formats a page resolves skips the
# active-language lookup (a thread-local read under a lock).
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# ``collectstatic`` writes here; each web host serves it with WhiteNoise (docs/deploy.md).
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "var" / "staticfiles"))
# Uploaded files: on a shared volume when there are several web and worker hosts.
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", BASE_DIR / "var" / "media"))
MEDIA_URL = "/media/"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

CRISPY_ALLOWED_TEMPLATE_PACKS = "bootstrap5"
CRISPY_TEMPLATE_PACK = "bootstrap5"

# --- Redis and RQ ------------------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


def redis_connection_options(url: str) -> dict:
    """django-rq's connection settings for the Redis at ``url``."""
    parts = urlsplit(url)
    return {
        "HOST": parts.hostname or "127.0.0.1",
        "PORT": parts.port or 6379,
        "DB": int(parts.path.strip("/") or 0),
        "USERNAME": unquote(parts.username) if parts.username else None,
        "PASSWORD": unquote(parts.password) if parts.password else None,
        "SSL": parts.scheme == "rediss",
    }


# The RQ workers and the cron scheduler ride out a Redis restart: every command, and every
# attempt to connect (a refused connection is an OSError), is tried again with a growing
# pause, for about 20 s, before it fails.
WORKER_REDIS_CLIENT_KWARGS = {
    "retry": Retry(ExponentialBackoff(cap=1.0, base=0.05), 25),
    "retry_on_error": [RedisConnectionError, RedisTimeoutError, OSError],
    "health_check_interval": 30,
}
# A web request gives up at once: the page says the queue is unreachable, nothing waits.
WEB_REDIS_CLIENT_KWARGS = {
    "retry": Retry(NoBackoff(), 1),
    "retry_on_error": [RedisConnectionError, RedisTimeoutError],
    "socket_connect_timeout": 1.0,
    "health_check_interval": 30,
}
_REDIS = {**redis_connection_options(REDIS_URL), "REDIS_CLIENT_KWARGS": WORKER_REDIS_CLIENT_KWARGS}
RQ_QUEUES = {
    # Live predictions, the counters' flush and the live watchdog: served by RQ's non-forking
    # SimpleWorker, short timeouts.
    "live": {**_REDIS, "DEFAULT_TIMEOUT": 60, "DEFAULT_RESULT_TTL": 600},
    # Evaluation shards and finalize jobs.
    "eval": {**_REDIS, "DEFAULT_TIMEOUT": 3600, "DEFAULT_RESULT_TTL": 3600},
    # Model health checks: their own worker, so a probe never waits behind an evaluation.
    "health": {**_REDIS, "DEFAULT_TIMEOUT": 300, "DEFAULT_RESULT_TTL": 300},
    "default": {**_REDIS, "DEFAULT_TIMEOUT": 600, "DEFAULT_RESULT_TTL": 3600},
    # Chat replies (the pump, which streams for up to two minutes) and the chat judge: their
    # own SimpleWorker, so a conversation never holds the live queue's worker.
    "chat": {**_REDIS, "DEFAULT_TIMEOUT": 900, "DEFAULT_RESULT_TTL": 600},
}
# No django_rq queue admin: its fake Queue model has no table and needs django_rq.urls.
# Evaluation progress is shown on the run pages; workers are watched with `rq info`.
RQ_SHOW_ADMIN_LINK = False

# The shared cache (sessions, task bundles, leaderboard pages, API throttles) in the same
# Redis, through django-redis: a Redis outage is a cache miss (IGNORE_EXCEPTIONS), given up on
# after a short timeout, and logged.
CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "dynatask"),
        "OPTIONS": {
            "SOCKET_CONNECT_TIMEOUT": 0.25,
            "SOCKET_TIMEOUT": 0.5,
            "IGNORE_EXCEPTIONS": True,
        },
    }
}
# An ignored Redis error is logged (logger ``django_redis.cache``).
DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True
# Sessions are read from the cache and written through to the database: one Redis GET
# instead of a query on every request, and nothing is lost when Redis restarts.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

# --- REST framework -----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Dynatask API",
    "DESCRIPTION": "Dynamic benchmarks: tasks, examples, models, evaluations, leaderboards.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Login rate limiting (django-axes; docs/security.md) -------------------------------------
# AXES_FAILURE_LIMIT failed sign-ins within the cool-off pause sign-ins for the cool-off. They
# are counted per address (password spraying: many usernames from one address) and per
# username (one account tried from rotating addresses); either count locks out.
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = float(os.environ.get("AXES_COOLOFF_MINUTES", "15")) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["ip_address"], ["username"]]
# A success must not wipe the failures: it would clear its address's count too, so an attacker
# with one account of their own could sign in now and then and keep spraying.
AXES_RESET_ON_SUCCESS = False
AXES_LOCKOUT_CALLABLE = "core.signin.lockout_response"
AXES_CLIENT_IP_CALLABLE = "core.signin.client_ip_address"
# Reverse proxies in front of the app server that append to X-Forwarded-For (0: none, and the
# header is ignored). Set it to exactly the number of proxies (docs/security.md).
TRUSTED_PROXY_COUNT = int(os.environ.get("TRUSTED_PROXY_COUNT", "0"))

# --- Self-sign-up ---------------------------------------------------------------------------
# Whether people may create their own account, until an admin sets it in the admin's
# "Site settings" (the row, once saved, decides).
SIGNUP_OPEN_DEFAULT = env_bool("DYNATASK_SIGNUP_OPEN", True)
# New accounts one address may create within an hour (0: no limit).
SIGNUP_RATE_LIMIT = int(os.environ.get("DYNATASK_SIGNUP_RATE_LIMIT", "10"))

# --- Models hub ------------------------------------------------------------------------
# Hosts/networks a model endpoint may reach even though they are loopback/private.
# Entries: hostnames ("localhost"), addresses ("127.0.0.1") or networks ("10.0.0.0/8").
MODELS_HUB_ALLOWED_HOSTS = env_list("MODELS_HUB_ALLOWED_HOSTS", "")
MODELS_HUB_MAX_RESPONSE_BYTES = int(os.environ.get("MODELS_HUB_MAX_RESPONSE_BYTES", 2_000_000))
# The most a model's read timeout may be, in seconds: a slow endpoint holds a worker that
# long per batch. Staff raise it per model (the ``raise_read_timeout`` permission).
MODELS_HUB_READ_TIMEOUT_CAP = float(os.environ.get("MODELS_HUB_READ_TIMEOUT_CAP", "60"))
# Models one user may register per task in 24 hours (the task's owners apart; 0: no limit).
MODELS_HUB_REGISTRATIONS_PER_DAY = int(os.environ.get("MODELS_HUB_REGISTRATIONS_PER_DAY", "5"))
# Keys that encrypt the model endpoints' tokens in the database, comma-separated Fernet keys
# (``python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"``):
# the first encrypts, every one decrypts. Unset, a key derived from SECRET_KEY is used (fine
# for development; ``check --deploy`` warns). Rotation: docs/security.md.
DYNATASK_SECRET_KEYS = env_list("DYNATASK_SECRET_KEYS", "")
# Seconds between the periodic health checks of every registered model (RQ cron).
MODELS_HUB_HEALTH_INTERVAL = int(os.environ.get("MODELS_HUB_HEALTH_INTERVAL", "60"))

# --- Annotation ----------------------------------------------------------------------------
# How long the create POST waits for the live model before falling back to htmx polling.
ANNOTATION_SYNC_WAIT_SECONDS = float(os.environ.get("ANNOTATION_SYNC_WAIT_SECONDS", "1.5"))
# Server-side wait of one status poll, and when a model counts as "too slow" for the worker.
ANNOTATION_POLL_WAIT_SECONDS = float(os.environ.get("ANNOTATION_POLL_WAIT_SECONDS", "2"))
ANNOTATION_SLOW_MODEL_SECONDS = float(os.environ.get("ANNOTATION_SLOW_MODEL_SECONDS", "30"))
# How many waiting examples a drain of the live queue answers with one model call at most
# (a model's own ``batch_size`` splits a larger call).
ANNOTATION_LIVE_BATCH_SIZE = int(os.environ.get("ANNOTATION_LIVE_BATCH_SIZE", "16"))
# How long a drain waits for new examples once it has answered all of them: an example that
# arrives meanwhile is taken at once, with no job to queue and start. The worker stays free
# for other jobs: the drain stops waiting when one is queued.
ANNOTATION_LIVE_LINGER_SECONDS = float(os.environ.get("ANNOTATION_LIVE_LINGER_SECONDS", "1"))
# Seconds between two flushes of the buffered stats counters (``annotation.stats.buffer``) and
# between two checks of the live loop (``annotation.live.watchdog``).
ANNOTATION_COUNTER_FLUSH_SECONDS = int(os.environ.get("ANNOTATION_COUNTER_FLUSH_SECONDS", "5"))
ANNOTATION_LIVE_WATCHDOG_SECONDS = int(os.environ.get("ANNOTATION_LIVE_WATCHDOG_SECONDS", "10"))
# Seconds RQ keeps a finished live job (its hash and result). A drain wakes its pages through
# streams of their own and writes its outcomes to the examples, so only operators read it
# later; a long stay piles job records up in Redis under load. Not 0: RQ then deletes the job,
# and its deletion asks Redis the job's status once per registry, which costs the worker more
# than keeping the job a minute. Jobs that raise are kept a day either way.
ANNOTATION_LIVE_RESULT_TTL = int(os.environ.get("ANNOTATION_LIVE_RESULT_TTL", "60"))

# Evaluation shards whose worker died (a lost host) are enqueued again: a running shard job's
# lease lapses this many seconds after its last renewal (``leaderboards.job_leases``), and the
# periodic recovery looks every EVAL_RECOVER_SECONDS.
EVAL_JOB_LEASE_SECONDS = float(os.environ.get("EVAL_JOB_LEASE_SECONDS", "15"))
EVAL_RECOVER_SECONDS = int(os.environ.get("EVAL_RECOVER_SECONDS", "10"))

# The periodic jobs that ``manage.py run_cron`` registers with RQ's cron scheduler:
# (dotted path of the job function, queue, interval in seconds). Run ``run_cron`` on every
# worker host: each job is enqueued once per period across all of them (core.periodic).
PERIODIC_JOBS = [
    ("models_hub.jobs.health_check_all_job", "health", MODELS_HUB_HEALTH_INTERVAL),
    ("annotation.stats.buffer.counters_flush_job", "live", ANNOTATION_COUNTER_FLUSH_SECONDS),
    ("annotation.live.watchdog.live_watchdog_job", "live", ANNOTATION_LIVE_WATCHDOG_SECONDS),
    ("leaderboards.jobs.eval_recover_job", "eval", EVAL_RECOVER_SECONDS),
]

# --- Leaderboards --------------------------------------------------------------------------
# Memory of the reference instance: memory enters the Dynascore as "memory saved" (GB).
LEADERBOARD_INSTANCE_MEMORY_GB = float(os.environ.get("LEADERBOARD_INSTANCE_MEMORY_GB", "16"))
# Fair evaluation (``leaderboards.services.scheduling``): how many shard jobs of one model run
# at once, and how long one job sends before the model gives its turn to the others.
EVAL_SHARDS_PER_MODEL = int(os.environ.get("EVAL_SHARDS_PER_MODEL", "1"))
EVAL_SHARD_SLICE_SECONDS = float(os.environ.get("EVAL_SHARD_SLICE_SECONDS", "30"))
# A running shard writes its answered examples (and so moves the run's done count) at least
# this often, besides every 1,000 examples (``leaderboards.services.shards``).
EVAL_PROGRESS_SECONDS = float(os.environ.get("EVAL_PROGRESS_SECONDS", "1"))
# Seconds a computed leaderboard page is reused (keyed by viewer, weights and data version).
LEADERBOARD_CACHE_SECONDS = int(os.environ.get("LEADERBOARD_CACHE_SECONDS", "300"))

# --- Uploads (datasets, contexts) ----------------------------------------------------------
# A file over UPLOAD_INLINE_MAX_BYTES is imported by an RQ job (with a progress page), not
# in its request; any file over UPLOAD_MAX_BYTES, or over UPLOAD_MAX_ROWS rows, is refused
# (0: no cap).
UPLOAD_INLINE_MAX_BYTES = int(os.environ.get("UPLOAD_INLINE_MAX_BYTES", str(5 * 1024 * 1024)))
UPLOAD_MAX_BYTES = int(os.environ.get("UPLOAD_MAX_BYTES", str(1024 * 1024 * 1024)))
UPLOAD_MAX_ROWS = int(os.environ.get("UPLOAD_MAX_ROWS", "2000000"))

# Salt for anonymised worker ids in exports.
EXPORT_WORKER_ID_SALT = os.environ.get("EXPORT_WORKER_ID_SALT", "")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # A 403 is an expected refusal: one line, never a traceback.
    "filters": {"forbidden_on_one_line": {"()": "core.log_filters.ForbiddenOnOneLine"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "rq.worker": {"level": "WARNING"},
        "django.request": {"filters": ["forbidden_on_one_line"]},
    },
}

# --- The REST API (settings/api.py) ----------------------------------------------------------
from dynatask_site.settings.api import (  # noqa: E402
    API_MAX_JSON_BODY_BYTES,  # noqa: F401 (a setting)
    API_REST_FRAMEWORK,
    API_SPECTACULAR_SETTINGS,
)

REST_FRAMEWORK = {
    **REST_FRAMEWORK,
    **API_REST_FRAMEWORK,
    # Throttles key anonymous calls by the address the trusted proxies saw, as sign-ins do
    # (core.signin): never by an X-Forwarded-For a client wrote itself.
    "NUM_PROXIES": TRUSTED_PROXY_COUNT,
}
SPECTACULAR_SETTINGS = {**SPECTACULAR_SETTINGS, **API_SPECTACULAR_SETTINGS}
