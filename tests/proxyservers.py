"""Real proxies on 127.0.0.1 for the tests: an HTTP forward proxy and a SOCKS5 server.

Both are async context managers listening on port 0 (or a given port, so a test can stop a
proxy and bring it back on the same address) and count what passes through them::

    async with HttpProxy() as http_proxy, Socks5Server() as socks:
        ...  # http_proxy.url, socks.url, socks.url_h
        assert http_proxy.requests == 1 and socks.connections == 1
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from types import TracebackType

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, MultiMapping
from yarl import URL

__all__ = ["HttpProxy", "Socks5Server"]

# RFC 9110 §7.6.1: headers meant for one connection, never forwarded. Content-Length goes too:
# the response is rebuilt and aiohttp computes it.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


def _end_to_end(headers: MultiMapping[str]) -> CIMultiDict[str]:
    return CIMultiDict((k, v) for k, v in headers.items() if k.lower() not in _HOP_BY_HOP)


class HttpProxy:
    """A forward proxy for plain-HTTP targets: absolute-form requests only (no CONNECT).

    ``requests`` counts forwarded requests, ``targets`` lists their URLs, ``proxy_auth`` the
    Proxy-Authorization header each carried (None without one). Bodies are passed on as they
    are (no decompression); an unreachable target gives a 502.
    """

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.requests = 0
        self.targets: list[str] = []
        self.proxy_auth: list[str | None] = []
        self._runner: web.AppRunner | None = None
        self._client: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> HttpProxy:
        self._client = aiohttp.ClientSession(
            auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar()
        )
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._client is not None:
            await self._client.close()

    async def _forward(self, request: web.Request) -> web.Response:
        target = request.raw_path
        if not target.startswith("http://"):
            return web.Response(status=400, text="absolute-form http:// requests only")
        assert self._client is not None
        self.requests += 1
        self.targets.append(target)
        self.proxy_auth.append(request.headers.get("Proxy-Authorization"))
        body = await request.read()
        try:
            async with self._client.request(
                request.method,
                URL(target, encoded=True),
                headers=_end_to_end(request.headers),
                data=body or None,
                allow_redirects=False,
            ) as upstream:
                payload = await upstream.read()
                return web.Response(
                    status=upstream.status, body=payload, headers=_end_to_end(upstream.headers)
                )
        except (aiohttp.ClientError, OSError) as exc:
            return web.Response(status=502, text=f"upstream failed: {exc}")


class Socks5Server:
    """A SOCKS5 server (RFC 1928): no authentication, CONNECT only, IPv4 and domain names.

    ``connections`` counts accepted client connections; ``targets`` lists each CONNECT's
    (host, port) as the client sent it, so a domain name shows the proxy resolved it.
    """

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.connections = 0
        self.targets: list[tuple[str, int]] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"socks5://127.0.0.1:{self.port}"

    @property
    def url_h(self) -> str:
        """The same server as a ``socks5h`` URL: target names are resolved by the server."""
        return f"socks5h://127.0.0.1:{self.port}"

    async def __aenter__(self) -> Socks5Server:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            await self._serve(reader, writer)
        # A cancelled handler must end quietly: asyncio's stream callback logs the
        # CancelledError of a client_connected_cb task as an error (Python 3.11).
        except (asyncio.IncompleteReadError, OSError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        version, count = await reader.readexactly(2)
        methods = await reader.readexactly(count)
        if version != 5 or 0 not in methods:
            writer.write(b"\x05\xff")  # no acceptable method
            return
        writer.write(b"\x05\x00")
        _, command, _, address_type = await reader.readexactly(4)
        if address_type == 1:
            host = socket.inet_ntoa(await reader.readexactly(4))
        elif address_type == 3:
            length = (await reader.readexactly(1))[0]
            host = (await reader.readexactly(length)).decode("ascii")
        else:
            await _reply(writer, 8)  # address type not supported (IPv6)
            return
        port = int.from_bytes(await reader.readexactly(2), "big")
        if command != 1:
            await _reply(writer, 7)  # command not supported
            return
        self.targets.append((host, port))
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except ConnectionRefusedError:
            await _reply(writer, 5)
            return
        except OSError:
            await _reply(writer, 4)  # host unreachable, name unknown
            return
        try:
            await _reply(writer, 0)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()


async def _reply(writer: asyncio.StreamWriter, code: int) -> None:
    # The bound address is of no use to a client here; 0.0.0.0:0 is a valid IPv4 answer.
    writer.write(bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0]))
    await writer.drain()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until end of stream; a reset connection is an end of stream too."""
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except OSError:
        pass
    finally:
        if sink.can_write_eof() and not sink.is_closing():
            with contextlib.suppress(OSError):
                sink.write_eof()
