"""The pure core of tokens at rest (``models_hub.sealing``): no database, no network."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from models_hub import sealing

TOKEN = "sk-plain-token-0123456789"
OLD_KEY = Fernet.generate_key().decode()
NEW_KEY = Fernet.generate_key().decode()


def test_seal_hides_the_token_and_unseal_gives_it_back():
    ring = sealing.key_ring([OLD_KEY])
    sealed = sealing.seal(TOKEN, ring)
    assert TOKEN not in sealed and sealing.is_sealed(sealed)
    assert sealing.unseal(sealed, ring) == TOKEN
    # Sealing is randomised (a fresh IV each time) and never seals twice.
    assert sealing.seal(TOKEN, ring) != sealed
    assert sealing.seal(sealed, ring) == sealed


def test_empty_means_no_token_everywhere():
    ring = sealing.key_ring([OLD_KEY])
    assert sealing.seal("", ring) == ""
    assert sealing.unseal("", ring) == ""
    assert sealing.rotate("", ring) == ""
    assert sealing.can_unseal("", ring)


def test_every_key_of_the_ring_opens_and_the_first_seals():
    sealed_with_old = sealing.seal(TOKEN, sealing.key_ring([OLD_KEY]))
    both = sealing.key_ring([NEW_KEY, OLD_KEY])
    assert sealing.unseal(sealed_with_old, both) == TOKEN
    rotated = sealing.rotate(sealed_with_old, both)
    assert rotated != sealed_with_old
    only_new = sealing.key_ring([NEW_KEY])
    assert sealing.unseal(rotated, only_new) == TOKEN
    assert sealing.unseal(sealing.seal(TOKEN, both), only_new) == TOKEN


def test_a_token_no_key_opens_is_unreadable_and_the_message_quotes_nothing():
    sealed = sealing.seal(TOKEN, sealing.key_ring([OLD_KEY]))
    only_new = sealing.key_ring([NEW_KEY])
    assert not sealing.can_unseal(sealed, only_new)
    for operation in (sealing.unseal, sealing.rotate):
        with pytest.raises(sealing.TokenUnreadable) as caught:
            operation(sealed, only_new)
        assert TOKEN not in str(caught.value) and sealed not in str(caught.value)


@pytest.mark.parametrize("value", [TOKEN, "fernet:not-a-fernet-token", "fernet:été"])
def test_plain_or_damaged_values_are_unreadable(value):
    ring = sealing.key_ring([OLD_KEY])
    with pytest.raises(sealing.TokenUnreadable):
        sealing.unseal(value, ring)
    assert not sealing.can_unseal(value, ring)


def test_a_bad_key_is_named_by_position_never_by_value():
    with pytest.raises(sealing.KeyRingError) as caught:
        sealing.key_ring([NEW_KEY, "not-a-key"])
    assert "key 2" in str(caught.value) and "not-a-key" not in str(caught.value)
    with pytest.raises(sealing.KeyRingError):
        sealing.key_ring([])


def test_the_development_key_is_a_stable_fernet_key_per_secret():
    key = sealing.dev_key("some secret")
    assert key == sealing.dev_key("some secret") != sealing.dev_key("another secret")
    ring = sealing.key_ring([key])
    assert sealing.unseal(sealing.seal(TOKEN, ring), ring) == TOKEN
