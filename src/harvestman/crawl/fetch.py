"""The HTTP client: one pooled aiohttp session, hard limits, manual redirects, retry policy.

``Fetcher.fetch`` returns every HTTP response, error statuses included (the crawler decides what
a 404 or a 503 means); it raises only when no usable response exists, and then only the
``FetchError`` family from :mod:`harvestman.errors` (or ``UrlError`` for a URL aiohttp cannot
request). No aiohttp or asyncio exception escapes.

Limits, all enforced:

- ``timeout`` covers the whole fetch: every redirect hop, ``check_hop`` and the body.
- ``max_redirects`` hops at most; each hop's Location is resolved, normalized and handed to
  ``check_hop`` (scope, robots) before it is requested.
- ``max_page_size`` bounds the *decompressed* body. aiohttp's own decompression is off: the body
  is decoded here in pieces of at most ``_PIECE`` bytes, so a compression bomb is abandoned after
  ``max_page_size`` bytes of output, whatever aiohttp version is installed.

With a ``guard`` (:class:`harvestman.guard.NetworkGuard`) every hop is checked before it is
requested: the connector's resolver keeps only the addresses the guard allows and connects to
those (so a rebinding name cannot swap them), and an IP-literal host, which aiohttp does not
resolve, is checked by the fetcher. A refused hop raises ``AddressRefused``. Through a proxy
the proxy resolves the target, so every hop is normalized, its name resolved and checked here
first, and the proxy is sent that normalized URL, never the one as written (a host that does
not resolve here is refused; not proof against rebinding: the proxy is the operator's to lock
down). Without a guard nothing is checked: only tests and callers that check elsewhere build
one so.

Proxies are chosen per call (``fetch(url, proxy=...)``, see :mod:`harvestman.proxies`): http and
https proxies go through aiohttp's ``proxy=``; a SOCKS5 proxy needs a connector of its own, so
the fetcher opens one session per SOCKS proxy on first use and closes them all with itself.
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Protocol

import aiohttp
from aiohttp.abc import AbstractCookieJar
from multidict import CIMultiDict
from yarl import URL

from harvestman.crawl.deadlines import Deadlines
from harvestman.errors import (
    AddressRefused,
    BodyTooLarge,
    ContentDecodingError,
    FetchTimeout,
    NetworkError,
    RedirectLoop,
    RedirectRefused,
    TooManyRedirects,
    UrlError,
)
from harvestman.guard import GuardedResolver, NetworkGuard
from harvestman.mediatypes import looks_like_html, parse_content_type
from harvestman.proxies import redact_proxy_url
from harvestman.urls import UrlNormalizer, normalize_url

try:
    import brotli
except ImportError:  # pragma: no cover - depends on the environment
    brotli = None

# Only a brotli that can cap its output per call (Brotli >= 1.2) is safe against a bomb.
HAS_BROTLI = brotli is not None and hasattr(brotli.Decompressor, "can_accept_more_data")

__all__ = [
    "DEFAULT_ACCEPT",
    "HAS_BROTLI",
    "FetchResult",
    "Fetcher",
    "RetryPolicy",
    "is_retryable_status",
    "looks_like_html",
    "parse_content_type",
    "parse_retry_after",
]

DEFAULT_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"
ACCEPT_ENCODING = "gzip, deflate, br" if HAS_BROTLI else "gzip, deflate"

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Responses that never carry a body, whatever their Content-Length says (RFC 9110 §6.4.1).
_BODYLESS_STATUSES = frozenset({204, 304})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# The most decompressed output produced per call, so memory stays flat under a bomb.
_PIECE = 1 << 16


@dataclass(slots=True)
class FetchResult:
    """One HTTP response after redirects, with its decompressed body.

    ``redirects`` lists the URLs requested before ``final_url``, in order; ``final_url`` is the
    normalized URL that produced this response (``url`` itself when there was no redirect).
    ``truncated`` is true only when ``fetch(..., truncate=True)`` cut the body at its cap.
    ``proxy`` is the proxy URL the request went through, as passed to ``fetch``; None if direct.
    """

    url: str
    final_url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    content_type: str
    charset: str | None
    redirects: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    truncated: bool = False
    proxy: str | None = None

    @property
    def is_html(self) -> bool:
        """True for ``text/html`` and ``application/xhtml+xml``, and for an untyped HTML body.

        >>> FetchResult("u", "u", 200, {}, b"  <!DOCTYPE html><p>", "", None).is_html
        True
        >>> FetchResult("u", "u", 200, {}, b"%PDF-1.7", "", None).is_html
        False
        """
        if self.content_type:
            return self.content_type in _HTML_TYPES
        return looks_like_html(self.body)


class Fetcher:
    """Async context manager owning one aiohttp ClientSession and its connection pool.

    Example::

        async with Fetcher(user_agent="Harvestman/0.1 (+https://example.org/bot)") as fetcher:
            result = await fetcher.fetch("https://example.org/")

    ``max_connections`` and ``max_connections_per_host`` bound the pool (0 means unbounded).
    Redirect targets are normalized with ``normalizer`` (the crawl's own tracking-parameter
    list), by default with :func:`harvestman.urls.normalize_url`.

    Without ``cookie_jar`` every request goes out without cookies; with one (owned by the
    caller, shared by every proxy's session) cookies set by a response are sent back to their
    host on later requests. Note that aiohttp's ``CookieJar()`` ignores IP-address hosts
    unless created with ``unsafe=True``.
    ``user_agents``, when given and not empty, replaces ``user_agent`` by a random pick from
    the list on each ``fetch`` call (the same one for all its redirect hops; ``rng`` makes
    the picks repeatable). ``max_connections`` applies to the direct pool and separately to
    the pool of each SOCKS proxy.
    """

    def __init__(
        self,
        *,
        user_agent: str,
        timeout: float = 30.0,
        max_redirects: int = 5,
        max_page_size: int = 10 * 1024 * 1024,
        max_connections: int = 256,
        max_connections_per_host: int = 0,
        accept: str = DEFAULT_ACCEPT,
        normalizer: UrlNormalizer | None = None,
        user_agents: Sequence[str] | None = None,
        cookie_jar: AbstractCookieJar | None = None,
        rng: random.Random | None = None,
        guard: NetworkGuard | None = None,
    ) -> None:
        self.user_agent = user_agent
        self.guard = guard
        self.user_agents = tuple(user_agents or ())
        self.cookie_jar = cookie_jar
        self._rng = rng if rng is not None else random.Random()
        self.timeout = timeout
        self.max_redirects = max_redirects
        self.max_page_size = max_page_size
        self.max_connections = max_connections
        self.max_connections_per_host = max_connections_per_host
        self.accept = accept
        self._normalize = normalizer.normalize if normalizer is not None else normalize_url
        self._session: aiohttp.ClientSession | None = None
        self._socks_sessions: dict[str, aiohttp.ClientSession] = {}
        # What a failed proxy raises; aiohttp-socks's own errors join once a SOCKS proxy is
        # used (it is imported then: ~2% of a crawl's start-up imports, for a feature most
        # crawls never use).
        self._proxy_errors: tuple[type[Exception], ...] = (
            aiohttp.ClientProxyConnectionError,
            aiohttp.ClientHttpProxyError,
        )
        self._resolver: GuardedResolver | None = None
        self._deadlines: Deadlines | None = None

    async def __aenter__(self) -> Fetcher:
        self._deadlines = Deadlines(self.timeout)
        self._resolver = self.guard.resolver() if self.guard is not None else None
        connector = aiohttp.TCPConnector(
            limit=self.max_connections,
            limit_per_host=self.max_connections_per_host,
            ttl_dns_cache=300,
            # The guard filters what is resolved, before it is cached and connected to.
            resolver=self._resolver,
        )
        self._session = self._new_session(connector)
        return self

    def _new_session(self, connector: aiohttp.BaseConnector) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=connector,
            headers={
                "User-Agent": self.user_agent,
                "Accept": self.accept,
                "Accept-Encoding": ACCEPT_ENCODING,
            },
            cookie_jar=self.cookie_jar if self.cookie_jar is not None else aiohttp.DummyCookieJar(),
            auto_decompress=False,
            # The whole-fetch deadline is ours (Deadlines); aiohttp's would only overlap it.
            timeout=aiohttp.ClientTimeout(total=None),
            # Real sites send long Set-Cookie and CSP headers; 8 KiB rejects some of them.
            max_line_size=32768,
            max_field_size=32768,
        )

    def _socks_session(self, proxy: str) -> aiohttp.ClientSession:
        session = self._socks_sessions.get(proxy)
        if session is None:
            import aiohttp_socks

            # aiohttp-socks raises its own exceptions, outside aiohttp's and OSError's
            # hierarchies.
            self._proxy_errors = (
                aiohttp.ClientProxyConnectionError,
                aiohttp.ClientHttpProxyError,
                aiohttp_socks.ProxyConnectionError,
                aiohttp_socks.ProxyError,
                aiohttp_socks.ProxyTimeoutError,
            )
            parts = URL(proxy)
            connector = aiohttp_socks.ProxyConnector(
                host=parts.host or "",
                port=parts.port or 1080,
                proxy_type=aiohttp_socks.ProxyType.SOCKS5,
                username=parts.user,
                password=parts.password,
                # socks5h: the proxy resolves the target's name; socks5: we resolve it.
                rdns=parts.scheme == "socks5h",
                limit=self.max_connections,
                limit_per_host=self.max_connections_per_host,
            )
            session = self._socks_sessions[proxy] = self._new_session(connector)
        return session

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        sessions = [*self._socks_sessions.values()]
        if self._session is not None:
            sessions.append(self._session)
        self._socks_sessions.clear()
        self._session = None
        if self._deadlines is not None:
            self._deadlines.close()
        for session in sessions:
            await session.close()
        if self._resolver is not None:  # the connector closes only a resolver it made itself
            await self._resolver.close()
            self._resolver = None

    async def fetch(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        check_hop: Callable[[str], Awaitable[None]] | None = None,
        max_bytes: int | None = None,
        truncate: bool = False,
        proxy: str | None = None,
        max_redirects: int | None = None,
    ) -> FetchResult:
        """GET ``url`` (an http(s) URL, normally already normalized), following redirects.

        ``headers`` are added to the defaults on every hop. ``check_hop(next_url)`` is awaited
        before each redirect hop is requested and may raise (``RedirectRefused`` for scope or
        robots). ``max_bytes`` replaces ``max_page_size`` for this call; with ``truncate`` the
        body is cut there (``truncated=True``) instead of raising ``BodyTooLarge``.
        ``max_redirects`` replaces the fetcher's ``max_redirects`` for this call.
        ``proxy`` (http, https, socks5 or socks5h URL, see
        :func:`harvestman.proxies.parse_proxy_urls`) carries every hop of this fetch.

        Raises ``NetworkError``, ``FetchTimeout``, ``TooManyRedirects``, ``RedirectLoop``,
        ``RedirectRefused``, ``BodyTooLarge``, ``ContentDecodingError``, or ``UrlError`` when
        ``url`` itself is not an http(s) URL aiohttp can request, and ``AddressRefused`` when
        the guard refuses a hop's address. With a proxy, every
        ``NetworkError`` message names it (password hidden); one that starts with ``proxy``
        means the proxy itself failed (unreachable, handshake or CONNECT refused).
        ValueError for a proxy URL of another scheme.
        """
        if self._session is None or self._deadlines is None:
            raise RuntimeError("Fetcher.fetch() called outside 'async with Fetcher(...)'")
        if not url[:8].lower().startswith(("http://", "https://")):
            raise UrlError("scheme", url)
        session, http_proxy = self._route(proxy)
        if self.user_agents:
            merged = CIMultiDict(headers or {})
            merged.setdefault("User-Agent", self._rng.choice(self.user_agents))
            headers = merged
        cap = self.max_page_size if max_bytes is None else max_bytes
        started = time.perf_counter()
        via = "" if proxy is None else f" (via proxy {redact_proxy_url(proxy)})"
        try:
            with self._deadlines():  # asyncio.timeout(self.timeout), one timer for all
                hops = self.max_redirects if max_redirects is None else max_redirects
                result = await self._follow(
                    session,
                    url,
                    headers,
                    check_hop,
                    cap,
                    truncate,
                    http_proxy,
                    proxy is not None,
                    hops,
                )
        except TimeoutError:
            message = f"no complete response within {self.timeout:g} s{via}"
            raise FetchTimeout(message, url) from None
        except AddressRefused as exc:
            raise AddressRefused(f"{exc}{via}", exc.url or url, host=exc.host) from None
        except aiohttp.InvalidURL as exc:
            raise UrlError("unparsable", url, str(exc)) from None
        except self._proxy_errors as exc:
            assert proxy is not None
            message = f"proxy {redact_proxy_url(proxy)} failed: {_describe(exc)}"
            raise NetworkError(message, url) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise NetworkError(_describe(exc) + via, url) from exc
        result.elapsed = time.perf_counter() - started
        result.proxy = proxy
        return result

    def _route(self, proxy: str | None) -> tuple[aiohttp.ClientSession, str | None]:
        """The session to send through and the ``proxy=`` argument for it."""
        assert self._session is not None
        if proxy is None:
            return self._session, None
        scheme = proxy.partition(":")[0].lower()
        if scheme in ("http", "https"):
            return self._session, proxy
        if scheme in ("socks5", "socks5h"):
            return self._socks_session(proxy), None
        raise ValueError(f"unsupported proxy scheme: {redact_proxy_url(proxy)!r}")

    async def _follow(
        self,
        session: aiohttp.ClientSession,
        url: str,
        headers: Mapping[str, str] | None,
        check_hop: Callable[[str], Awaitable[None]] | None,
        cap: int,
        truncate: bool,
        http_proxy: str | None,
        proxied: bool,
        max_redirects: int,
    ) -> FetchResult:
        current = url
        chain: list[str] = []
        seen: set[str] | None = None
        while True:
            if proxied:
                target_url = await self._proxied_target(current)
            else:
                target_url = _to_yarl(current)
                if self.guard is not None:  # names: the resolver checks them at connection
                    self.guard.check_host(target_url.host or "", target_url.port or 0, current)
            response = await session.get(
                target_url, headers=headers, allow_redirects=False, proxy=http_proxy
            )
            try:
                location = (
                    response.headers.get("Location")
                    if response.status in _REDIRECT_STATUSES
                    else None
                )
                if location is None:
                    if response.status in _BODYLESS_STATUSES:
                        body, truncated = b"", False
                    else:
                        body, truncated = await _read_body(response, cap, truncate, current)
                    content_type, charset = parse_content_type(response.headers.get("Content-Type"))
                    return FetchResult(
                        url=url,
                        final_url=current,
                        status=response.status,
                        headers=response.headers,
                        body=body,
                        content_type=content_type,
                        charset=charset,
                        redirects=chain,
                        truncated=truncated,
                    )
            finally:
                response.release()

            if seen is None:
                seen = {url, self._normalized_or_same(url)}
            assert location is not None  # every other response returned above
            target = self._resolve_location(location, current, url)
            if target in seen:
                raise RedirectLoop(f"redirect from {current} back to {target}", url)
            if len(chain) >= max_redirects:
                raise TooManyRedirects(f"more than {max_redirects} redirects", url)
            if check_hop is not None:
                await check_hop(target)
            chain.append(current)
            seen.add(target)
            current = target

    async def _proxied_target(self, current: str) -> URL:
        """What a proxy is sent for ``current``: its normalized URL, whose host was resolved
        and checked here, since the proxy resolves it again by itself.

        A proxy parses what it receives in its own way (one that decodes ``%31%32%37.0.0.1``
        reaches 127.0.0.1), so it never sees the URL as written, only the form the guard
        judged; a URL that does not normalize raises UrlError, and with a guard a host that
        does not resolve here is refused (the proxy might resolve it to anything).
        """
        normalized = self._normalize(current)
        target = _to_yarl(normalized)
        if self.guard is not None:
            self.guard.check_host(target.host or "", target.port or 0, current)
            await self.guard.check_url(normalized, for_proxy=current)
        return target

    def _normalized_or_same(self, url: str) -> str:
        try:
            return self._normalize(url)
        except UrlError:
            return url

    def _resolve_location(self, location: str, current: str, url: str) -> str:
        try:
            target = self._normalize(location, current)
        except UrlError as exc:
            raise RedirectRefused(
                f"{current} redirects to an uncrawlable URL ({exc.reason}): {location[:200]!r}",
                url,
                reason=exc.reason,
            ) from None
        if not target.startswith(("http://", "https://")):
            raise RedirectRefused(
                f"{current} redirects to a non-http(s) URL: {target[:200]!r}", url, "scheme"
            )
        return target


def _to_yarl(url: str) -> URL:
    try:
        # A normalized URL is already percent-encoded; telling yarl so skips its re-quoting.
        parsed = URL(url, encoded=True) if url.isascii() and " " not in url else URL(url)
        parsed.raw_host  # noqa: B018 - yarl parses the authority lazily; fail here, not in aiohttp
        return parsed
    except ValueError as exc:
        raise UrlError("unparsable", url, str(exc)) from None


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _read_body(
    response: aiohttp.ClientResponse, cap: int, truncate: bool, url: str
) -> tuple[bytes, bool]:
    """Read and decode the body, at most ``cap`` decoded bytes; return ``(body, truncated)``."""
    encoding = response.headers.get("Content-Encoding", "").strip().lower()
    decoder = _decoder_for(encoding, url)
    # Sane compression never makes a body more than a little larger; a stream that does (say
    # endless empty gzip members) would otherwise be read forever while producing nothing.
    raw_cap = cap if decoder is None else cap + cap // 64 + 1024
    length = response.content_length
    if length is not None and length > raw_cap and not truncate:
        response.close()
        raise BodyTooLarge(f"Content-Length {length:,} exceeds the {cap:,}-byte cap", url)
    if decoder is None and length is not None and length <= cap:
        # The parser never hands over more than Content-Length bytes, so this cannot overrun.
        return await response.read(), False

    parts: list[bytes] = []
    total = raw_total = 0
    async for chunk in response.content.iter_any():
        raw_total += len(chunk)
        if decoder is not None and raw_total > raw_cap:
            response.close()
            if not truncate:
                raise BodyTooLarge(f"encoded body exceeds {raw_cap:,} bytes", url)
            return b"".join(parts), True
        for piece in decoder.decode(chunk) if decoder is not None else (chunk,):
            total += len(piece)
            if total > cap:
                response.close()
                if not truncate:
                    raise BodyTooLarge(f"body exceeds the {cap:,}-byte cap", url)
                parts.append(piece[: len(piece) - (total - cap)])
                return b"".join(parts), True
            parts.append(piece)
    if decoder is not None:
        decoder.finish()
    return b"".join(parts), False


class _Decoder(Protocol):
    def decode(self, data: bytes) -> Iterator[bytes]:
        """Yield the output of ``data`` in pieces of at most ``_PIECE`` bytes."""
        ...

    def finish(self) -> None:
        """Raise ContentDecodingError when the stream ended before its end marker."""
        ...


def _decoder_for(encoding: str, url: str) -> _Decoder | None:
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip", "deflate"):
        return _ZlibDecoder(encoding, url)
    if encoding == "br" and HAS_BROTLI:
        return _BrotliDecoder(url)
    raise ContentDecodingError(f"unsupported Content-Encoding {encoding[:50]!r}", url)


class _ZlibDecoder:
    """gzip (several members allowed) or deflate, zlib-wrapped or raw as some servers send it."""

    def __init__(self, encoding: str, url: str) -> None:
        self._gzip = encoding != "deflate"
        self._url = url
        self._fed = False
        self._head = b""
        self._obj = zlib.decompressobj(31) if self._gzip else None

    def decode(self, data: bytes) -> Iterator[bytes]:
        if not data:
            return
        self._fed = True
        if self._obj is None:
            # RFC 1950 header check needs two bytes; a one-byte chunk waits for the next.
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return
            is_zlib = data[0] & 0x0F == 8 and int.from_bytes(data[:2], "big") % 31 == 0
            self._obj = zlib.decompressobj(15 if is_zlib else -15)
        obj = self._obj
        more = False
        try:
            while data or more:
                if obj.eof:
                    if not (self._gzip and data.startswith(b"\x1f\x8b")):
                        return  # bytes after the end of the stream are ignored, as browsers do
                    obj = self._obj = zlib.decompressobj(31)
                out = obj.decompress(data, _PIECE)
                if out:
                    yield out
                # A full piece may leave output pending inside zlib even with no input left.
                more = len(out) == _PIECE
                data = obj.unused_data if obj.eof else obj.unconsumed_tail
        except zlib.error as exc:
            raise ContentDecodingError(f"corrupt {self._kind} stream: {exc}", self._url) from None

    @property
    def _kind(self) -> str:
        return "gzip" if self._gzip else "deflate"

    def finish(self) -> None:
        if self._fed and (self._obj is None or not self._obj.eof):
            raise ContentDecodingError(f"truncated {self._kind} stream", self._url)


class _BrotliDecoder:
    def __init__(self, url: str) -> None:
        self._obj = brotli.Decompressor()
        self._url = url
        self._fed = False

    def decode(self, data: bytes) -> Iterator[bytes]:
        if not data:
            return
        self._fed = True
        obj = self._obj
        try:
            # can_accept_more_data() turns true while output may still be pending: drain until
            # a call yields nothing, one bounded piece at a time.
            out = obj.process(data, output_buffer_limit=_PIECE)
            while out:
                yield out
                out = obj.process(b"", output_buffer_limit=_PIECE)
        except brotli.error as exc:
            raise ContentDecodingError(f"corrupt brotli stream: {exc}", self._url) from None

    def finish(self) -> None:
        if self._fed and not self._obj.is_finished():
            raise ContentDecodingError("truncated brotli stream", self._url)


class RetryPolicy:
    """Exponential backoff with jitter for retryable failures (network errors, 5xx, 429).

    >>> policy = RetryPolicy(max_retries=3, backoff_base=1.0, rng=random.Random(7))
    >>> [round(policy.delay(n) or 0, 2) for n in (1, 2, 3)], policy.delay(4)
    ([0.93, 1.72, 4.24], None)
    """

    def __init__(
        self,
        max_retries: int = 3,
        backoff_base: float = 1.0,
        max_delay: float = 600.0,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.max_delay = max_delay
        self._rng = rng if rng is not None else random.Random()

    def delay(self, attempt: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry number `attempt` (1-based), or None when attempts are
        exhausted (attempt > max_retries). base * 2**(attempt-1) with jitter (x uniform 0.8..1.2);
        a Retry-After larger than that wins; capped at max_delay."""
        if attempt > self.max_retries:
            return None
        wait: float = self.backoff_base * 2.0 ** (max(attempt, 1) - 1) * self._rng.uniform(0.8, 1.2)
        if retry_after is not None and retry_after > wait:
            wait = retry_after
        return min(wait, self.max_delay)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP-date; None if invalid.

    A date in the past gives 0.0. ``now`` defaults to the current UTC time.

    >>> parse_retry_after("120"), parse_retry_after("soon"), parse_retry_after(None)
    (120.0, None, None)
    >>> now = datetime(2015, 10, 21, 7, 28, tzinfo=UTC)
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now)
    30.0
    """
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if value[0].isdigit():
        try:
            seconds = float(value)
        except ValueError:
            return None
        # float() accepts "1e999" and "nan"; neither is a wait.
        return seconds if 0.0 <= seconds < float("inf") else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if now is None:
        now = datetime.now(UTC)
    elif now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def is_retryable_status(status: int) -> bool:
    """429 and every 5xx may succeed on a later attempt; other statuses are final."""
    return status == 429 or 500 <= status <= 599
