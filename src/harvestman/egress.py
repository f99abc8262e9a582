"""The browser's only way out: a forward proxy on 127.0.0.1 that applies the network guard.

Playwright's request interception never sees a redirect hop, a WebSocket, a service worker's
fetch or a preconnect, so the renderer (:mod:`harvestman.render`) does not filter requests in
the page: it starts Chromium with ``--proxy-server`` pointed here (loopback included, see
:data:`BROWSER_ARGS`), and every connection the browser opens is one of

- an absolute-form ``http://`` request: the target's host is normalized, resolved here through
  :class:`~harvestman.guard.GuardedResolver` (the crawl's own rule and allow-list), and the
  request goes to one of the allowed addresses, on a fresh connection per request;
- a ``CONNECT host:port`` (https, and ws/wss, which Chromium always tunnels): the same check,
  then the tunnel is opened to the checked address and bytes are copied both ways.

The proxy connects to the address it checked, so a name re-pointed after the check (DNS
rebinding) cannot swap it, unlike the check ahead of time that the browser used to get.
Anything else (another scheme, an origin-form or malformed request, a host that does not
normalize or resolve) is refused. A refusal answers ``403`` with the reason in the
:data:`REFUSED_HEADER` header, so the renderer tells a refused page from a page: Chromium
shows the answer to a plain request as the page and fails a refused tunnel.

The proxy is not a general-purpose one: it serves the crawl's browser only, on an ephemeral
port of 127.0.0.1, and whoever can reach that port can reach only what the crawl may.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections import Counter
from types import TracebackType

import h11
from yarl import URL

from harvestman.errors import AddressRefused, UrlError
from harvestman.guard import GuardedResolver, NetworkGuard
from harvestman.urls import normalize_url

__all__ = ["BROWSER_ARGS", "REFUSED_HEADER", "EgressProxy"]

log = logging.getLogger(__name__)

REFUSED_HEADER = "X-Harvestman-Refused"

# Chromium flags that send all of the browser's traffic through the proxy and close the paths
# around it: loopback is proxied too (Chromium bypasses proxies for it by default), the browser
# resolves no name itself (the proxy does; EXCLUDE keeps the proxy's own address), no QUIC
# (UDP, never proxied), and WebRTC may use no UDP that does not go through the proxy (there is
# none: so no STUN to internal addresses).
BROWSER_ARGS = (
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--disable-quic",
    "--dns-prefetch-disable",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-background-networking",
)

# RFC 9110 §7.6.1: meant for one connection, never forwarded (Content-Length is end-to-end and
# kept: h11 frames the body by it).
_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
_READ = 65536
_MAX_HEAD = 64 * 1024  # a request or response head larger than this is refused


class EgressProxy:
    """The guarded forward proxy; an async context manager listening on 127.0.0.1:``port``.

    ``timeout`` bounds resolving and connecting to a target, and how long a connection may
    stay silent (a target that neither answers nor closes holds nothing past it). ``counts``
    tallies ``allowed`` and ``refused`` connections (the renderer's figures, and the tests').
    """

    def __init__(self, guard: NetworkGuard, *, timeout: float = 30.0) -> None:
        self.guard = guard
        self.timeout = timeout
        self.port = 0
        self.counts: Counter[str] = Counter()
        self._resolver: GuardedResolver | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> EgressProxy:
        self._resolver = self.guard.resolver()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
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
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        if self._resolver is not None:
            await self._resolver.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        # The browser closes connections whenever it likes; the client going away ends it.
        except (
            OSError,
            TimeoutError,
            asyncio.IncompleteReadError,
            h11.ProtocolError,
            asyncio.CancelledError,
        ):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
        while True:
            event = await _next_event(client, reader, self.timeout)
            if not isinstance(event, h11.Request):
                return
            if event.method == b"CONNECT":
                await self._tunnel(client, event, reader, writer)
                return
            if not await self._forward(client, event, reader, writer):
                return
            if client.our_state is not h11.DONE or client.their_state is not h11.DONE:
                return
            client.start_next_cycle()

    async def _tunnel(
        self,
        client: h11.Connection,
        request: h11.Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        authority = request.target.decode("ascii", "replace")
        if not isinstance(await _next_event(client, reader, self.timeout), h11.EndOfMessage):
            return  # a CONNECT with a body: not one a browser sends
        try:
            host, port = _authority(authority)
            up_reader, up_writer = await self._open(host, port)
        except _Refused as refused:
            await self._refuse(client, writer, refused.reason, authority)
            return
        try:
            writer.write(client.send(h11.Response(status_code=200, headers=[])))
            await writer.drain()
            up_writer.write(client.trailing_data[0])
            downward = asyncio.create_task(_pipe(up_reader, writer, self.timeout))
            try:
                await _pipe(reader, up_writer, self.timeout)
                up_writer.close()  # the browser is done with the tunnel: so is its target
                await downward
            finally:
                downward.cancel()
        finally:
            up_writer.close()

    async def _forward(
        self,
        client: h11.Connection,
        request: h11.Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """One plain-HTTP request; whether the client's connection may carry another."""
        target = request.target.decode("ascii", "replace")
        try:
            if not target.lower().startswith("http://"):
                raise _Refused(f"not an absolute http:// request: {target[:200]!r}")
            parsed = _parse(target)
            host, port = parsed.raw_host or "", parsed.port or 80
            up_reader, up_writer = await self._open(host, port)
        except _Refused as refused:
            await self._refuse(client, writer, refused.reason, target)
            return False
        try:
            upstream = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD)
            headers = [(k, v) for k, v in request.headers if k.lower() not in _HOP_BY_HOP]
            headers.append((b"connection", b"close"))
            up_writer.write(
                upstream.send(
                    h11.Request(
                        method=request.method,
                        target=parsed.raw_path_qs.encode("ascii"),
                        headers=headers,
                    )
                )
            )
            while True:  # the request body, as it comes
                event = await _next_event(client, reader, self.timeout)
                if isinstance(event, h11.Data):
                    up_writer.write(upstream.send(event))
                elif isinstance(event, h11.EndOfMessage):
                    up_writer.write(upstream.send(h11.EndOfMessage()))
                    break
                else:
                    return False
            await up_writer.drain()
            while True:  # the response, as it comes
                event = await _next_event(upstream, up_reader, self.timeout)
                if isinstance(event, h11.InformationalResponse):
                    continue  # 100 Continue and the like: the browser is sent the final answer
                if isinstance(event, h11.Response):
                    kept = [(k, v) for k, v in event.headers if k.lower() not in _HOP_BY_HOP]
                    head = h11.Response(
                        status_code=event.status_code, headers=kept, reason=event.reason
                    )
                    writer.write(client.send(head))
                elif isinstance(event, h11.Data):
                    writer.write(client.send(event))
                    await writer.drain()
                elif isinstance(event, h11.EndOfMessage):
                    writer.write(client.send(h11.EndOfMessage()))
                    await writer.drain()
                    return True
                else:  # the target closed before a complete response
                    return False
        finally:
            up_writer.close()

    async def _open(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Connect to an address of ``host`` the guard allows, or raise _Refused."""
        assert self._resolver is not None
        try:
            normalized = URL(normalize_url(f"http://{_bracketed(host)}:{port}/"))
        except UrlError as exc:
            raise _Refused(f"{host[:200]!r} is not a host name or address ({exc.reason})") from None
        name = normalized.raw_host or ""
        try:
            async with asyncio.timeout(self.timeout):
                results = await self._resolver.resolve(name, port, socket.AF_UNSPEC)
                last: OSError | None = None
                for result in results:
                    try:
                        opened = await asyncio.open_connection(result["host"], port)
                    except OSError as exc:
                        last = exc
                        continue
                    self.counts["allowed"] += 1
                    return opened
        except AddressRefused as exc:
            raise _Refused(str(exc)) from None
        except TimeoutError:
            why = f"{name} port {port}: no connection within {self.timeout:g} s"
            raise _Refused(why) from None
        except OSError as exc:  # the name does not resolve
            raise _Refused(f"{name} port {port}: {exc}") from None
        raise _Refused(f"{name} port {port}: {last or 'no address'}")

    async def _refuse(
        self, client: h11.Connection, writer: asyncio.StreamWriter, reason: str, target: str
    ) -> None:
        self.counts["refused"] += 1
        log.info("browser egress refused: %s (%s)", reason, target[:200])
        await _answer_refused(client, writer, reason)


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def _next_event(
    connection: h11.Connection, reader: asyncio.StreamReader, idle: float
) -> object:
    """The connection's next h11 event; TimeoutError after ``idle`` s of silence."""
    while True:
        event = connection.next_event()
        if event is not h11.NEED_DATA:
            return event
        connection.receive_data(await asyncio.wait_for(reader.read(_READ), idle))


async def _answer_refused(
    client: h11.Connection, writer: asyncio.StreamWriter, reason: str
) -> None:
    """Answer 403 with the reason (header and body); the connection ends after it."""
    text = reason.encode("ascii", "replace")[:1000].replace(b"\r", b" ").replace(b"\n", b" ")
    headers = [
        (REFUSED_HEADER.encode(), text),
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(text)).encode()),
        (b"connection", b"close"),
    ]
    with contextlib.suppress(h11.LocalProtocolError):
        writer.write(client.send(h11.Response(status_code=403, headers=headers)))
        writer.write(client.send(h11.Data(data=text)))
        writer.write(client.send(h11.EndOfMessage()))
    await writer.drain()


def _authority(authority: str) -> tuple[str, int]:
    """``host:port`` of a CONNECT (IPv6 in brackets) -> (host, port), or _Refused."""
    host, sep, port = authority.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise _Refused(f"CONNECT to {authority[:200]!r}: not host:port")
    return host.strip("[]"), int(port)


def _parse(target: str) -> URL:
    try:
        parsed = URL(target, encoded=True)
        parsed.raw_host  # noqa: B018 - yarl parses the authority lazily: fail here
    except ValueError:
        raise _Refused(f"unparsable request target {target[:200]!r}") from None
    if not parsed.raw_host or parsed.port is None:
        raise _Refused(f"no host in {target[:200]!r}")
    return parsed


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, idle: float) -> None:
    """Copy until end of stream; a reset connection or ``idle`` s of silence end it too."""
    try:
        while data := await asyncio.wait_for(source.read(_READ), idle):
            sink.write(data)
            await sink.drain()
    except (OSError, TimeoutError):
        pass
    finally:
        if sink.can_write_eof() and not sink.is_closing():
            with contextlib.suppress(OSError):
                sink.write_eof()
