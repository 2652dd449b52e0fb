"""The site's key ring for model endpoint tokens, built from the settings.

``DYNATASK_SECRET_KEYS`` lists Fernet keys, the first of which seals. A key derived from
``SECRET_KEY`` comes last: it seals when the variable is empty (development, tests and the
demo; the deploy checks warn about it in production: ``models_hub.checks``), and otherwise
still opens the tokens sealed before the variable was set, until ``rotate_model_secrets``
moves them to the first key. Rotation is described in docs/security.md.
"""

from __future__ import annotations

from functools import lru_cache

from cryptography.fernet import MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from models_hub import sealing


def configured_keys() -> tuple[str, ...]:
    """Return the keys of ``DYNATASK_SECRET_KEYS`` (empty when it is unset)."""
    return tuple(key.strip() for key in settings.DYNATASK_SECRET_KEYS if key.strip())


def site_key_ring() -> MultiFernet:
    """Return the ring of the configured keys followed by the key derived from
    ``SECRET_KEY``; raise ``ImproperlyConfigured`` (naming the position of a bad key) when
    one is unusable."""
    return _ring(configured_keys(), settings.SECRET_KEY)


@lru_cache(maxsize=8)
def _ring(keys: tuple[str, ...], secret_key: str) -> MultiFernet:
    # Keyed by the values: tests that override the settings get their own ring.
    try:
        return sealing.key_ring((*keys, sealing.dev_key(secret_key)))
    except sealing.KeyRingError as error:
        raise ImproperlyConfigured(f"DYNATASK_SECRET_KEYS: {error}") from None
