"""Allowlist semantics of the SSRF guard (no network: the resolver is injected)."""

from __future__ import annotations

import pytest

from models_hub.errors import ModelAddressRefused, ModelUnreachable
from models_hub.ssrf import AddressPolicy, Allowlist, check_url


def resolver_for(table: dict[str, list[str]]):
    """Return a resolver answering from ``table`` and recording the names asked."""
    asked: list[str] = []

    def resolve(hostname: str, port: int) -> list[str]:
        asked.append(hostname)
        if hostname not in table:
            raise OSError(f"{hostname} does not resolve")
        return table[hostname]

    resolve.asked = asked  # type: ignore[attr-defined]
    return resolve


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/",
        "http://[::1]/",
        "http://0.0.0.0/",
        "http://10.1.2.3/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://169.254.10.10/",
        "http://[fe80::1]/",
        "http://224.0.0.1/",
        "http://240.0.0.1/",
        "http://100.64.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fd00:ec2::254]/",
    ],
)
def test_non_public_addresses_are_refused_without_allowlist(url):
    with pytest.raises(ModelAddressRefused):
        check_url(url, [], resolver=resolver_for({}))


def test_public_address_is_accepted():
    check_url("https://8.8.8.8/predict", [], resolver=resolver_for({}))
    check_url("https://models.example/", [], resolver=resolver_for({"models.example": ["1.1.1.1"]}))


@pytest.mark.parametrize(
    "url",
    [
        "ftp://8.8.8.8/",
        "file:///etc/passwd",
        "http://user:secret@8.8.8.8/",
        "http:///nohost",
        "gopher://x/",
    ],
)
def test_bad_urls_are_refused(url):
    with pytest.raises(ModelAddressRefused):
        check_url(url, ["8.8.8.8"], resolver=resolver_for({}))


def test_loopback_allowed_by_address_network_or_hostname():
    resolver = resolver_for({"localhost": ["127.0.0.1", "::1"]})
    check_url("http://127.0.0.1:9000/", ["127.0.0.1"], resolver=resolver)
    check_url("http://127.0.0.5/", ["127.0.0.0/8"], resolver=resolver)
    check_url("http://localhost:9000/", ["localhost"], resolver=resolver)
    with pytest.raises(ModelAddressRefused):
        check_url("http://127.0.0.5/", ["127.0.0.1"], resolver=resolver)


def test_hostname_on_allowlist_resolving_to_link_local_is_refused():
    resolver = resolver_for({"models.internal": ["169.254.10.10"]})
    with pytest.raises(ModelAddressRefused):
        check_url("http://models.internal/", ["models.internal"], resolver=resolver)
    check_url("http://models.internal/", ["models.internal", "169.254.10.10"], resolver=resolver)


def test_hostname_on_allowlist_may_resolve_to_private_address():
    resolver = resolver_for({"models.internal": ["10.0.0.5"]})
    check_url("http://models.internal/", ["models.internal"], resolver=resolver)
    with pytest.raises(ModelAddressRefused):
        check_url("http://models.internal/", ["other.internal"], resolver=resolver)


def test_metadata_address_needs_its_exact_address_on_the_allowlist():
    resolver = resolver_for({"rebind.example": ["169.254.169.254"]})
    for allowed in (["169.254.0.0/16"], ["rebind.example"], ["0.0.0.0/0"]):
        with pytest.raises(ModelAddressRefused, match="metadata"):
            check_url("http://rebind.example/", allowed, resolver=resolver)
    check_url("http://rebind.example/", ["169.254.169.254"], resolver=resolver)


def test_any_refused_address_refuses_the_host():
    resolver = resolver_for({"mixed.example": ["8.8.8.8", "10.0.0.1"]})
    with pytest.raises(ModelAddressRefused, match="10.0.0.1"):
        check_url("http://mixed.example/", [], resolver=resolver)


def test_metadata_hostname_is_refused_before_resolving():
    resolver = resolver_for({"metadata.google.internal": ["8.8.8.8"]})
    with pytest.raises(ModelAddressRefused, match="metadata"):
        check_url("http://metadata.google.internal/computeMetadata/v1/", [], resolver=resolver)
    assert resolver.asked == []


def test_unresolvable_host_is_unreachable():
    with pytest.raises(ModelUnreachable):
        check_url("http://nowhere.invalid/", [], resolver=resolver_for({}))


def test_allowlist_parsing():
    allowlist = Allowlist.parse(["LocalHost.", "127.0.0.1", "10.0.0.0/8", "[::1]", " "])
    assert allowlist.hostnames == {"localhost"}
    assert {str(address) for address in allowlist.addresses} == {"127.0.0.1", "::1"}
    assert [str(network) for network in allowlist.networks] == ["10.0.0.0/8"]
    with pytest.raises(ValueError):
        Allowlist.parse(["10.0.0.0/33"])


def test_policy_is_hashable_for_the_session_cache():
    assert hash(AddressPolicy.build(["localhost"])) == hash(AddressPolicy.build(["localhost"]))
