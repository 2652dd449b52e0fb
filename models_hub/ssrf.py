"""SSRF guard for model endpoint URLs (pure: settings come in as arguments).

Contract:

- Only ``http`` and ``https`` URLs with a hostname and without credentials (``user:pass@``)
  are accepted.
- A known cloud metadata hostname (``metadata.google.internal``, ...) is refused unless that
  hostname is on the allowlist; its addresses are then still checked as below.
- A host written as an address is read the way the system's resolver would read it, without
  asking DNS: IPv4 in the legacy ``inet_aton`` forms too (``2130706433``, ``0177.0.0.1``,
  ``0x7f.1``, ``127.1``), IPv6 with its zone id dropped (``fe80::1%25eth0``), full-width digits
  and dots after IDNA mapping. A host whose last label is a number but which is no valid IPv4
  address is refused.
- Otherwise the hostname is resolved and the URL is refused if **any** resolved address is
  non-public: loopback, private, link-local (``169.254.0.0/16``, ``fe80::/10``), unspecified,
  multicast, reserved, shared (``100.64.0.0/10``) or site-local. Public addresses are always
  accepted.
- An IPv6 address that carries an IPv4 address is judged by that IPv4 address alone, as if it
  had been resolved to it: IPv4-mapped (``::ffff:a.b.c.d``), IPv4-compatible (``::a.b.c.d``,
  except ``::`` and ``::1``), 6to4 (``2002::/16``), NAT64 (``64:ff9b::/96``, last 32 bits),
  and Teredo (``2001::/32``), judged by both its server and its client address. An address in
  the local-use NAT64 prefix ``64:ff9b:1::/48`` is judged by its last 32 bits **and** as the
  non-public IPv6 address it is, since where the operator put the IPv4 address is not known.
- The allowlist (``MODELS_HUB_ALLOWED_HOSTS``) holds hostnames, IP addresses and CIDR networks.
  A non-public address is accepted when the address is inside an allowlisted address or
  network, or when the hostname is allowlisted **and** the address is not link-local; so an
  allowlisted hostname that resolves into ``169.254.0.0/16`` is still refused unless the
  address or its network is allowlisted too. For an address that carries an IPv4 address, the
  allowlist is matched against that IPv4 address.
- Cloud metadata addresses (``169.254.169.254``, ``fd00:ec2::254``, ...) are refused unless that
  exact address is allowlisted; a network entry such as ``169.254.0.0/16`` does not open them.
  Carried inside an IPv6 address, they are refused the same way.

DNS rebinding: ``AddressPolicy.resolve`` is what the transport calls **at connect time**, and the
socket is connected to exactly the addresses it returned (see ``transport``), so an answer that
changes between a check and the connection cannot slip through. Registration (the site's form
and the API, through ``models_hub.services.model_check_endpoint``) calls the same ``resolve``,
so a literal host and a resolved name get one judgement.
"""

from __future__ import annotations

import ipaddress
import socket
import string
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
# IPv6 prefixes whose addresses carry an IPv4 address (``ipaddress`` knows 6to4, Teredo and the
# IPv4-mapped range itself, through ``sixtofour``, ``teredo`` and ``ipv4_mapped``).
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
# RFC 8215: each operator picks a prefix of its own inside it, up to a /96, so where the IPv4
# address sits is not known from outside; the range is not globally reachable either way.
NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
IPV6_SPECIAL = frozenset({ipaddress.IPv6Address("::"), ipaddress.IPv6Address("::1")})
NON_PUBLIC_NETWORKS = (SHARED_ADDRESS_SPACE, NAT64_LOCAL_USE)


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


def _ipv4_number(part: str) -> int | None:
    """Return the value of one ``inet_aton`` part (decimal, ``0x`` hex, ``0`` octal) or None."""
    if not part.isascii():
        return None
    if part.startswith("0x"):
        digits, base = part[2:], 16
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    if not digits:
        return 0 if base == 16 else None
    try:
        return int(digits, base) if digits.isalnum() else None
    except ValueError:
        return None


def _ends_in_a_number(hostname: str) -> bool:
    """Return True when the last label of ``hostname`` is written as a number."""
    last = hostname.rsplit(".", 1)[-1]
    if not last.isascii():
        return False
    if last.startswith("0x"):
        return all(character in string.hexdigits for character in last[2:])
    return last.isdigit()


def parse_ipv4_legacy(hostname: str) -> ipaddress.IPv4Address | None:
    """Return the IPv4 address that ``inet_aton`` reads in ``hostname``, or None.

    One to four parts, each decimal, hexadecimal (``0x7f``) or octal (``0177``); the last part
    fills the bytes that remain: ``127.1`` is ``127.0.0.1``, ``2130706433`` is ``127.0.0.1``.
    """
    parts = hostname.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers: list[int] = []
    for part in parts:
        number = _ipv4_number(part)
        if number is None:
            return None
        numbers.append(number)
    *leading, last = numbers
    if any(number > 255 for number in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for position, number in enumerate(leading):
        value += number << (24 - 8 * position)
    return ipaddress.IPv4Address(value)


def parse_literal(hostname: str) -> IPAddress | None:
    """Return the address written as ``hostname`` (normalised), or None for a name.

    Reads what the system's resolver would read as an address, without asking DNS: IPv6 with
    or without a zone id (dropped), IPv4 in every ``inet_aton`` form, and full-width digits and
    dots after the same IDNA mapping that ``socket`` applies. Raises ``ModelAddressRefused``
    for a host that ends in a number but is no valid IPv4 address, and for a zone id on
    anything but IPv6.
    """
    if not hostname.isascii():
        try:
            hostname = hostname.encode("idna").decode("ascii").lower()
        except UnicodeError:
            return None
    address_part, zone_sign, _zone = hostname.partition("%")
    try:
        address = ipaddress.ip_address(address_part)
    except ValueError:
        address = None
    if zone_sign:
        if not isinstance(address, ipaddress.IPv6Address):
            raise ModelAddressRefused(f"host {hostname} has a zone id but is no IPv6 address")
        return address
    if address is not None or not _ends_in_a_number(hostname):
        return address
    legacy = parse_ipv4_legacy(hostname)
    if legacy is None:
        raise ModelAddressRefused(f"host {hostname} ends in a number but is no valid IPv4 address")
    return legacy


def unmap(address: IPAddress) -> IPAddress:
    """Return the IPv4 address inside an IPv4-mapped IPv6 address, else ``address``."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def embedded_ipv4(address: IPAddress) -> tuple[tuple[str, ipaddress.IPv4Address], ...]:
    """Return the IPv4 addresses that IPv6 ``address`` carries, each with its encoding's name.

    Empty for an IPv4 address and for IPv6 addresses that carry none. Teredo carries two: the
    server's address and the client's (stored inverted, which ``ipaddress`` undoes).
    """
    if not isinstance(address, ipaddress.IPv6Address):
        return ()
    if address.ipv4_mapped is not None:
        return (("IPv4-mapped", address.ipv4_mapped),)
    if address.sixtofour is not None:
        return (("6to4", address.sixtofour),)
    if address.teredo is not None:
        server, client = address.teredo
        return (("Teredo server", server), ("Teredo client", client))
    last_32_bits = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in NAT64_WELL_KNOWN:
        return (("NAT64", last_32_bits),)
    if address in NAT64_LOCAL_USE:
        return (("local-use NAT64, last 32 bits", last_32_bits),)
    if address in IPV4_COMPATIBLE and address not in IPV6_SPECIAL:
        return (("IPv4-compatible", last_32_bits),)
    return ()


def judged_addresses(address: IPAddress) -> tuple[tuple[str, IPAddress], ...]:
    """Return what ``address`` is judged by: ``(encoding, address)`` pairs, all must pass.

    The carried IPv4 addresses stand in for an address that carries some; the address itself
    is judged too when nothing is carried, and in the local-use NAT64 prefix, where the IPv4
    address may sit elsewhere than the last 32 bits. The encoding is "" for the address itself.
    """
    carried: tuple[tuple[str, IPAddress], ...] = embedded_ipv4(address)
    if not carried or address in NAT64_LOCAL_USE:
        carried = (*carried, ("", address))
    return carried


def _is_public_itself(address: IPAddress) -> bool:
    if any(address in network for network in NON_PUBLIC_NETWORKS):
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


def is_public(address: IPAddress) -> bool:
    """Return True when ``address``, judged as ``judged_addresses`` says, is globally routable."""
    return all(_is_public_itself(judged) for _encoding, judged in judged_addresses(address))


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
        """Refuse ``address`` (resolved from ``hostname``) unless the policy permits it.

        Judges every address of ``judged_addresses``: for one that carries IPv4 addresses,
        those IPv4 addresses, each exactly as if ``hostname`` had resolved to it. The message
        names the address that is refused.
        """
        for encoding, judged in judged_addresses(address):
            if self.permits(hostname, judged):
                continue
            if judged in METADATA_ADDRESSES:
                what, advice = f"the cloud metadata address {judged}", ""
            else:
                what = f"the non-public address {judged}"
                advice = "; add it to MODELS_HUB_ALLOWED_HOSTS to allow it"
            if not encoding:
                raise ModelAddressRefused(f"host {hostname} resolves to {what}{advice}")
            subject = f"host {hostname}"
            if hostname != str(address):
                subject += f" resolves to {address}, which"
            raise ModelAddressRefused(f"{subject} embeds {what} ({encoding}){advice}")

    def permits(self, hostname: str, address: IPAddress) -> bool:
        """Return True when ``address`` itself (nothing it carries) may be reached for
        ``hostname``."""
        if address in METADATA_ADDRESSES:
            return address in self.allowlist.addresses
        if _is_public_itself(address) or self.allowlist.permits_address(address):
            return True
        hostname_allowed = normalise_hostname(hostname) in self.allowlist.hostnames
        return hostname_allowed and not address.is_link_local

    def resolve(self, hostname: str, port: int) -> list[IPAddress]:
        """Resolve ``hostname``, check every address and return them all (in resolver order).

        A host written as an address (``parse_literal``) is not sent to the resolver. Raises
        ``ModelAddressRefused`` if any address is refused, and ``OSError`` (from the resolver)
        when the name does not resolve.
        """
        hostname = normalise_hostname(hostname)
        literal = parse_literal(hostname)
        if literal is not None:
            addresses = [literal]
        else:
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
        except (OSError, UnicodeError):
            raise ModelUnreachable(f"host {hostname} does not resolve")


def check_url(url: str, allowed_hosts: Sequence[str], resolver: Resolver | None = None) -> None:
    """Raise ``ModelAddressRefused`` unless ``url`` may be called under ``allowed_hosts``.

    A hostname that does not resolve raises ``ModelUnreachable``.

    For validating a registration form; the transport re-checks at connect time.
    """
    AddressPolicy.build(allowed_hosts, resolver).check_url(url)
