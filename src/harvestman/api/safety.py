"""Network safety for URLs submitted over the API.

A URL is refused when its host is, or resolves to, a private, loopback, link-local,
multicast, reserved or unspecified address, unless the address (or the host name) is in the
allow-list (``ApiSettings.allow_networks``: CIDRs or host names). A host that does not resolve
is accepted: the crawl records the failure, and nothing private is reached.

Resolution is checked when the URL is submitted; the fetcher resolves again when it fetches,
so a name re-pointed in between (DNS rebinding) is not caught here.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from harvestman.api.errors import ApiError

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class UrlGuard:
    """Refuses URLs that would make the service reach private networks."""

    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.networks: list[IpNetwork] = []
        self.hosts: set[str] = set()
        for entry in allow:
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.hosts.add(entry.lower().rstrip("."))

    def is_allowed_address(self, address: IpAddress) -> bool:
        if any(address in network for network in self.networks):
            return True
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return address.is_global and not address.is_multicast

    async def check(self, url: str, field: str = "url") -> None:
        """ApiError 422 when ``url`` is not http(s) or reaches a refused address."""
        try:
            parts = urlsplit(url)
            host = parts.hostname
        except ValueError:
            host = None
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not host:
            raise _refused(field, url, "only http and https URLs with a host are accepted")
        host = host.lower().rstrip(".")
        if host in self.hosts:
            return
        for address in await _addresses(host):
            if not self.is_allowed_address(address):
                raise _refused(field, url, f"{host} resolves to a non-public address {address}")

    async def check_all(self, urls: Iterable[str], field: str = "urls") -> None:
        for url in urls:
            await self.check(url, field)


def _refused(field: str, url: str, reason: str) -> ApiError:
    return ApiError(
        422,
        f"{field}: URL refused: {reason}",
        code="url_refused",
        details={"field": field, "url": url[:300], "reason": reason},
    )


async def _addresses(host: str) -> list[IpAddress]:
    try:
        return [ipaddress.ip_address(host.strip("[]").split("%")[0])]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, None, type=socket.SOCK_STREAM), timeout=5.0
        )
    except (OSError, TimeoutError, UnicodeError):
        return []
    found = []
    for info in infos:
        try:
            found.append(ipaddress.ip_address(str(info[4][0]).split("%")[0]))
        except ValueError:
            continue
    return found
