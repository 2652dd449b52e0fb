"""SSRF guard for model endpoint URLs (pure: settings come in as arguments).

Contract:

- Only ``http`` and ``https`` URLs with a hostname and without credentials (``user:pass@``)
  are accepted.
- A known cloud metadata hostname (``metadata.google.internal``, ...) is refused unless that
  hostname is on the allowlist; its addresses are then still checked as below.
- The hostname is resolved and the URL is refused if **any** resolved address is non-public:
  loopback, private, link-local (``169.254.0.0/16``, ``fe80::/10``), unspecified, multicast,
  reserved, shared (``100.64.0.0/10``) or site-local, including the IPv4-mapped IPv6 forms
  (``::ffff:127.0.0.1``) of those. Public addresses are always accepted.
- The allowlist (``MODELS_HUB_ALLOWED_HOSTS``) holds hostnames, IP addresses and CIDR networks.
  A non-public address is accepted when the address is inside an allowlisted address or
  network, or when the hostname is allowlisted **and** the address is not link-local; so an
  allowlisted hostname that resolves into ``169.254.0.0/16`` is still refused unless the
  address or its network is allowlisted too.
- Cloud metadata addresses (``169.254.169.254``, ``fd00:ec2::254``, ...) are refused unless that
  exact address is allowlisted; a network entry such as ``169.254.0.0/16`` does not open them.

DNS rebinding: ``AddressPolicy.resolve`` is what the transport calls **at connect time**, and the
socket is connected to exactly the addresses it returned (see ``transport``), so an answer that
changes between a check and the connection cannot slip through.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from models_hub.errors import ModelAddressRefused, ModelUnreachable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# ``resolver(hostname, port)`` returns the address strings the hostname resolves to.
Resolver = Callable[[str, int], Sequence[str]]

ALLOWED_SCHEMES = ("http", "https")
METADATA_HOSTNAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
    }
)
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(address)
    for address in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.123",  # AWS time sync
        "100.100.100.200",  # Alibaba Cloud
        "fd00:ec2::254",  # AWS IMDS over IPv6
    )
)
# Shared address space (carrier-grade NAT) is neither private nor global in ``ipaddress``.
SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")


def default_resolver(hostname: str, port: int) -> list[str]:
    """Resolve ``hostname`` with ``socket.getaddrinfo`` and return unique address strings."""
    infos = socket.getaddrinfo(hostname, port, type=socket.SOCK_STREAM)
    addresses: list[str] = []
    for _family, _type, _proto, _canonical, sockaddr in infos:
        address = str(sockaddr[0]).split("%", 1)[0]  # drop an IPv6 zone id
        if address not in addresses:
            addresses.append(address)
    return addresses


def normalise_hostname(hostname: str) -> str:
    """Return ``hostname`` lower-cased, without brackets or a trailing dot."""
    return hostname.strip("[]").rstrip(".").lower()


def unmap(address: IPAddress) -> IPAddress:
    """Return the IPv4 address inside an IPv4-mapped IPv6 address, else ``address``."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_public(address: IPAddress) -> bool:
    """Return True when ``address`` is a globally routable unicast address."""
    address = unmap(address)
    if address in SHARED_ADDRESS_SPACE:
        return False
    return address.is_global and not (
        address.is_multicast
        or address.is_reserved
        or address.is_loopback
        or address.is_link_local
        or address.is_unspecified
        or address.is_private
        or (isinstance(address, ipaddress.IPv6Address) and address.is_site_local)
    )


@dataclass(frozen=True)
class Allowlist:
    """Parsed ``MODELS_HUB_ALLOWED_HOSTS``: hostnames, addresses and networks."""

    hostnames: frozenset[str] = frozenset()
    addresses: frozenset[IPAddress] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, entries: Sequence[str]) -> Allowlist:
        """Parse allowlist entries; raise ``ValueError`` naming an entry that is none of them."""
        hostnames: set[str] = set()
        addresses: set[IPAddress] = set()
        networks: list[IPNetwork] = []
        for raw_entry in entries:
            entry = normalise_hostname(str(raw_entry).strip())
            if not entry:
                continue
            if "/" in entry:
                try:
                    networks.append(ipaddress.ip_network(entry, strict=False))
                except ValueError:
                    raise ValueError(f"allowlist entry {raw_entry!r} is not a valid network")
                continue
            try:
                addresses.add(unmap(ipaddress.ip_address(entry)))
            except ValueError:
                hostnames.add(entry)
        return cls(frozenset(hostnames), frozenset(addresses), tuple(networks))

    def permits_address(self, address: IPAddress) -> bool:
        """Return True when ``address`` is an allowlisted address or inside a network."""
        return address in self.addresses or any(
            address.version == network.version and address in network for network in self.networks
        )


@dataclass(frozen=True)
class AddressPolicy:
    """The SSRF policy of one process: an allowlist plus an (injectable) resolver."""

    allowlist: Allowlist = field(default_factory=Allowlist)
    resolver: Resolver = default_resolver

    @classmethod
    def build(cls, allowed_hosts: Sequence[str], resolver: Resolver | None = None) -> AddressPolicy:
        """Build a policy from allowlist entries and an optional resolver."""
        return cls(Allowlist.parse(allowed_hosts), resolver or default_resolver)

    def check_url_static(self, url: str) -> tuple[str, int]:
        """Check everything but resolution; return the normalised ``(hostname, port)``."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise ModelAddressRefused("model URL is not a valid URL")
        if parts.scheme.lower() not in ALLOWED_SCHEMES:
            raise ModelAddressRefused("model URL must use http or https")
        if parts.username is not None or parts.password is not None:
            raise ModelAddressRefused("model URL must not contain credentials")
        hostname = normalise_hostname(parts.hostname or "")
        if not hostname:
            raise ModelAddressRefused("model URL has no host")
        if hostname in METADATA_HOSTNAMES and hostname not in self.allowlist.hostnames:
            raise ModelAddressRefused(f"host {hostname} is a cloud metadata service")
        if port is None:
            port = 443 if parts.scheme.lower() == "https" else 80
        return hostname, port

    def check_address(self, hostname: str, address: IPAddress) -> None:
        """Refuse ``address`` (resolved from ``hostname``) unless the policy permits it."""
        plain = unmap(address)
        if plain in METADATA_ADDRESSES:
            if plain not in self.allowlist.addresses:
                raise ModelAddressRefused(
                    f"host {hostname} resolves to the cloud metadata address {plain}"
                )
            return
        if is_public(plain):
            return
        if self.allowlist.permits_address(plain):
            return
        hostname_allowed = normalise_hostname(hostname) in self.allowlist.hostnames
        if hostname_allowed and not plain.is_link_local:
            return
        raise ModelAddressRefused(
            f"host {hostname} resolves to the non-public address {plain}; "
            "add it to MODELS_HUB_ALLOWED_HOSTS to allow it"
        )

    def resolve(self, hostname: str, port: int) -> list[IPAddress]:
        """Resolve ``hostname``, check every address and return them all (in resolver order).

        Raises ``ModelAddressRefused`` if any address is refused, and ``OSError`` (from the
        resolver) when the name does not resolve.
        """
        hostname = normalise_hostname(hostname)
        try:
            addresses = [ipaddress.ip_address(hostname)]
        except ValueError:
            addresses = [ipaddress.ip_address(item) for item in self.resolver(hostname, port)]
        if not addresses:
            raise socket.gaierror(f"{hostname} resolved to no address")
        for address in addresses:
            self.check_address(hostname, address)
        return addresses

    def check_url(self, url: str) -> list[IPAddress]:
        """Check ``url`` completely, resolving it; return the checked addresses."""
        hostname, port = self.check_url_static(url)
        try:
            return self.resolve(hostname, port)
        except OSError:
            raise ModelUnreachable(f"host {hostname} does not resolve")


def check_url(url: str, allowed_hosts: Sequence[str], resolver: Resolver | None = None) -> None:
    """Raise ``ModelAddressRefused`` unless ``url`` may be called under ``allowed_hosts``.

    A hostname that does not resolve raises ``ModelUnreachable``.

    For validating a registration form; the transport re-checks at connect time.
    """
    AddressPolicy.build(allowed_hosts, resolver).check_url(url)
