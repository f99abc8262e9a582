"""The fetcher against a real aiohttp.web server (and raw sockets) on 127.0.0.1."""

from __future__ import annotations

import asyncio
import functools
import json
import random
import socket
import struct
import tracemalloc
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime

import pytest
from aiohttp import web

from harvestman.crawl.fetch import (
    ACCEPT_ENCODING,
    DEFAULT_ACCEPT,
    Fetcher,
    FetchResult,
    RetryPolicy,
    is_retryable_status,
    parse_retry_after,
)
from harvestman.errors import (
    BodyTooLarge,
    ContentDecodingError,
    FetchTimeout,
    NetworkError,
    RedirectLoop,
    RedirectRefused,
    TooManyRedirects,
    UrlError,
)

MiB = 1024 * 1024
# What the site's slow handlers began and finished, by path: a client that gives up early leaves
# a handler begun and unfinished (handler_cancellation cancels it when the client goes away).
HANDLED = web.AppKey("handled", Counter[str])
UA = "Harvestman-test/1.0 (+http://127.0.0.1/bot)"
PAGE = "<html><head><title>Café</title></head><body>déjà vu</body></html>"


def gzip_bomb(inflated: int) -> bytes:
    """A valid gzip stream of ``inflated`` zero bytes (~1/1000 of that), built in milliseconds.

    Full flushes make every 1 MiB block self-contained, so one compressed block is repeated.
    """
    zeros = bytes(MiB)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.flush()[:-8]  # the final empty block, without the 2 MiB trailer
    crc = 0
    for _ in range(inflated // MiB):
        crc = zlib.crc32(zeros, crc)
    trailer = struct.pack("<II", crc, inflated & 0xFFFFFFFF)
    return head + block * (inflated // MiB - 1) + end + trailer


@functools.cache
def one_gib_bomb() -> bytes:
    return gzip_bomb(1024 * MiB)


def gzipped(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


def deflated(data: bytes, wbits: int) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return compressor.compress(data) + compressor.flush()


def redirect(location: str, status: int = 302) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=status, headers={"Location": location})

    return handler


def respond(
    text: str = "", status: int = 200, content_type: str = "text/plain"
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=status, text=text, content_type=content_type)

    return handler


def encoded(body: bytes, encoding: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(
            body=body, headers={"Content-Encoding": encoding, "Content-Type": "text/html"}
        )

    return handler


async def page(request: web.Request) -> web.Response:
    return web.Response(
        body=PAGE.encode("latin-1"), headers={"Content-Type": "text/html; charset=ISO-8859-1"}
    )


async def hops(request: web.Request) -> web.Response:
    left = int(request.match_info["n"])
    if left == 0:
        return web.Response(text="arrived", content_type="text/plain")
    return web.Response(status=301, headers={"Location": f"/hops/{left - 1}"})


async def echo_query(request: web.Request) -> web.Response:
    return web.Response(text=request.query_string)


async def echo(request: web.Request) -> web.Response:
    return web.json_response(dict(request.headers))


async def set_cookie(request: web.Request) -> web.Response:
    response = web.Response(text="here is a cookie")
    response.set_cookie("session", "s3cret")
    return response


async def not_modified(request: web.Request) -> web.Response:
    if request.headers.get("If-None-Match") == '"v1"':
        # The length of the representation the client holds, not of this (empty) body.
        return web.Response(status=304, headers={"ETag": '"v1"', "Content-Length": "99999999"})
    return web.Response(text="fresh", headers={"ETag": '"v1"'})


async def slow(request: web.Request) -> web.Response:
    handled = request.app[HANDLED]
    handled["/slow begun"] += 1
    await asyncio.sleep(5)
    handled["/slow finished"] += 1
    return web.Response(text="too late")


async def declared_huge(request: web.Request) -> web.StreamResponse:
    handled = request.app[HANDLED]
    handled["/declared-huge begun"] += 1
    response = web.StreamResponse(headers={"Content-Type": "text/html"})
    response.content_length = 100 * MiB
    await response.prepare(request)
    await response.write(b"<html>" + b" " * 1000)
    await asyncio.sleep(5)  # the client must not wait for the rest
    handled["/declared-huge finished"] += 1
    return response


async def chunked_huge(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/html"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    chunk = b"x" * (64 * 1024)
    for _ in range(12 * 16):  # 12 MiB, more than the 10 MiB default cap
        await response.write(chunk)
    await response.write_eof()
    return response


async def chunked_small(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    for part in (b"one ", b"two ", b"three"):
        await response.write(part)
    await response.write_eof()
    return response


async def bomb(request: web.Request) -> web.Response:
    return web.Response(
        body=one_gib_bomb(), headers={"Content-Encoding": "gzip", "Content-Type": "text/html"}
    )


@pytest.fixture
def handled() -> Counter[str]:
    """What the site's slow handlers began and finished in this test."""
    return Counter()


@pytest.fixture
async def site(handled: Counter[str]) -> AsyncIterator[str]:
    """The test site's base URL, e.g. ``http://127.0.0.1:41234``."""
    app = web.Application()
    app[HANDLED] = handled
    body_20k = b"<html><body>" + b"a" * 20_000 + b"</body></html>"
    html_gz = gzipped(body_20k)
    app.router.add_get("/page", page)
    app.router.add_get("/data.json", respond('{"a": 1}', content_type="application/json"))
    app.router.add_get("/missing", respond("no such page", 404))
    app.router.add_get("/broken", respond("oops", 500))
    app.router.add_get("/chain/1", redirect("/chain/2", 301))
    app.router.add_get("/chain/2", redirect("/chain/3", 302))
    app.router.add_get("/chain/3", redirect("/page", 307))
    app.router.add_get("/loop/a", redirect("/loop/b"))
    app.router.add_get("/loop/b", redirect("/loop/a"))
    app.router.add_get("/hops/{n}", hops)
    app.router.add_get("/rel/dir/start", redirect("../target?b=2&a=1#frag", 303))
    app.router.add_get("/rel/target", echo_query)
    app.router.add_get("/to-mailto", redirect("mailto:someone@example.com"))
    app.router.add_get("/to-bad-host", redirect("http://bad host/"))
    app.router.add_get("/to-bad-port", redirect("http://127.0.0.1:99999/"))
    app.router.add_get("/to-page", redirect("/page", 308))
    app.router.add_get("/no-location", respond("stay", 302))
    app.router.add_get("/echo", echo)
    app.router.add_get("/cookie", set_cookie)
    app.router.add_get("/etag", not_modified)
    app.router.add_get("/slow", slow)
    app.router.add_get("/declared-huge", declared_huge)
    app.router.add_get("/chunked-huge", chunked_huge)
    app.router.add_get("/chunked-small", chunked_small)
    app.router.add_get("/bomb", bomb)
    app.router.add_get("/gzip", encoded(html_gz, "gzip"))
    app.router.add_get("/gzip-members", encoded(gzipped(b"first,") + gzipped(b"second"), "gzip"))
    app.router.add_get("/deflate-zlib", encoded(deflated(body_20k, 15), "deflate"))
    app.router.add_get("/deflate-raw", encoded(deflated(body_20k, -15), "deflate"))
    app.router.add_get("/gzip-empty-members", encoded(gzipped(b"") * 10_000, "gzip"))
    app.router.add_get("/gzip-corrupt", encoded(b"\x1f\x8b\x08\x00" + b"\xff" * 64, "gzip"))
    app.router.add_get("/gzip-truncated", encoded(html_gz[: len(html_gz) // 2], "gzip"))
    app.router.add_get("/zstd", encoded(b"(\xb5/\xfd", "zstd"))
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def fetcher() -> AsyncIterator[Fetcher]:
    async with Fetcher(user_agent=UA, timeout=5.0) as fetcher:
        yield fetcher


async def serve_raw(response: bytes) -> tuple[str, asyncio.Server]:
    """A server that answers any request with ``response`` as is, then closes the connection."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(response)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}", server


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- responses ---------------------------------------------------------------------------------


async def test_html_page_with_charset(site: str, fetcher: Fetcher) -> None:
    result = await fetcher.fetch(f"{site}/page")

    assert result.url == f"{site}/page"
    assert result.final_url == f"{site}/page"
    assert result.status == 200
    assert result.body == PAGE.encode("latin-1")
    assert result.content_type == "text/html"
    assert result.charset == "iso-8859-1"
    assert result.is_html
    assert result.redirects == []
    assert result.truncated is False
    assert result.headers["content-type"] == "text/html; charset=ISO-8859-1"
    assert result.elapsed > 0  # measured; how fast is bench/'s business


async def test_non_html_response(site: str, fetcher: Fetcher) -> None:
    result = await fetcher.fetch(f"{site}/data.json")

    assert (result.status, result.content_type, result.charset) == (
        200,
        "application/json",
        "utf-8",
    )
    assert json.loads(result.body) == {"a": 1}
    assert not result.is_html


@pytest.mark.parametrize(
    ("path", "status", "body"), [("/missing", 404, b"no such page"), ("/broken", 500, b"oops")]
)
async def test_error_statuses_are_results(
    site: str, fetcher: Fetcher, path: str, status: int, body: bytes
) -> None:
    result = await fetcher.fetch(site + path)

    assert (result.status, result.body, result.content_type) == (status, body, "text/plain")


async def test_chunked_body_is_read_whole(site: str, fetcher: Fetcher) -> None:
    result = await fetcher.fetch(f"{site}/chunked-small")

    assert result.body == b"one two three"


async def test_304_has_no_body_whatever_its_content_length(site: str, fetcher: Fetcher) -> None:
    fresh = await fetcher.fetch(f"{site}/etag")
    revalidated = await fetcher.fetch(f"{site}/etag", headers={"If-None-Match": '"v1"'})

    assert (fresh.status, fresh.body) == (200, b"fresh")
    assert (revalidated.status, revalidated.body) == (304, b"")


@pytest.mark.parametrize(
    ("content_type", "body", "is_html"),
    [
        ("", b"\n  <!DOCTYPE html><title>x</title>", True),
        ("", b"<HTML><body>x</body></HTML>", True),
        ("", b"%PDF-1.7 binary", False),
        ("", b"<bogus>not html</bogus>", False),
        ("application/xhtml+xml", b"<?xml version='1.0'?><html/>", True),
        ("text/plain", b"<html>typed as text</html>", False),
    ],
)
def test_is_html(content_type: str, body: bytes, is_html: bool) -> None:
    result = FetchResult("http://h/", "http://h/", 200, {}, body, content_type, None)

    assert result.is_html is is_html


async def test_untyped_html_is_sniffed(fetcher: Fetcher) -> None:
    body = b"<!doctype html><title>no type</title>"
    base, server = await serve_raw(
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
    )
    async with server:
        result = await fetcher.fetch(f"{base}/")

    assert (result.content_type, result.charset, result.body) == ("", None, body)
    assert result.is_html


# --- redirects ---------------------------------------------------------------------------------


async def test_redirect_chain_is_recorded(site: str, fetcher: Fetcher) -> None:
    result = await fetcher.fetch(f"{site}/chain/1")

    assert result.url == f"{site}/chain/1"
    assert result.final_url == f"{site}/page"
    assert result.redirects == [f"{site}/chain/1", f"{site}/chain/2", f"{site}/chain/3"]
    assert (result.status, result.body) == (200, PAGE.encode("latin-1"))


async def test_redirect_loop(site: str, fetcher: Fetcher) -> None:
    with pytest.raises(RedirectLoop) as caught:
        await fetcher.fetch(f"{site}/loop/a")

    assert caught.value.url == f"{site}/loop/a"


async def test_five_hops_are_followed(site: str, fetcher: Fetcher) -> None:
    result = await fetcher.fetch(f"{site}/hops/5")

    assert result.body == b"arrived"
    assert result.redirects == [f"{site}/hops/{n}" for n in (5, 4, 3, 2, 1)]


async def test_six_hops_are_too_many(site: str, fetcher: Fetcher) -> None:
    with pytest.raises(TooManyRedirects):
        await fetcher.fetch(f"{site}/hops/6")


async def test_relative_location_is_resolved_and_normalized(site: str, fetcher: Fetcher) -> None:
    result = await fetcher.fetch(f"{site}/rel/dir/start")

    assert result.final_url == f"{site}/rel/target?a=1&b=2"
    assert result.redirects == [f"{site}/rel/dir/start"]
    assert result.body == b"a=1&b=2"


@pytest.mark.parametrize(
    ("path", "reason"),
    [("/to-mailto", "scheme"), ("/to-bad-host", "bad_host"), ("/to-bad-port", "bad_port")],
)
async def test_uncrawlable_location_is_refused(
    site: str, fetcher: Fetcher, path: str, reason: str
) -> None:
    with pytest.raises(RedirectRefused) as caught:
        await fetcher.fetch(site + path)

    assert (caught.value.url, caught.value.reason) == (site + path, reason)


async def test_check_hop_sees_each_hop_and_can_refuse(site: str, fetcher: Fetcher) -> None:
    checked: list[str] = []

    async def allow(url: str) -> None:
        checked.append(url)

    async def refuse(url: str) -> None:
        raise RedirectRefused(f"out of scope: {url}", url, reason="out_of_scope")

    await fetcher.fetch(f"{site}/chain/1", check_hop=allow)
    with pytest.raises(RedirectRefused) as caught:
        await fetcher.fetch(f"{site}/to-page", check_hop=refuse)

    assert checked == [f"{site}/chain/2", f"{site}/chain/3", f"{site}/page"]
    assert caught.value.reason == "out_of_scope"


async def test_redirect_without_location_is_the_response(site: str, fetcher: Fetcher) -> None:
    result = await fetcher.fetch(f"{site}/no-location")

    assert (result.status, result.body, result.redirects) == (302, b"stay", [])


# --- limits ------------------------------------------------------------------------------------


async def test_slow_response_times_out(site: str, handled: Counter[str]) -> None:
    async with Fetcher(user_agent=UA, timeout=0.5) as fetcher:
        with pytest.raises(FetchTimeout):
            await fetcher.fetch(f"{site}/slow")

    # The request reached the server and the client gave up before the 5 s answer.
    assert handled == {"/slow begun": 1}


async def test_declared_length_over_cap_is_refused_at_once(
    site: str, fetcher: Fetcher, handled: Counter[str]
) -> None:
    with pytest.raises(BodyTooLarge) as caught:
        await fetcher.fetch(f"{site}/declared-huge")

    # Refused on the header: the rest of the 100 MiB, 5 s away, was never waited for.
    assert str(caught.value).startswith(f"Content-Length {100 * MiB:,} exceeds the")
    assert handled == {"/declared-huge begun": 1}


async def test_chunked_body_over_cap_is_aborted(site: str, fetcher: Fetcher) -> None:
    with pytest.raises(BodyTooLarge):
        await fetcher.fetch(f"{site}/chunked-huge")


async def test_max_bytes_overrides_the_page_cap(site: str, fetcher: Fetcher) -> None:
    with pytest.raises(BodyTooLarge):
        await fetcher.fetch(f"{site}/page", max_bytes=10)


@pytest.mark.parametrize("path", ["/chunked-huge", "/declared-huge", "/page"])
async def test_truncate_cuts_the_body_at_the_cap(site: str, fetcher: Fetcher, path: str) -> None:
    result = await fetcher.fetch(site + path, max_bytes=6, truncate=True)

    assert len(result.body) == 6
    assert result.truncated is True


async def test_truncate_keeps_a_small_body_whole(site: str, fetcher: Fetcher) -> None:
    result = await fetcher.fetch(f"{site}/page", max_bytes=500 * 1024, truncate=True)

    assert (result.body, result.truncated) == (PAGE.encode("latin-1"), False)


async def test_gzip_bomb_is_aborted_at_the_cap_in_bounded_memory(
    site: str, fetcher: Fetcher
) -> None:
    one_gib_bomb()  # the server's ~1 MiB body, built before tracing: only the client's counts
    tracemalloc.start()
    try:
        with pytest.raises(BodyTooLarge) as caught:
            await fetcher.fetch(f"{site}/bomb")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    # Stopped by the decoded byte count at the 10 MiB cap, not by the encoded size (~1 MiB for
    # the 1 GiB it inflates to): the work done is the cap's, whatever the machine's speed.
    assert str(caught.value) == f"body exceeds the {10 * MiB:,}-byte cap"
    # The 10 MiB cap itself is held until the abort; nothing near the 1 GiB it inflates to.
    assert peak < 12 * MiB


async def test_gzip_bomb_truncated_costs_only_the_cap(site: str, fetcher: Fetcher) -> None:
    one_gib_bomb()  # the server's ~1 MiB body, built before tracing: only the client's counts
    tracemalloc.start()
    try:
        result = await fetcher.fetch(f"{site}/bomb", max_bytes=500 * 1024, truncate=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert (result.body, result.truncated) == (bytes(500 * 1024), True)
    assert peak < 2 * MiB


# --- content encodings -------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/gzip", "/deflate-zlib", "/deflate-raw"])
async def test_compressed_bodies_are_decoded(site: str, fetcher: Fetcher, path: str) -> None:
    result = await fetcher.fetch(site + path)

    assert result.body == b"<html><body>" + b"a" * 20_000 + b"</body></html>"
    assert result.headers["Content-Encoding"] in ("gzip", "deflate")


async def test_gzip_with_several_members(site: str, fetcher: Fetcher) -> None:
    result = await fetcher.fetch(f"{site}/gzip-members")

    assert result.body == b"first,second"


async def test_encoded_body_is_capped_even_when_it_inflates_to_nothing(
    site: str, fetcher: Fetcher
) -> None:
    with pytest.raises(BodyTooLarge):
        await fetcher.fetch(f"{site}/gzip-empty-members", max_bytes=100_000)


@pytest.mark.parametrize("path", ["/gzip-corrupt", "/gzip-truncated", "/zstd"])
async def test_undecodable_body(site: str, fetcher: Fetcher, path: str) -> None:
    with pytest.raises(ContentDecodingError):
        await fetcher.fetch(site + path)


async def test_brotli_body_is_decoded_in_bounded_pieces(fetcher: Fetcher) -> None:
    brotli = pytest.importorskip("brotli")
    if "br" not in ACCEPT_ENCODING:
        pytest.skip("this brotli cannot bound its output")
    body = brotli.compress(b"<p>" + b"z" * 12 * MiB)
    raw = b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body),
        body,
    )
    base, server = await serve_raw(raw)
    async with server:
        small = await fetcher.fetch(f"{base}/", max_bytes=20 * MiB)
        with pytest.raises(BodyTooLarge):
            await fetcher.fetch(f"{base}/")

    assert small.body == b"<p>" + b"z" * 12 * MiB


# --- network failures --------------------------------------------------------------------------


async def test_connection_refused(fetcher: Fetcher) -> None:
    url = f"http://127.0.0.1:{unused_port()}/"

    with pytest.raises(NetworkError) as caught:
        await fetcher.fetch(url)

    assert type(caught.value) is NetworkError
    assert caught.value.url == url
    assert caught.value.retryable


async def test_connection_closed_mid_body(fetcher: Fetcher) -> None:
    base, server = await serve_raw(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n<html>partial"
    )
    async with server:
        with pytest.raises(NetworkError):
            await fetcher.fetch(f"{base}/")


async def test_garbage_instead_of_http(fetcher: Fetcher) -> None:
    base, server = await serve_raw(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
    async with server:
        with pytest.raises(NetworkError):
            await fetcher.fetch(f"{base}/")


@pytest.mark.parametrize(
    ("url", "reason"), [("ftp://127.0.0.1/x", "scheme"), ("http://127.0.0.1:99999/", "unparsable")]
)
async def test_unrequestable_url(fetcher: Fetcher, url: str, reason: str) -> None:
    with pytest.raises(UrlError) as caught:
        await fetcher.fetch(url)

    assert caught.value.reason == reason


# --- request headers ---------------------------------------------------------------------------


async def test_default_and_custom_headers_are_sent(site: str, fetcher: Fetcher) -> None:
    result = await fetcher.fetch(
        f"{site}/echo",
        headers={"If-None-Match": '"abc"', "If-Modified-Since": "Wed, 21 Oct 2015 07:28:00 GMT"},
    )
    sent = json.loads(result.body)

    assert sent["User-Agent"] == UA
    assert sent["Accept"] == DEFAULT_ACCEPT
    assert sent["Accept-Encoding"] == ACCEPT_ENCODING
    assert sent["If-None-Match"] == '"abc"'
    assert sent["If-Modified-Since"] == "Wed, 21 Oct 2015 07:28:00 GMT"


async def test_cookies_are_not_kept(site: str, fetcher: Fetcher) -> None:
    await fetcher.fetch(f"{site}/cookie")
    result = await fetcher.fetch(f"{site}/echo")

    assert "Cookie" not in json.loads(result.body)


# --- retries -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 0 ", 0.0),
        ("Wed, 21 Oct 2015 07:29:00 GMT", 60.0),
        ("Wednesday, 21-Oct-15 07:28:30 GMT", 30.0),
        ("Wed, 21 Oct 2015 07:00:00 GMT", 0.0),
        ("-5", None),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(value: str | None, seconds: float | None) -> None:
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)

    assert parse_retry_after(value, now=now) == seconds


def test_retry_delays_double_with_bounded_jitter() -> None:
    policy = RetryPolicy(max_retries=3, backoff_base=1.0, rng=random.Random(1234))

    for _ in range(200):
        delays = [policy.delay(attempt) for attempt in (1, 2, 3)]
        for attempt, delay in enumerate(delays, start=1):
            assert delay is not None
            assert 0.8 * 2 ** (attempt - 1) <= delay <= 1.2 * 2 ** (attempt - 1)
    assert policy.delay(4) is None


def test_retry_jitter_is_seeded() -> None:
    first = RetryPolicy(rng=random.Random(7))
    second = RetryPolicy(rng=random.Random(7))

    assert [first.delay(n) for n in (1, 2, 3)] == [second.delay(n) for n in (1, 2, 3)]


def test_retry_after_wins_when_longer_and_everything_is_capped() -> None:
    policy = RetryPolicy(max_retries=20, backoff_base=1.0, max_delay=600.0, rng=random.Random(0))

    assert policy.delay(1, retry_after=30.0) == 30.0
    assert 0.8 <= policy.delay(1, retry_after=0.1) <= 1.2  # type: ignore[operator]
    assert policy.delay(1, retry_after=5000.0) == 600.0
    assert policy.delay(15) == 600.0


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (429, True),
        (500, True),
        (503, True),
        (599, True),
        (200, False),
        (301, False),
        (404, False),
        (418, False),
    ],
)
def test_is_retryable_status(status: int, retryable: bool) -> None:
    assert is_retryable_status(status) is retryable


async def test_scheme_is_case_insensitive(site: str, fetcher: Fetcher) -> None:
    result = await fetcher.fetch(site.replace("http://", "HTTP://") + "/page")

    assert result.status == 200
