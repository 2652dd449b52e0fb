"""Sealing model endpoint tokens for storage: encryption at rest under a ring of keys.

Contract (pure: no Django, no database, no network):

- A sealed value is ``SEALED_PREFIX`` followed by a Fernet token (AES in CBC mode with an
  HMAC-SHA256 over it, from ``cryptography``) made with the first key of the ring. The prefix
  tells a sealed value from a plain one without trying a key, so sealing twice is a no-op.
- Every key of the ring opens a sealed value (``MultiFernet``): an operator puts a new key
  first, rotates the stored values to it (``rotate``) and only then drops the old key.
- The empty string means "no token" and stays empty through ``seal``, ``unseal`` and
  ``rotate``.
- A value no key of the ring opens, or a plain value where a sealed one is expected, raises
  ``TokenUnreadable``; a key that is not a Fernet key raises ``KeyRingError``. Neither message
  quotes a token or a key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

SEALED_PREFIX = "fernet:"
# What the development key is derived for: another use of SECRET_KEY gets another key.
DEV_KEY_PURPOSE = b"dynatask.models_hub: model endpoint tokens at rest"


class KeyRingError(ValueError):
    """The configured keys cannot make a key ring (none, or one is not a Fernet key)."""


class TokenUnreadable(Exception):
    """A stored token that no key of the ring opens (or that was never sealed)."""


def key_ring(keys: Sequence[str]) -> MultiFernet:
    """Return the ring of ``keys``: the first seals, every one opens.

    Each key is a Fernet key: 32 random bytes in URL-safe base64 (``Fernet.generate_key()``).
    Raises ``KeyRingError`` naming the position (from 1) of a bad key, never its value.
    """
    if not keys:
        raise KeyRingError("no key given")
    fernets = []
    for position, key in enumerate(keys, start=1):
        try:
            fernets.append(Fernet(key.strip()))
        except (ValueError, TypeError):
            raise KeyRingError(
                f"key {position} is not a Fernet key (32 bytes in URL-safe base64)"
            ) from None
    return MultiFernet(fernets)


def dev_key(secret_key: str) -> str:
    """Return a Fernet key derived from ``secret_key`` (HMAC-SHA256), for development and
    tests: the same secret always gives the same key, so a fresh checkout needs no setup."""
    digest = hmac.new(secret_key.encode(), DEV_KEY_PURPOSE, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode()


def is_sealed(value: str) -> bool:
    """Return True when ``value`` is a sealed value (whether or not this ring opens it)."""
    return value.startswith(SEALED_PREFIX)


def seal(token: str, ring: MultiFernet) -> str:
    """Return ``token`` sealed with the ring's first key; an empty or sealed value as it is."""
    if not token or is_sealed(token):
        return token
    return SEALED_PREFIX + ring.encrypt(token.encode()).decode("ascii")


def _fernet_token(value: str) -> bytes:
    if not is_sealed(value):
        raise TokenUnreadable("the stored token is not encrypted")
    return value.removeprefix(SEALED_PREFIX).encode("ascii", errors="replace")


def unseal(value: str, ring: MultiFernet) -> str:
    """Return the token sealed in ``value`` ("" for ""); raise ``TokenUnreadable`` when no
    key of the ring opens it or it is not sealed."""
    if not value:
        return ""
    try:
        return ring.decrypt(_fernet_token(value)).decode()
    except (InvalidToken, UnicodeDecodeError):
        raise TokenUnreadable("no key of the ring decrypts the stored token") from None


def can_unseal(value: str, ring: MultiFernet) -> bool:
    """Return True when ``value`` is empty or a key of the ring opens it (the token itself is
    dropped at once)."""
    try:
        unseal(value, ring)
    except TokenUnreadable:
        return False
    return True


def rotate(value: str, ring: MultiFernet) -> str:
    """Return ``value`` sealed again with the ring's first key ("" for ""); raise
    ``TokenUnreadable`` when no key of the ring opens it or it is not sealed."""
    if not value:
        return ""
    try:
        return SEALED_PREFIX + ring.rotate(_fernet_token(value)).decode("ascii")
    except InvalidToken:
        raise TokenUnreadable("no key of the ring decrypts the stored token") from None
