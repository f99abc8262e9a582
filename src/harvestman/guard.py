"""The network guard: which (address, port) a fetch may connect to.

Every connection the crawler or the API opens on a user's behalf is checked here, after DNS
resolution, against the address actually connected to (aiohttp connects to what its resolver
returned, so a name re-pointed after the check — DNS rebinding — cannot swap the address):

- a public address is allowed (IANA's special-purpose registries, written out in
  :mod:`harvestman.addresses`; an IPv6 address that carries an IPv4 address — mapped, NAT64,
  6to4, Teredo, … — is judged by the IPv4 address it carries);
- an address inside an allow-list network (``network_allow``: CIDRs) is allowed, and so is
  every address of an allow-list host name;
- an admitted origin ``(address, port)`` is allowed: a crawl admits the origins of its own
  seeds (what a person asked for on purpose), never the whole address, so a seed on
  127.0.0.1:8089 that links or redirects to 127.0.0.1:6379 does not reach 6379 (an IP-literal
  or ``localhost`` seed; a DNS name is admitted by the allow-list, see :meth:`admit_url`);
- anything else (loopback, private, link-local, reserved, unspecified, multicast, documentation,
  and the IPv6 forms that carry one of those) is refused with
  :class:`~harvestman.errors.AddressRefused`.

>>> import ipaddress
>>> guard = NetworkGuard(["10.1.0.0/16"])
>>> guard.admit(ipaddress.ip_address("127.0.0.1"), 8089)
>>> [guard.is_allowed(ipaddress.ip_address(a), p) for a, p in
...  [("93.184.216.34", 80), ("10.1.2.3", 22), ("127.0.0.1", 8089), ("127.0.0.1", 6379),
...   ("::ffff:127.0.0.1", 6379), ("169.254.169.254", 80)]]
[True, True, True, False, False, False]

:class:`GuardedResolver` is the aiohttp resolver that applies the guard to names; aiohttp does
not resolve IP literals, so the fetcher checks those itself (:meth:`NetworkGuard.check_host`)
before each hop. :meth:`NetworkGuard.check_url` resolves and checks a URL ahead of time, for
callers that cannot hook the connection (the API at submission, proxied fetches, the browser);
those checks are not proof against rebinding, and say so where they are used.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from yarl import URL

from harvestman.addresses import embedded_ipv4, is_public, special_block
from harvestman.errors import AddressRefused

__all__ = ["GuardedResolver", "IpAddress", "NetworkGuard", "allow_entry", "parse_address"]

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# A name that does not answer within this is treated as not resolving (the fetch records it).
_RESOLVE_TIMEOUT = 5.0
# check_host's remembered answers; a crawl of many hosts starts over past this many.
_MAX_LITERAL_VERDICTS = 4096


def parse_address(text: str) -> IpAddress | None:
    """The IP address written in ``text`` (brackets and zone id ignored), or None for a name.

    >>> parse_address("[::1]"), parse_address("example.org")
    (IPv6Address('::1'), None)
    """
    try:
        return ipaddress.ip_address(text.strip("[]").split("%")[0])
    except ValueError:
        return None


class NetworkGuard:
    """The allow-list and the admitted origins; one instance per crawl (or per API process).

    ``allow`` holds CIDRs (``127.0.0.0/8``, ``fd00::/8``), origins (``127.0.0.1:8089``,
    ``[::1]:8089``: that address and port only) or host names (``intranet.local``); an entry
    that is neither a network nor an origin is taken as a host name. Origins are admitted with
    :meth:`admit` or :meth:`admit_url` while the crawl runs (its seeds can grow).
    """

    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.networks: list[IpNetwork] = []
        self.hosts: set[str] = set()
        self._origins: set[tuple[IpAddress, int]] = set()
        self._admitted_urls: set[tuple[str, int]] = set()
        # check_host's answers by (host, port): every request of a crawl of an IP-literal host
        # asks again, and parsing plus the address-class tests cost ~15 µs (3% of a page).
        self._literal_verdicts: dict[tuple[str, int], str | None] = {}
        for entry in allow:
            entry = entry.strip()
            if not entry:
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
            origin = _parse_origin(entry)
            if origin is not None:
                self.admit(*origin)
            else:
                self.hosts.add(entry.lower().rstrip("."))

    @property
    def origins(self) -> frozenset[tuple[IpAddress, int]]:
        """The admitted ``(address, port)`` pairs."""
        return frozenset(self._origins)

    def is_allowed(self, address: IpAddress, port: int) -> bool:
        """Whether a connection to ``address``:``port`` may be opened.

        An IPv6 address that carries an IPv4 address (mapped, NAT64, 6to4, Teredo, …: see
        :mod:`harvestman.addresses`) is allowed when the allow-list names it, or when every
        IPv4 address it carries is allowed by the same rule.
        """
        if (address, port) in self._origins:
            return True
        if any(address in network for network in self.networks):
            return True
        if isinstance(address, ipaddress.IPv6Address):
            carried = embedded_ipv4(address)
            if carried is not None:
                return all(self.is_allowed(inner, port) for inner in carried)
        return is_public(address)

    def is_allowed_host(self, host: str) -> bool:
        """Whether ``host`` is an allow-list host name (all its addresses are allowed)."""
        return host.lower().rstrip(".") in self.hosts

    def admit(self, address: IpAddress, port: int) -> None:
        """Allow ``address``:``port`` from now on (a seed's own origin)."""
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        self._origins.add((address, port))
        self._literal_verdicts.clear()

    async def admit_url(self, url: str) -> None:
        """Admit the origin of ``url``: its IP-literal host, or ``localhost``'s loopback
        addresses, with its port.

        Only what a person asked for on purpose is admitted this way (command-line seeds, the
        start URLs of a source the API accepted). A name resolved through DNS admits nothing:
        its answer at crawl start is the attacker's to choose (a public name submitted over
        the API, re-pointed at 127.0.0.1 before the crawl), so a private name is admitted by
        the allow-list (``network_allow = ["intranet.example"]``) instead. ``localhost`` and
        ``*.localhost`` never reach DNS (RFC 6761) and admit loopback addresses only.
        """
        target = _host_port(url)
        if target is None or target in self._admitted_urls:
            return
        host, port = target
        address = parse_address(host)
        if address is not None:
            self.admit(address, port)
        elif host == "localhost" or host.endswith(".localhost"):
            for found in await resolve_addresses(host):
                if found.is_loopback:
                    self.admit(found, port)
        self._admitted_urls.add(target)

    def check_host(self, host: str, port: int, url: str = "") -> None:
        """Raise AddressRefused when ``host`` is an IP literal the guard refuses (names: no-op;
        the resolver checks them)."""
        key = (host, port)
        try:
            refusal = self._literal_verdicts[key]
        except KeyError:
            address = parse_address(host)
            allowed = address is None or self.is_allowed(address, port)
            refusal = None if allowed or address is None else _refusal(host, address, port)
            if len(self._literal_verdicts) >= _MAX_LITERAL_VERDICTS:
                self._literal_verdicts.clear()
            self._literal_verdicts[key] = refusal
        if refusal is not None:
            raise AddressRefused(refusal, url, host=host)

    async def check_url(self, url: str, *, for_proxy: str | None = None) -> None:
        """Resolve ``url``'s host now and raise AddressRefused if any address is refused.

        Ahead of the connection, so not proof against DNS rebinding: the connection itself is
        guarded by :class:`GuardedResolver`. A host that does not resolve passes (the fetch
        records the failure), unless ``url`` is about to go to a proxy, which would resolve
        the name its own way: ``for_proxy`` (the URL as requested) says so, and then such a
        host is refused too, and refusals name ``for_proxy``.
        """
        target = _host_port(url)
        if target is None:
            if for_proxy is not None:
                raise AddressRefused(f"{url[:200]!r} has no host and port to check", for_proxy)
            return
        host, port = target
        if self.is_allowed_host(host):
            return
        found = await resolve_addresses(host)
        if not found and for_proxy is not None:
            why = f"{host} does not resolve here, so it is not sent to a proxy to resolve"
            raise AddressRefused(why, for_proxy, host=host)
        for address in found:
            if not self.is_allowed(address, port):
                raise AddressRefused(
                    _refusal(host, address, port),
                    for_proxy or url,
                    host=host,
                    reason=_reason(host, address, port),
                )

    def resolver(self) -> GuardedResolver:
        """A fresh aiohttp resolver applying this guard (one per connector)."""
        return GuardedResolver(self)


class GuardedResolver(AbstractResolver):
    """Resolves with aiohttp's default resolver, then keeps only the addresses the guard allows.

    The connector connects to the addresses returned here, so the checked address is the one
    connected to. When none is allowed, AddressRefused is raised (it is not an OSError, so
    aiohttp passes it through unwrapped and the fetcher records it as it is).
    """

    def __init__(self, guard: NetworkGuard, inner: AbstractResolver | None = None) -> None:
        self.guard = guard
        self._inner = inner if inner is not None else DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if self.guard.is_allowed_host(host):
            return results
        allowed: list[ResolveResult] = []
        refused: IpAddress | None = None
        for result in results:
            address = parse_address(result["host"])
            if address is None:
                continue
            if self.guard.is_allowed(address, port):
                allowed.append(result)
            else:
                refused = address
        if not allowed:
            detail = _refusal(host, refused, port) if refused is not None else f"{host}: no address"
            raise AddressRefused(detail, host=host)
        return allowed

    async def close(self) -> None:
        await self._inner.close()


async def resolve_addresses(host: str) -> list[IpAddress]:
    """Every address ``host`` resolves to (the address itself for an IP literal); [] when the
    name does not resolve."""
    address = parse_address(host)
    if address is not None:
        return [address]
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, None, type=socket.SOCK_STREAM), timeout=_RESOLVE_TIMEOUT
        )
    except (OSError, TimeoutError, ValueError):  # UnicodeError is a ValueError
        return []
    found: list[IpAddress] = []
    for info in infos:
        parsed = parse_address(str(info[4][0]))
        if parsed is not None and parsed not in found:
            found.append(parsed)
    return found


def _parse_origin(entry: str) -> tuple[IpAddress, int] | None:
    """``address:port`` (IPv6 in brackets) -> (address, port); None for anything else.

    >>> _parse_origin("127.0.0.1:8089"), _parse_origin("intranet.local")
    ((IPv4Address('127.0.0.1'), 8089), None)
    """
    host, sep, port = entry.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    if ":" in host and not host.startswith("["):
        return None  # a bare IPv6 address is a network, parsed before
    address = parse_address(host)
    return None if address is None else (address, int(port))


def _host_port(url: str) -> tuple[str, int] | None:
    try:
        parsed = URL(url)
        host, port = parsed.host, parsed.port
    except (ValueError, TypeError):
        return None
    if not host or port is None:
        return None
    return host.lower(), port


def allow_entry(host: str, port: int) -> str:
    """The ``network_allow`` entry that admits ``host``:``port`` and no more: the origin of an
    IP literal, else the host name (every address of a name in the list is allowed).

    >>> allow_entry("127.0.0.1", 19200), allow_entry("[::1]", 80), allow_entry("nas.lan", 80)
    ('127.0.0.1:19200', '[::1]:80', 'nas.lan')
    """
    address = parse_address(host)
    if address is None:
        return host
    return f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"


def _reason(host: str, address: IpAddress, port: int) -> str:
    where = host if str(address) == host.strip("[]") else f"{host} ({address})"
    carried = embedded_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else None
    if carried is not None:
        block = special_block(address)
        name = block.name if block is not None else "IPv6"
        where += f" ({name} of {', '.join(map(str, carried))})"
    return f"{where} port {port} is a non-public address outside the network allow-list"


def _refusal(host: str, address: IpAddress, port: int) -> str:
    """The reason and the setting that admits it, as a crawl records it."""
    return f"{_reason(host, address, port)} (network_allow: {allow_entry(host, port)!r} admits it)"
