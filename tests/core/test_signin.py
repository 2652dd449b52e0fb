"""Sign-in lockout (django-axes): password spraying and rotating addresses both lock out, a
user who mistypes does not, and behind trusted proxies the real client is the one counted.

Axes is switched on for this module only (the test settings switch it off elsewhere).
"""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.test import Client, RequestFactory

from core.signin import client_ip_address
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

LIMIT = 5
LOGIN = "/accounts/login/"
PASSWORD = "password"  # UserFactory's


@pytest.fixture(autouse=True)
def axes_on(settings):
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.TRUSTED_PROXY_COUNT = 0


def sign_in(username: str, password: str, address: str = "198.51.100.7", **headers):
    """Post the login form from ``address``; return (response, the client)."""
    client = Client(REMOTE_ADDR=address, **headers)
    return client.post(LOGIN, {"username": username, "password": password}), client


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def assert_locked_out(response) -> None:
    assert response.status_code == 429
    body = response.content.decode()
    assert "Sign-in paused" in body and "15 minutes" in body
    assert response["Retry-After"] == "900"


def test_a_user_who_mistypes_twice_signs_in():
    UserFactory(username="alice")
    for _ in range(2):
        response, _client = sign_in("alice", "wrong")
        assert response.status_code == 200
        assert "Please enter a correct username and password" in response.content.decode()
    response, client = sign_in("alice", PASSWORD)
    assert response.status_code == 302 and signed_in(client)


def test_password_spraying_from_one_address_is_locked_out():
    UserFactory(username="bob")
    statuses = [sign_in(f"target{index}", "Winter2024!")[0].status_code for index in range(LIMIT)]
    assert statuses == [200] * (LIMIT - 1) + [429]
    # Even a real account with its right password is refused from that address ...
    response, client = sign_in("bob", PASSWORD)
    assert_locked_out(response)
    assert not signed_in(client)
    # ... and the admin's login is covered too, while other addresses are not affected.
    admin_response = Client(REMOTE_ADDR="198.51.100.7").post(
        "/admin/login/", {"username": "bob", "password": PASSWORD}
    )
    assert admin_response.status_code == 429
    response, client = sign_in("bob", PASSWORD, address="198.51.100.8")
    assert response.status_code == 302 and signed_in(client)


def test_one_username_from_rotating_addresses_is_locked_out():
    UserFactory(username="victim")
    UserFactory(username="bystander")
    statuses = [
        sign_in("victim", f"guess{index}", address=f"203.0.113.{index + 1}")[0].status_code
        for index in range(LIMIT)
    ]
    assert statuses == [200] * (LIMIT - 1) + [429]
    response, client = sign_in("victim", PASSWORD, address="192.0.2.50")
    assert_locked_out(response)
    assert not signed_in(client)
    # The address is not what is locked: someone else signs in from it.
    response, client = sign_in("bystander", PASSWORD, address="192.0.2.50")
    assert response.status_code == 302 and signed_in(client)


def test_signing_in_to_an_own_account_does_not_reset_the_spraying_count():
    UserFactory(username="attacker")
    for index in range(LIMIT - 1):
        assert sign_in(f"target{index}", "Spring2024!")[0].status_code == 200
    response, client = sign_in("attacker", PASSWORD)
    assert response.status_code == 302 and signed_in(client)
    assert sign_in("target-last", "Spring2024!")[0].status_code == 429
    assert_locked_out(sign_in("attacker", PASSWORD)[0])


# --- the client's address behind reverse proxies --------------------------------------------


def test_without_trusted_proxies_a_forwarded_header_cannot_rotate_the_address():
    for index in range(LIMIT - 1):
        response, _client = sign_in(
            f"target{index}", "x", address="198.51.100.20", HTTP_X_FORWARDED_FOR=f"10.9.8.{index}"
        )
        assert response.status_code == 200
    response, _client = sign_in(
        "target-last", "x", address="198.51.100.20", HTTP_X_FORWARDED_FOR="10.9.8.200"
    )
    assert_locked_out(response)
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.20"}


def test_behind_a_trusted_proxy_the_real_client_is_locked_out(settings):
    settings.TRUSTED_PROXY_COUNT = 1
    UserFactory(username="carol")
    proxy = "10.0.0.2"
    for index in range(LIMIT):
        response, _client = sign_in(
            f"target{index}", "x", address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.7"
        )
    assert_locked_out(response)
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.7"}
    # Another client behind the same proxy is not locked out with it.
    response, client = sign_in("carol", PASSWORD, address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.8")
    assert response.status_code == 302 and signed_in(client)


def test_behind_a_trusted_proxy_a_spoofed_header_cannot_rotate_the_address(settings):
    """The client writes its own X-Forwarded-For; the proxy appends the real address."""
    settings.TRUSTED_PROXY_COUNT = 1
    statuses = []
    for index in range(LIMIT):
        response, _client = sign_in(
            f"target{index}",
            "x",
            address="10.0.0.2",
            HTTP_X_FORWARDED_FOR=f"192.0.2.{index}, 203.0.113.66",
        )
        statuses.append(response.status_code)
    assert statuses == [200] * (LIMIT - 1) + [429]
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.66"}


@pytest.mark.parametrize(
    ("proxies", "forwarded", "expected"),
    [
        (0, "", "10.0.0.2"),
        (0, "203.0.113.7", "10.0.0.2"),  # no trusted proxy: the header is the client's own
        (1, "", "10.0.0.2"),
        (1, "203.0.113.7", "203.0.113.7"),
        (1, "1.2.3.4, 203.0.113.7", "203.0.113.7"),  # the left part is the client's own
        (2, "1.2.3.4, 203.0.113.9, 10.0.0.1", "203.0.113.9"),
        (2, "203.0.113.9", "203.0.113.9"),
        (1, "2001:db8::1", "2001:db8::"),  # IPv6: its /64 network
        (1, "2001:db8:0:1:ffff:ffff:ffff:ffff", "2001:db8:0:1::"),
        (1, "::ffff:203.0.113.7", "203.0.113.7"),  # IPv4 mapped into IPv6
        (1, "not-an-address", "10.0.0.2"),  # never stored as an address
        (1, " 203.0.113.7 ", "203.0.113.7"),
    ],
)
def test_client_ip_address(settings, proxies, forwarded, expected):
    settings.TRUSTED_PROXY_COUNT = proxies
    headers = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {}
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", **headers)
    assert client_ip_address(request) == expected


def test_spraying_from_one_ipv6_64_network_is_locked_out():
    """Each guess from a new address of one /64 still counts against that /64."""
    UserFactory(username="dana")
    statuses = [
        sign_in(f"target{index}", "Autumn2024!", address=f"2001:db8:7:9::{index + 1:x}")[
            0
        ].status_code
        for index in range(LIMIT)
    ]
    assert statuses == [200] * (LIMIT - 1) + [429]
    response, client = sign_in("dana", PASSWORD, address="2001:db8:7:9:abcd:1:2:3")
    assert_locked_out(response)
    assert not signed_in(client)
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"2001:db8:7:9::"}
    # The next /64 is another network.
    response, client = sign_in("dana", PASSWORD, address="2001:db8:7:a::1")
    assert response.status_code == 302 and signed_in(client)


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("2001:db8:7:9::1", "2001:db8:7:9::"),
        ("2001:DB8:7:9:0:0:0:1", "2001:db8:7:9::"),
        ("::ffff:198.51.100.7", "198.51.100.7"),
        ("198.51.100.7", "198.51.100.7"),
        ("::1", "::"),
    ],
)
def test_the_remote_address_counts_an_ipv6_address_by_its_64(settings, remote, expected):
    request = RequestFactory().get("/", REMOTE_ADDR=remote)
    assert client_ip_address(request) == expected


def test_a_garbage_forwarded_header_is_no_error(settings):
    settings.TRUSTED_PROXY_COUNT = 1
    response, _client = sign_in(
        "nobody", "x", address="10.0.0.2", HTTP_X_FORWARDED_FOR="<script>, ::zz"
    )
    assert response.status_code == 200
    assert list(AccessAttempt.objects.values_list("ip_address", flat=True)) == ["10.0.0.2"]
