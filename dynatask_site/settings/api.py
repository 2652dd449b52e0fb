"""REST API settings, merged into ``base``'s at the end of it (this module imports nothing of it).

Token authentication comes first so that an anonymous API call gets a 401 with a
``WWW-Authenticate: Token`` header; the session keeps working for the pages' own htmx calls.
The stored token is a hash (``api.auth.HashedTokenAuthentication``), so DRF's stock
``TokenAuthentication``, which compares the raw key, is not used.
"""

import os

API_REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.auth.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON by default, nested at most MAX_JSON_DEPTH (64) levels (deeper: 400 json_too_deep);
    # upload endpoints opt into multipart themselves.
    "DEFAULT_PARSER_CLASSES": ["api.parsers.BoundedJSONParser"],
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    # Every POST, PUT, PATCH and DELETE counts against a per-user rate (reads never do);
    # over it: 429 with Retry-After (api.throttles).
    "DEFAULT_THROTTLE_CLASSES": ["api.throttles.WriteRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        # Example creation calls a live model: keep scripts from flooding it.
        "examples": os.environ.get("API_THROTTLE_EXAMPLES", "60/min"),
        # Any other write (edits, flags, verdicts, validations, publishing, snapshots).
        "writes": os.environ.get("API_THROTTLE_WRITES", "120/min"),
        # Writes that start model calls, imports or copies: model registrations, runs and
        # their retries, forks, dataset, prediction and context uploads.
        "heavy_writes": os.environ.get("API_THROTTLE_HEAVY_WRITES", "30/min"),
    },
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

# The largest JSON request body the API reads (api.parsers): over it, 413
# body_too_large. 2 MiB holds the largest config (200,000 characters, escaped as \uXXXX)
# with room; files go by multipart uploads, which UPLOAD_MAX_BYTES bounds instead.
API_MAX_JSON_BODY_BYTES = int(os.environ.get("API_MAX_JSON_BODY_BYTES", str(2 * 1024 * 1024)))

API_SPECTACULAR_SETTINGS = {
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_AUTHENTICATION": [],
    # The shared error responses first: the enum hook works on the built components.
    "POSTPROCESSING_HOOKS": [
        "api.schema.error_responses_hook",
        "drf_spectacular.hooks.postprocess_schema_enums",
    ],
    "ENUM_NAME_OVERRIDES": {
        "ExampleStatusEnum": "annotation.models.ExampleStatus",
        "ModelStatusEnum": "models_hub.models.ModelStatus",
        "RunStatusEnum": "leaderboards.models.RunStatus",
    },
}
