"""API tokens: one per user, only a hash of the key stored, and DRF authentication with it.

Kept apart from ``api.errors`` because DRF imports authentication classes while
``rest_framework.views`` loads; this module imports nothing that imports the views.
"""

from __future__ import annotations

import hashlib
import secrets

from django.db import transaction
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

# A user has at most one API token (DRF's authtoken table). Only a hash of the key is stored in
# ``Token.key``: the key itself is shown once, when it is created, and cannot be recovered.

TOKEN_PREFIX = "dyn_"


def token_hash(raw_key: str) -> str:
    """Return the stored form of ``raw_key`` (fits DRF's 40-character key column)."""
    return hashlib.sha256(raw_key.encode()).hexdigest()[:40]


@transaction.atomic
def api_token_create(user) -> str:
    """Replace ``user``'s API token with a new one and return its key (shown once)."""
    raw_key = TOKEN_PREFIX + secrets.token_urlsafe(32)
    Token.objects.filter(user=user).delete()
    Token.objects.create(user=user, key=token_hash(raw_key))
    return raw_key


def api_token_revoke(user) -> bool:
    """Delete ``user``'s API token; return True when there was one."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)


def api_token_of(user) -> Token | None:
    return Token.objects.filter(user=user).first()


class HashedTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``, checked against the stored hash of the key."""

    def authenticate_credentials(self, key):
        return super().authenticate_credentials(token_hash(key))
