"""The browser's egress proxy on its own: plain requests and CONNECT tunnels pass the network
guard, anything else is refused with its reason, and the target is the address checked."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections import Counter
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from harvestman.egress import REFUSED_HEADER, EgressProxy
from harvestman.guard import NetworkGuard


class Target:
    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.port = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.hits[request.path] += 1
        if request.path == "/chunked":
            response = web.StreamResponse()
            response.enable_chunked_encoding()
            await response.prepare(request)
            for part in (b"one ", b"two ", b"three"):
                await response.write(part)
            await response.write_eof()
            return response
        body = await request.read()
        text = f"{request.method} {request.path_qs} {request.headers.get('Host')} {body!r}"
        hop = request.headers.get("Proxy-Authorization", "-")
        return web.Response(text=f"{text} proxy-auth={hop}")


@contextlib.asynccontextmanager
async def serve_all_methods(target: Target) -> AsyncIterator[None]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", target.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    target.port = runner.addresses[0][1]
    try:
        yield
    finally:
        await runner.cleanup()


@pytest.fixture
async def sites() -> AsyncIterator[tuple[Target, Target]]:
    """An admitted target and an internal one on another port."""
    allowed, internal = Target(), Target()
    async with serve_all_methods(allowed), serve_all_methods(internal):
        yield allowed, internal


@pytest.fixture
async def proxy(sites: tuple[Target, Target]) -> AsyncIterator[EgressProxy]:
    guard = NetworkGuard()
    guard.admit(ipaddress.ip_address("127.0.0.1"), sites[0].port)
    async with EgressProxy(guard, timeout=5.0) as running:
        yield running


async def test_plain_requests_to_an_allowed_origin_are_forwarded(
    proxy: EgressProxy, sites: tuple[Target, Target]
) -> None:
    allowed, internal = sites
    base = f"http://127.0.0.1:{allowed.port}"
    async with aiohttp.ClientSession() as client:  # keeps the proxy connection alive
        async with client.get(f"{base}/a?b=1", proxy=proxy.url) as got:
            first = (got.status, await got.text())
        async with client.post(f"{base}/p", data=b"x" * 10, proxy=proxy.url) as got:
            second = await got.text()
        async with client.get(f"{base}/chunked", proxy=proxy.url) as got:
            third = await got.text()
        async with client.get(f"http://127.0.0.1:{internal.port}/secret", proxy=proxy.url) as got:
            refused = (got.status, got.headers.get(REFUSED_HEADER))
    assert first == (200, f"GET /a?b=1 127.0.0.1:{allowed.port} b'' proxy-auth=-")
    assert second.startswith(f"POST /p 127.0.0.1:{allowed.port} b'xxxxxxxxxx'")
    assert third == "one two three"
    assert refused[0] == 403
    assert refused[1] == (
        f"127.0.0.1 port {internal.port} is a non-public address outside the network allow-list"
        f" (network_allow: '127.0.0.1:{internal.port}' admits it)"
    )
    assert dict(internal.hits) == {}
    assert proxy.counts == Counter({"allowed": 3, "refused": 1})


async def raw(proxy: EgressProxy, head: bytes) -> bytes:
    """Send ``head`` to the proxy and read what it answers until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(head)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()


async def test_a_tunnel_is_opened_to_an_allowed_origin_only(
    proxy: EgressProxy, sites: tuple[Target, Target]
) -> None:
    allowed, internal = sites
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    authority = f"127.0.0.1:{allowed.port}".encode()
    writer.write(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority))
    writer.write(b"GET /in HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")  # sent early
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 200 \r\n\r\nHTTP/1.1 200 OK")
    assert answer.endswith(b"GET /in x b'' proxy-auth=-")
    refused = await raw(proxy, b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n" % internal.port)
    assert refused.startswith(b"HTTP/1.1 403 ")
    assert dict(allowed.hits) == {"/in": 1}
    assert dict(internal.hits) == {}


@pytest.mark.parametrize(
    ("head", "reason"),
    [
        (b"GET ftp://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n", b"not an absolute http://"),
        (b"GET /origin-form HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b"not an absolute http://"),
        (b"GET ws://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n", b"not an absolute http://"),
        (b"GET http://%31%32%37.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n", b"non-public"),
        (b"GET http://0x7f.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n", b"non-public"),
        (b"GET http://[::ffff:0:7f00:1]:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n", b"non-public"),
        (b"CONNECT localhost:{port} HTTP/1.1\r\nHost: x\r\n\r\n", b"non-public"),
        (b"CONNECT [64:ff9b::7f00:1]:{port} HTTP/1.1\r\nHost: x\r\n\r\n", b"NAT64"),
        (b"CONNECT 127.0.0.1 HTTP/1.1\r\nHost: x\r\n\r\n", b"not host:port"),
        (b"CONNECT nowhere.invalid:80 HTTP/1.1\r\nHost: x\r\n\r\n", b"nowhere.invalid port 80"),
    ],
)
async def test_what_is_not_an_allowed_http_target_is_refused_with_a_reason(
    proxy: EgressProxy, sites: tuple[Target, Target], head: bytes, reason: bytes
) -> None:
    internal = sites[1]
    answer = await raw(proxy, head.replace(b"{port}", str(internal.port).encode()))
    assert answer.startswith(b"HTTP/1.1 403 ")
    assert reason in answer.partition(b"\r\n\r\n")[2]
    assert dict(internal.hits) == {}
    assert proxy.counts == Counter({"refused": 1})


async def test_a_target_that_never_answers_holds_nothing_past_the_timeout() -> None:
    silent: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        silent.append(writer)  # accepts, reads nothing, answers nothing, never closes

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    guard = NetworkGuard([f"127.0.0.1:{port}"])
    try:
        async with EgressProxy(guard, timeout=0.2) as proxy:
            plain = b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n\r\n" % port
            tunnel = b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n" % port
            assert await raw(proxy, plain) == b""  # closed: no answer came
            assert await raw(proxy, tunnel) == b"HTTP/1.1 200 \r\n\r\n"  # then closed
    finally:
        for writer in silent:
            writer.close()
        server.close()
        await server.wait_closed()
    assert len(silent) == 2
