"""System checks of the models hub: the keys that encrypt model endpoint tokens at rest.

- ``models_hub.E001``: a key of ``DYNATASK_SECRET_KEYS`` is not a Fernet key.
- ``models_hub.W001`` (``check --deploy``, with DEBUG off): ``DYNATASK_SECRET_KEYS`` is unset,
  so the tokens are encrypted with a key derived from ``SECRET_KEY``.
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks

from models_hub import sealing
from models_hub.keyring import configured_keys


@checks.register(checks.Tags.security)
def check_secret_keys(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Report a configured key that cannot encrypt or decrypt (its position, never its value)."""
    keys = configured_keys()
    if not keys:
        return []
    try:
        sealing.key_ring(keys)
    except sealing.KeyRingError as error:
        return [
            checks.Error(
                f"DYNATASK_SECRET_KEYS: {error}.",
                hint="Each key is made by cryptography's Fernet.generate_key(); see "
                "docs/security.md.",
                id="models_hub.E001",
            )
        ]
    return []


@checks.register(checks.Tags.security, deploy=True)
def check_secret_keys_set(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Warn when production runs on the key derived from ``SECRET_KEY``."""
    if settings.DEBUG or configured_keys():
        return []
    return [
        checks.Warning(
            "DYNATASK_SECRET_KEYS is not set: model endpoint tokens are encrypted with a key "
            "derived from SECRET_KEY, so changing SECRET_KEY makes every stored token "
            "unreadable.",
            hint="Set DYNATASK_SECRET_KEYS to one or more Fernet keys, then run "
            "'manage.py rotate_model_secrets' (docs/security.md).",
            id="models_hub.W001",
        )
    ]
