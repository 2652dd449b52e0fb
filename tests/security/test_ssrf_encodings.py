"""Every way of writing an address that we know of, through every path that checks one.

One table: how a host is written in a model URL, and the address it must be judged by. A
refusal names that address (for an IPv6 address that embeds an IPv4 address, the IPv4 one);
``None`` means accepted with the allowlist empty, as in production. The same table goes
through the registration check (``check_url``, which the site's form and the API call through
``services.model_check_endpoint``), through the transport's connect-time check, and, for the
addresses a resolver can return, through a host name that resolves to them. No DNS is asked:
a resolver that fails the test when it is called stands in for it where none may be asked.
"""

from __future__ import annotations

import pytest
from django.test import Client

from models_hub.errors import ModelAddressRefused, ModelConfigurationError
from models_hub.models import RegisteredModel
from models_hub.ssrf import AddressPolicy, check_url
from models_hub.transport import NO_RETRY, request_json

# (host as written in the URL, the address a refusal names, or None when it is accepted)
ENCODINGS = [
    # IPv4 literals in the forms inet_aton reads
    ("127.0.0.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("0x7f.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"),
    ("１２７.０.０.１", "127.0.0.1"),
    ("10.1", "10.0.0.1"),
    ("3232235777", "192.168.1.1"),
    ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
    ("0251.0376.0251.0376", "169.254.169.254"),
    ("8.8.8.8", None),
    ("134744072", None),
    ("0x8.0x8.0x8.0x8", None),
    ("010.010.010.010", None),  # octal: 8.8.8.8
    # IPv6 literals, with zone ids
    ("[::1]", "::1"),
    ("[::]", "::"),
    ("[fe80::1%25eth0]", "fe80::1"),
    ("[::1%25lo]", "::1"),
    ("[2606:4700:4700::1111]", None),
    # IPv4-mapped
    ("[::ffff:127.0.0.1]", "127.0.0.1"),
    ("[::ffff:7f00:1]", "127.0.0.1"),
    ("[::ffff:10.0.0.1]", "10.0.0.1"),
    ("[::ffff:169.254.169.254]", "169.254.169.254"),
    ("[::ffff:192.168.1.1]", "192.168.1.1"),
    ("[::ffff:8.8.8.8]", None),
    # 6to4: the IPv4 address in bits 16 to 48
    ("[2002:7f00:1::]", "127.0.0.1"),
    ("[2002:a00:1::1]", "10.0.0.1"),
    ("[2002:a9fe:a9fe::]", "169.254.169.254"),
    ("[2002:c0a8:101:1::1]", "192.168.1.1"),
    ("[2002:808:808::]", None),
    # Teredo: server in bits 32 to 64, client in the last 32 bits, inverted
    ("[2001:0:808:808::80ff:fffe]", "127.0.0.1"),
    ("[2001:0:808:808::f5ff:fffe]", "10.0.0.1"),
    ("[2001:0:808:808::5601:5601]", "169.254.169.254"),
    ("[2001:0:808:808::3f57:fefe]", "192.168.1.1"),
    ("[2001:0:7f00:1::f7f7:f7f7]", "127.0.0.1"),
    ("[2001:0:a00:1::f7f7:f7f7]", "10.0.0.1"),
    ("[2001:0:a9fe:a9fe::f7f7:f7f7]", "169.254.169.254"),
    ("[2001:0:808:808::f7f7:f7f7]", None),
    # NAT64, the well-known prefix: the last 32 bits
    ("[64:ff9b::7f00:1]", "127.0.0.1"),
    ("[64:ff9b::10.0.0.1]", "10.0.0.1"),
    ("[64:ff9b::a9fe:a9fe]", "169.254.169.254"),
    ("[64:ff9b::192.168.1.1]", "192.168.1.1"),
    ("[64:ff9b::808:808]", None),
    # NAT64, the local-use prefix: the last 32 bits, and the prefix is not public itself
    ("[64:ff9b:1::7f00:1]", "127.0.0.1"),
    ("[64:ff9b:1::a9fe:a9fe]", "169.254.169.254"),
    ("[64:ff9b:1::808:808]", "64:ff9b:1::808:808"),
    # IPv4-compatible (deprecated): the last 32 bits
    ("[::127.0.0.1]", "127.0.0.1"),
    ("[::10.0.0.1]", "10.0.0.1"),
    ("[::169.254.169.254]", "169.254.169.254"),
    ("[::192.168.1.1]", "192.168.1.1"),
    ("[::8.8.8.8]", None),
]
REFUSED = [(host, named) for host, named in ENCODINGS if named is not None]
ACCEPTED = [host for host, named in ENCODINGS if named is None]
# Hosts that end in a number but are no IPv4 address: refused, never sent to DNS.
NOT_ADDRESSES = ["1.2.3.4.5", "256.0.0.1", "1.16777216", "0x100.1", "08.0.0.1", "1..1"]


def no_dns(hostname: str, port: int) -> list[str]:
    raise AssertionError(f"{hostname} was sent to the resolver")


def resolving_to(address: str):
    """Return a resolver that answers ``address`` for every name."""
    return lambda hostname, port: [address]


def bracketed(host: str) -> bool:
    return host.startswith("[")


@pytest.mark.parametrize(("host", "named"), REFUSED)
def test_registration_check_refuses_and_names_the_address(host, named):
    with pytest.raises(ModelAddressRefused) as refused:
        check_url(f"http://{host}:8000/predict", [], resolver=no_dns)
    assert refused.value.code == "model.address_refused"
    assert f" address {named}" in str(refused.value)


@pytest.mark.parametrize("host", ACCEPTED)
def test_public_addresses_are_accepted_in_every_encoding(host):
    check_url(f"https://{host}/predict", [], resolver=no_dns)


@pytest.mark.parametrize("host", NOT_ADDRESSES)
def test_hosts_ending_in_a_number_must_be_valid_ipv4(host):
    with pytest.raises(ModelAddressRefused, match="no valid IPv4 address"):
        check_url(f"http://{host}/", [], resolver=no_dns)


@pytest.mark.parametrize(("host", "named"), REFUSED)
def test_transport_refuses_at_connect_time_with_the_same_message(host, named):
    policy = AddressPolicy.build([], resolver=no_dns)
    with pytest.raises(ModelAddressRefused) as at_registration:
        policy.check_url(f"http://{host}:8000/predict")
    # requests refuses a URL with a non-ASCII IP-like host before anything is checked.
    expected = ModelAddressRefused if host.isascii() else ModelConfigurationError
    with pytest.raises(expected) as at_connect:
        request_json(
            "POST",
            f"http://{host}:8000/predict",
            policy=policy,
            json_body={"inputs": []},
            connect_timeout=1,
            read_timeout=1,
            retry=NO_RETRY,
        )
    if expected is ModelAddressRefused:
        assert str(at_connect.value) == str(at_registration.value)


@pytest.mark.parametrize(
    ("host", "named"), [(host, named) for host, named in ENCODINGS if bracketed(host)]
)
def test_a_name_resolving_to_the_address_is_judged_alike(host, named):
    """DNS answers the address itself (without a zone id); the judgement is the same."""
    answer = host.strip("[]").split("%", 1)[0]
    url = "http://models.example/predict"
    if named is None:
        check_url(url, [], resolver=resolving_to(answer))
        return
    with pytest.raises(ModelAddressRefused) as refused:
        check_url(url, [], resolver=resolving_to(answer))
    assert f" address {named}" in str(refused.value)


# (allowlist, host as written or "name=address" for a resolved name, accepted)
ALLOWLIST_CASES = [
    # The development and test settings allow loopback: every loopback spelling follows.
    (["localhost", "127.0.0.1", "::1"], "127.1", True),
    (["localhost", "127.0.0.1", "::1"], "2130706433", True),
    (["localhost", "127.0.0.1", "::1"], "[::1%25lo]", True),
    (["localhost", "127.0.0.1", "::1"], "[::ffff:127.0.0.1]", True),
    (["localhost", "127.0.0.1", "::1"], "[2002:7f00:1::]", True),
    (["localhost", "127.0.0.1", "::1"], "[64:ff9b::7f00:1]", True),
    (["localhost", "127.0.0.1", "::1"], "[2002:a00:1::]", False),
    (["localhost", "127.0.0.1", "::1"], "127.0.0.2", False),
    # A network entry opens the embedded forms of its addresses...
    (["10.0.0.0/8"], "[2002:a00:1::]", True),
    (["10.0.0.0/8"], "[2001:0:a00:1::f7f7:f7f7]", True),
    (["10.0.0.0/8"], "[2001:0:a00:1::80ff:fffe]", False),  # ...but not a second one inside
    # ...never a metadata address, which needs its exact entry, embedded or not.
    (["169.254.0.0/16", "0.0.0.0/0"], "[2002:a9fe:a9fe::]", False),
    (["169.254.0.0/16", "0.0.0.0/0"], "[2001:0:808:808::5601:5601]", False),
    (["169.254.169.254"], "[2002:a9fe:a9fe::]", True),
    # An allowlisted host name may resolve to embedded private addresses, not link-local ones.
    (["models.internal"], "models.internal=2002:a00:1::", True),
    (["models.internal"], "models.internal=64:ff9b::a9fe:a10", False),
    (["models.internal"], "models.internal=::ffff:169.254.169.254", False),
    (["models.internal"], "other.internal=2002:a00:1::", False),
]


@pytest.mark.parametrize(("allowed", "host", "accepted"), ALLOWLIST_CASES)
def test_the_allowlist_is_matched_against_the_embedded_address(allowed, host, accepted):
    resolver = no_dns
    if "=" in host:
        host, answer = host.split("=", 1)
        resolver = resolving_to(answer)
    url = f"http://{host}:8000/"
    if accepted:
        check_url(url, allowed, resolver=resolver)
    else:
        with pytest.raises(ModelAddressRefused):
            check_url(url, allowed, resolver=resolver)


# --- the site's form and the API ----------------------------------------------------------
SITE_CASES = [
    ("[2002:7f00:1::]", "127.0.0.1"),
    ("[2001:0:808:808::f5ff:fffe]", "10.0.0.1"),
    ("[64:ff9b::a9fe:a9fe]", "169.254.169.254"),
    ("[::192.168.1.1]", "192.168.1.1"),
    ("[::ffff:10.0.0.1]", "10.0.0.1"),
]


@pytest.fixture
def production_allowlist(settings):
    settings.MODELS_HUB_ALLOWED_HOSTS = []


@pytest.mark.django_db
@pytest.mark.parametrize(("host", "named"), SITE_CASES)
def test_register_form_refuses_naming_the_embedded_address(
    task, user, production_allowlist, host, named
):
    client = Client()
    client.force_login(user)
    response = client.post(
        f"/tasks/{task.code}/models/register",
        {
            "name": "transition",
            "protocol": "dynatask",
            "endpoint_url": f"http://{host}:8000/",
            "connect_timeout": 1,
            "read_timeout": 1,
            "batch_size": 1,
            "max_concurrency": 1,
            "options": "{}",
        },
    )
    assert response.status_code == 200
    assert f"address {named}" in response.content.decode()
    assert not RegisteredModel.objects.filter(name="transition").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("host", "named"), SITE_CASES)
def test_register_api_refuses_naming_the_embedded_address(
    task, user, production_allowlist, host, named
):
    client = Client()
    client.force_login(user)
    response = client.post(
        f"/api/v1/tasks/{task.code}/models/",
        {"name": "transition", "protocol": "dynatask", "endpoint_url": f"http://{host}:8000/"},
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "model.address_refused"
    assert f"address {named}" in error["message"]
    assert not RegisteredModel.objects.filter(name="transition").exists()


@pytest.mark.django_db
def test_register_api_accepts_a_public_6to4_endpoint(task, user, production_allowlist):
    client = Client()
    client.force_login(user)
    response = client.post(
        f"/api/v1/tasks/{task.code}/models/",
        {"name": "public-6to4", "protocol": "dynatask", "endpoint_url": "http://[2002:808:808::]/"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
