"""Which IP addresses are public: IANA's special-purpose address registries, as data.

The guard (:mod:`harvestman.guard`) asks :func:`is_public` about an address nothing else allows.
Python's ``ipaddress.is_global`` is not the reference: its tables change between patch releases
(3.11.7 calls ``fec0::1``, ``::7f00:1``, ``64:ff9b::7f00:1`` and ``5f00::1`` global), and it
does not look inside an IPv6 address for the IPv4 address it stands for. So the registries are
written out here, each block named, and checked by ``tests/test_guard.py`` one block at a time:

- IPv4: an address is public unless the most specific special-purpose block holding it is not
  globally reachable (the registry's own exceptions, such as 192.0.0.9/32 inside 192.0.0.0/24,
  are public), and it is not multicast.
- IPv6 that carries an IPv4 address — IPv4-mapped ``::ffff:0:0/96``, IPv4-translated (SIIT)
  ``::ffff:0:0:0/96``, IPv4-compatible ``::/96``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``
  and Teredo ``2001::/32`` (server and client) — is judged by the IPv4 address(es) it carries:
  :func:`embedded_ipv4` gives them and the guard applies its whole IPv4 rule to each.
  ``64:ff9b:1::/48`` (local-use NAT64) places the IPv4 address where the local prefix length
  says, which cannot be known from outside: it is not public, as the registry says.
- other IPv6: public only inside ``2000::/3`` (the only space IANA hands out as global unicast:
  this keeps out site-local ``fec0::/10``, SRv6 ``5f00::/16``, multicast and whatever IANA
  reserves next) and outside every block the registry marks not globally reachable.

>>> [is_public(ipaddress.ip_address(a)) for a in ("93.184.216.34", "192.0.0.9", "192.0.0.8",
...  "2606:4700::1", "3fff::1", "fec0::1")]
[True, True, False, True, False, False]
>>> embedded_ipv4(ipaddress.IPv6Address("64:ff9b::a9fe:a9fe"))
(IPv4Address('169.254.169.254'),)
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

__all__ = [
    "EMBEDDING_BLOCKS",
    "IPV4_SPECIAL",
    "IPV6_SPECIAL",
    "Block",
    "embedded_ipv4",
    "is_public",
    "special_block",
]

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class Block:
    """One special-purpose block: its network, its registry name and whether it is reachable
    from the public internet ("Globally Reachable" in the registry)."""

    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    name: str
    reachable: bool = False


def _block(cidr: str, name: str, reachable: bool = False) -> Block:
    return Block(ipaddress.ip_network(cidr), name, reachable)


# IANA IPv4 Special-Purpose Address Registry (RFC 6890 and its updates), plus multicast.
IPV4_SPECIAL: tuple[Block, ...] = (
    _block("0.0.0.0/8", '"this network"'),
    _block("0.0.0.0/32", '"this host on this network"'),
    _block("10.0.0.0/8", "private-use"),
    _block("100.64.0.0/10", "shared address space (CGN)"),
    _block("127.0.0.0/8", "loopback"),
    _block("169.254.0.0/16", "link-local"),
    _block("172.16.0.0/12", "private-use"),
    _block("192.0.0.0/24", "IETF protocol assignments"),
    _block("192.0.0.0/29", "IPv4 service continuity (DS-Lite)"),
    _block("192.0.0.8/32", "IPv4 dummy address"),
    _block("192.0.0.9/32", "Port Control Protocol anycast", reachable=True),
    _block("192.0.0.10/32", "TURN anycast", reachable=True),
    _block("192.0.0.170/32", "NAT64/DNS64 discovery"),
    _block("192.0.0.171/32", "NAT64/DNS64 discovery"),
    _block("192.0.2.0/24", "documentation (TEST-NET-1)"),
    _block("192.31.196.0/24", "AS112-v4", reachable=True),
    _block("192.52.193.0/24", "AMT", reachable=True),
    _block("192.88.99.0/24", "deprecated 6to4 relay anycast"),
    _block("192.88.99.2/32", "6a44 relay anycast"),
    _block("192.168.0.0/16", "private-use"),
    _block("192.175.48.0/24", "direct delegation AS112 service", reachable=True),
    _block("198.18.0.0/15", "benchmarking"),
    _block("198.51.100.0/24", "documentation (TEST-NET-2)"),
    _block("203.0.113.0/24", "documentation (TEST-NET-3)"),
    _block("224.0.0.0/4", "multicast"),
    _block("240.0.0.0/4", "reserved"),
    _block("255.255.255.255/32", "limited broadcast"),
)

# IANA IPv6 Special-Purpose Address Registry, plus the deprecated blocks still routed by some
# stacks (site-local, IPv4-compatible, SIIT) and multicast. The embedding blocks are judged by
# the IPv4 they carry (EMBEDDING_BLOCKS), not by their row here.
IPV6_SPECIAL: tuple[Block, ...] = (
    _block("::/128", "unspecified"),
    _block("::1/128", "loopback"),
    _block("::/96", "IPv4-compatible (deprecated)"),
    _block("::ffff:0:0/96", "IPv4-mapped"),
    _block("::ffff:0:0:0/96", "IPv4-translated (SIIT)"),
    _block("64:ff9b::/96", "IPv4/IPv6 translation (NAT64)"),
    _block("64:ff9b:1::/48", "local-use IPv4/IPv6 translation"),
    _block("100::/64", "discard-only"),
    _block("100:0:0:1::/64", "dummy IPv6 prefix"),
    _block("2001::/23", "IETF protocol assignments"),
    _block("2001::/32", "Teredo"),
    _block("2001:1::1/128", "Port Control Protocol anycast", reachable=True),
    _block("2001:1::2/128", "TURN anycast", reachable=True),
    _block("2001:1::3/128", "DNS-SD service registration protocol anycast", reachable=True),
    _block("2001:2::/48", "benchmarking"),
    _block("2001:3::/32", "AMT", reachable=True),
    _block("2001:4:112::/48", "AS112-v6", reachable=True),
    _block("2001:10::/28", "deprecated ORCHID"),
    _block("2001:20::/28", "ORCHIDv2", reachable=True),
    _block("2001:30::/28", "drone remote ID entity tags", reachable=True),
    _block("2001:db8::/32", "documentation"),
    _block("2002::/16", "6to4"),
    _block("2620:4f:8000::/48", "direct delegation AS112 service", reachable=True),
    _block("3fff::/20", "documentation"),
    _block("5f00::/16", "segment routing (SRv6) SIDs"),
    _block("fc00::/7", "unique-local"),
    _block("fe80::/10", "link-local unicast"),
    _block("fec0::/10", "site-local (deprecated)"),
    _block("ff00::/8", "multicast"),
)

# The blocks whose addresses stand for an IPv4 address (they do not overlap).
EMBEDDING_BLOCKS: tuple[Block, ...] = tuple(
    b
    for b in IPV6_SPECIAL
    if str(b.network)
    in ("::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96", "2002::/16", "2001::/32", "::/96")
)

_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_NOT_COMPATIBLE = frozenset({ipaddress.IPv6Address("::"), ipaddress.IPv6Address("::1")})


def special_block(address: IpAddress) -> Block | None:
    """The most specific special-purpose block holding ``address`` (None: an ordinary one).

    >>> special_block(ipaddress.ip_address("192.0.0.9")).name
    'Port Control Protocol anycast'
    """
    table = IPV4_SPECIAL if address.version == 4 else IPV6_SPECIAL
    found: Block | None = None
    for block in table:
        if address in block.network and (
            found is None or block.network.prefixlen > found.network.prefixlen
        ):
            found = block
    return found


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...] | None:
    """The IPv4 address(es) ``address`` stands for, or None when it carries none.

    Teredo gives two, the relay server's and the client's (de-obfuscated): traffic reaches both.

    >>> embedded_ipv4(ipaddress.IPv6Address("2002:7f00:1::1"))
    (IPv4Address('127.0.0.1'),)
    >>> embedded_ipv4(ipaddress.IPv6Address("2606:4700::1")) is None
    True
    """
    if address in _NOT_COMPATIBLE:
        return None  # loopback and unspecified, not IPv4-compatible forms of 0.0.0.x
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    for block in EMBEDDING_BLOCKS:
        if address not in block.network:
            continue
        if block.network.prefixlen == 96:
            return (low32,)
        if address.sixtofour is not None:
            return (address.sixtofour,)
        if address.teredo is not None:
            return address.teredo
    return None


def is_public(address: IpAddress) -> bool:
    """Whether ``address`` is reachable from the public internet by the registries (an
    IPv6 address that carries an IPv4 address is not: judge :func:`embedded_ipv4` instead)."""
    block = special_block(address)
    if block is not None:
        return block.reachable
    return address.version == 4 or address in _GLOBAL_UNICAST
