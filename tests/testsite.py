"""A small real website on 127.0.0.1 holding every case the crawler must handle.

``TestSite`` serves it from an aiohttp.web application on an ephemeral port and counts what it
receives; ``EXPECTED`` and its siblings say what a correct crawl of it ends with::

    async with TestSite(slow_seconds=3.0) as site:
        ...  # crawl site.url("/") with a 1 s timeout and a 1 MiB body cap
        assert site.hits["/status/500"] == EXPECTED_HITS["/status/500"]

Every path below is reachable by links from ``/`` within depth 2, so the expectations hold for
any ``max_depth >= 2`` (the default 3 included). Paths in the expectations are path + query of the
*normalized* URL, relative to ``site.base`` (``"/"`` for the root).

Run it by hand with ``python tests/testsite.py --port 8080``; it serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import struct
import time
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Final, TypedDict

from aiohttp import web

from harvestman.errors import (
    BodyTooLarge,
    FetchError,
    FetchTimeout,
    HttpStatusError,
    RedirectLoop,
    RedirectRefused,
    TooManyRedirects,
)

MiB: Final = 1024 * 1024
BOMB_INFLATED_BYTES: Final = 200 * MiB


class Expected(TypedDict):
    """The outcome of a correct crawl of the site, as path + query sets (see module docstring)."""

    completed: frozenset[str]
    failed: dict[str, type[FetchError]]
    blocked: frozenset[str]
    never_requested: frozenset[str]


EXPECTED: Final[Expected] = {
    # A final 2xx; for the redirect chain the first URL of the chain is the row.
    "completed": frozenset(
        {
            "/",
            "/about.html",
            "/articles/",
            "/articles/deep/one.html",
            "/docs/guide/intro.html",
            "/docs/guide/next.html",
            "/docs/ref.html",
            "/item?id=1",
            "/frag.html",
            "/list?page=1",
            "/list?page=2",
            "/private/open.html",
            "/redirect/1",
            "/status/503-once",
            "/status/429-once",
            "/files/image.png",
            "/files/report.pdf",
            "/files/data.json",
            "/malformed.html",
            "/from-malformed.html",
            "/charset/meta-1252.html",
            "/charset/wrong-header.html",
            "/charset/shift-jis.html",
            "/charset/none.html",
        }
    ),
    # ``error_class`` in the store is the class's ``__name__``.
    "failed": {
        "/status/404": HttpStatusError,
        "/status/500": HttpStatusError,
        "/slow.html": FetchTimeout,
        "/loop/a": RedirectLoop,
        "/hops/1": TooManyRedirects,
        "/redirect/to-private": RedirectRefused,
        "/redirect/offsite": RedirectRefused,
        "/big/with-length.html": BodyTooLarge,
        "/big/chunked.html": BodyTooLarge,
        "/bomb.html": BodyTooLarge,
    },
    "blocked": frozenset({"/private/", "/private/secret.html"}),
    # Keyed as the server receives them: a hit on any of these is a crawler bug. "/elsewhere" and
    # "/offsite-target" live on http://localhost:PORT, a different host out of scope.
    "never_requested": frozenset(
        {
            "/private/",
            "/private/secret.html",
            "/private/x",
            "/elsewhere",
            "/offsite-target",
            "/hops/7",
            "/hops/8",
            "/articles/one.html",
            "/item?utm_source=x&id=1",
            "/item?id=1&utm_campaign=y&fbclid=abc",
            "/style.css",
            "/app.js",
            "/logo.png",
        }
    ),
}

# Final HTTP status of each ``HttpStatusError`` failure.
EXPECTED_STATUS: Final[dict[str, int]] = {"/status/404": 404, "/status/500": 500}

# Where a completed redirect chain ends (the page row records this final URL).
EXPECTED_FINAL_URLS: Final[dict[str, str]] = {"/redirect/1": "/redirect/final.html"}

# Link depth from "/" of every recorded URL: 0 for the root, 2 for these, 1 for the rest.
_DEPTH_2: Final = frozenset(
    {
        "/articles/deep/one.html",
        "/docs/guide/next.html",
        "/docs/ref.html",
        "/list?page=2",
        "/from-malformed.html",
    }
)
EXPECTED_DEPTHS: Final[dict[str, int]] = {
    path: 0 if path == "/" else 2 if path in _DEPTH_2 else 1
    for path in EXPECTED["completed"] | EXPECTED["failed"].keys() | EXPECTED["blocked"]
}

# Exact request counts per path + query as received, for a crawl with 3 retries on 5xx, 429 and
# network errors (a timeout is one) and at most 5 redirects. robots.txt is read once per host.
EXPECTED_HITS: Final[dict[str, int]] = {
    **dict.fromkeys(EXPECTED["completed"], 1),
    "/status/503-once": 2,
    "/status/429-once": 2,
    "/status/404": 1,
    "/status/500": 4,
    "/slow.html": 4,
    "/redirect/2": 1,
    "/redirect/3": 1,
    "/redirect/final.html": 1,
    "/loop/a": 1,
    "/loop/b": 1,
    **{f"/hops/{n}": 1 for n in range(1, 7)},
    "/redirect/to-private": 1,
    "/redirect/offsite": 1,
    "/big/with-length.html": 1,
    "/big/chunked.html": 1,
    "/bomb.html": 1,
    "/robots.txt": 1,
    **dict.fromkeys(EXPECTED["never_requested"], 0),
}

# Titles a correct parser extracts, charset detection included: the wrong-header page declares
# UTF-8 in its header but is ISO-8859-1 (not valid UTF-8), as its <meta> says.
EXPECTED_TITLES: Final[dict[str, str]] = {
    "/": "Harvestman test site",
    "/about.html": "About the test site",
    "/articles/": "Articles",
    "/articles/deep/one.html": "Article one",
    "/docs/guide/intro.html": "Guide: introduction",
    "/docs/guide/next.html": "Guide: next steps",
    "/docs/ref.html": "Reference",
    "/item?id=1": "Item 1",
    "/frag.html": "Fragments",
    "/list?page=1": "List, page 1",
    "/list?page=2": "List, page 2",
    "/private/open.html": "Open private page",
    "/redirect/1": "Redirect target",
    "/status/503-once": "Recovered after 503",
    "/status/429-once": "Recovered after 429",
    "/malformed.html": "Malformed page",
    "/from-malformed.html": "Reached from the malformed page",
    "/charset/meta-1252.html": "Café – crème brûlée",
    "/charset/wrong-header.html": "Naïve façade, déjà vu",
    "/charset/shift-jis.html": "日本語のページ",
    "/charset/none.html": "Ünïcödé — 日本語 ✓",
}


def quick_expectations() -> tuple[Expected, dict[str, int], dict[str, int]]:
    """``EXPECTED``, ``EXPECTED_HITS`` and ``EXPECTED_DEPTHS`` for ``TestSite(quick=True)``,
    whose index does not link ``/slow.html``."""
    failed = {path: error for path, error in EXPECTED["failed"].items() if path != "/slow.html"}
    depths = {path: depth for path, depth in EXPECTED_DEPTHS.items() if path != "/slow.html"}
    return {**EXPECTED, "failed": failed}, {**EXPECTED_HITS, "/slow.html": 0}, depths


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@functools.cache
def gzip_bomb() -> bytes:
    """A gzip stream inflating to ``BOMB_INFLATED_BYTES`` zeros (~200 KB; built once, ~0.6 s)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MiB)
    parts = [compressor.compress(zeros) for _ in range(BOMB_INFLATED_BYTES // MiB)]
    parts.append(compressor.flush())
    return b"".join(parts)


@functools.cache
def big_page(size: int) -> bytes:
    """An HTML document of exactly ``size`` bytes (at least 200)."""
    head = b"<!DOCTYPE html><html><head><title>Big</title></head><body><p>"
    tail = b"</p></body></html>"
    return head + b"a" * (size - len(head) - len(tail)) + tail


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x80\x00")  # filter byte + one orange pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


PNG: Final = _png()
PDF: Final = (
    b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
    b"2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n"
    b"trailer << /Root 1 0 R >>\n%%EOF\n"
)
JSON: Final = json.dumps({"name": "harvestman test site", "links": ["/about.html"]}).encode()

MALFORMED: Final = (
    b"<html><head><title>Malformed page</title>\n<body>\n"
    b"<div><p>Unclosed paragraph <b>bold <i>italic\n</div></div></span></td>\n"
    b"<p>The markup of this page is broken on purpose, but its words are real ones.\n"
    b"garbage \x00\xff\xfe\x80\x9d bytes <<<>>> &bogus; &#xZZ;\n"
    b'<a href="/from-malformed.html">a link that survives</a>\n'
    b"<table><tr><td>cell <a href=/about.html>unquoted href</a>\n"
    b'<p <div class="x>never closed\n'
)


def _html(
    title: str,
    body: str,
    *,
    description: str = "",
    head: str = "",
    charset: str | None = "utf-8",
) -> str:
    declared = f'<meta charset="{charset}">\n' if charset else ""
    meta = f'<meta name="description" content="{description}">\n' if description else ""
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n{declared}'
        f"<title>{title}</title>\n{meta}{head}</head>\n<body>\n<h1>{title}</h1>\n{body}\n"
        f"<p>{FILLER}</p>\n"
        f'<p><a href="/">Home</a></p>\n</body>\n</html>\n'
    )


# Every page says something: a crawler that rejects garbage pages must keep these.
FILLER: Final = "This page belongs to the Harvestman test site, served on 127.0.0.1 for tests."

# Garbage pages, linked from nowhere: tests seed them. Path -> (validation status, reason).
GARBAGE: Final[dict[str, tuple[str, str]]] = {
    "/garbage/enable-js.html": ("soft", "needs_js"),
    "/garbage/denied.html": ("hard", "access_denied"),
    "/garbage/shell.html": ("soft", "too_small"),
}
GARBAGE_BODIES: Final[dict[str, str]] = {
    "/garbage/enable-js.html": (
        "<html><head><title>App</title><script src=/app.js></script></head><body>"
        '<noscript>You need to enable JavaScript to run this app.</noscript><div id="root">'
        "</div><script>boot()</script></body></html>"
    ),
    "/garbage/denied.html": (
        "<html><head><title>Access denied</title></head><body><h1>Access denied</h1>"
        "<p>You don't have permission to access this server.</p></body></html>"
    ),
    "/garbage/shell.html": "<html><head><title>x</title></head><body></body></html>",
}


def _page(title: str, body: str = "", *, description: str = "", head: str = "") -> Handler:
    text = _html(title, body, description=description, head=head)

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=text, content_type="text/html")

    return handler


def _raw(html: str) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=html, content_type="text/html")

    return handler


def _redirect(location: str, status: int = 302) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=status, headers={"Location": location})

    return handler


def _bytes(body: bytes, content_type: str) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, headers={"Content-Type": content_type})

    return handler


def _charset_pages() -> dict[str, Handler]:
    lorem = "Le cœur a ses raisons que la raison ne connaît point. " * 3
    meta_1252 = _html(
        "Café – crème brûlée",
        f"<p>{lorem}</p>",
        charset="windows-1252",
    )
    wrong = _html(
        "Naïve façade, déjà vu",
        "<p>Déjà vu: the header says UTF-8, the bytes are ISO-8859-1.</p>",
        head='<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">\n',
        charset=None,
    )
    sjis = _html(
        "日本語のページ", "<p>これはシフトJISで書かれた日本語のページです。</p>", charset=None
    )
    none = _html(
        "Ünïcödé — 日本語 ✓",
        "<p>No charset in the header nor in the document: these bytes are UTF-8. "
        "Größenwahn, smørrebrød, 日本語の文章, ✓ ✓ ✓.</p>",
        charset=None,
    )
    return {
        "/charset/meta-1252.html": _bytes(meta_1252.encode("cp1252"), "text/html"),
        "/charset/wrong-header.html": _bytes(
            wrong.encode("iso-8859-1"), "text/html; charset=utf-8"
        ),
        "/charset/shift-jis.html": _bytes(sjis.encode("shift_jis"), "text/html; charset=Shift_JIS"),
        "/charset/none.html": _bytes(none.encode("utf-8"), "text/html"),
    }


class TestSite:
    """The test website, served on 127.0.0.1 while inside ``async with``.

    ``hits`` counts requests per path + query exactly as received (any method, unknown paths
    too) and ``log`` keeps ``(time.monotonic(), path)`` per request in arrival order.
    ``/status/503-once`` and ``/status/429-once`` fail on their first request only;
    ``reset_counts()`` clears the counters and re-arms those first-time failures.

    ``quick=True`` is the variant for tests that are not about slowness: the index links no
    ``/slow.html`` (whose timeout and retries hold a crawl for 4 s or more) and
    ``/status/429-once`` asks for no wait (``Retry-After: 0``). ``expected`` and
    ``expected_hits`` are what a correct crawl of the variant being served ends with.
    """

    __test__ = False  # not a pytest test class despite its name

    def __init__(
        self,
        *,
        port: int = 0,
        slow_seconds: float = 3.0,
        big_bytes: int = 2 * MiB,
        crawl_delay: float | None = None,
        quick: bool = False,
    ) -> None:
        self.slow_seconds = slow_seconds
        self.quick = quick
        self.expected, self.expected_hits, self.expected_depths = (
            quick_expectations() if quick else (EXPECTED, EXPECTED_HITS, EXPECTED_DEPTHS)
        )
        self.big_bytes = big_bytes
        self.crawl_delay = crawl_delay
        self.hits: Counter[str] = Counter()
        self.log: list[tuple[float, str]] = []
        self._requested_port = port
        self._port: int | None = None
        self._attempts: Counter[str] = Counter()
        self._runner: web.AppRunner | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the test site is not running")
        return self._port

    @property
    def host(self) -> str:
        """``"127.0.0.1:PORT"``."""
        return f"127.0.0.1:{self.port}"

    @property
    def base(self) -> str:
        """``"http://127.0.0.1:PORT"``, no trailing slash."""
        return f"http://{self.host}"

    @property
    def offsite_base(self) -> str:
        """``"http://localhost:PORT"``: the same server under a host name that is out of scope."""
        return f"http://localhost:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base + path

    def reset_counts(self) -> None:
        self.hits.clear()
        self.log.clear()
        self._attempts.clear()

    async def __aenter__(self) -> TestSite:
        # Build the bomb before serving: built on first request it can outlast a 1 s timeout
        # on a busy machine, and the retry would count as a second hit.
        await asyncio.to_thread(gzip_bomb)
        app = web.Application(middlewares=[self._count])
        for path, handler in self._routes().items():
            app.router.add_get(path, handler)
        # Cancel handlers whose client went away so the slow page does not delay shutdown.
        self._runner = web.AppRunner(
            app, handler_cancellation=True, shutdown_timeout=0.5, access_log=None
        )
        await self._runner.setup()
        tcp = web.TCPSite(self._runner, "127.0.0.1", self._requested_port)
        await tcp.start()
        self._port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        self._runner = None
        self._port = None

    @web.middleware
    async def _count(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.hits[request.raw_path] += 1
        self.log.append((time.monotonic(), request.raw_path))
        return await handler(request)

    def _routes(self) -> dict[str, Handler]:
        garbage = {path: _raw(body) for path, body in GARBAGE_BODIES.items()}
        return {
            **garbage,
            "/robots.txt": self._robots,
            "/sitemap.xml": self._sitemap,
            "/": self._index,
            "/about.html": _page(
                "About the test site",
                "<p>Plain page with a canonical link carrying a tracking parameter.</p>",
                description="What this site is for.",
                head='<link rel="canonical" href="/about.html?utm_source=canonical">\n',
            ),
            "/articles/": _page(
                "Articles",
                '<p><a href="one.html">Article one</a> <a href="one.html#top">again</a>'
                ' <a href="/about.html">About</a></p>',
                description="Relative links resolved against <base href>.",
                head='<base href="/articles/deep/">\n',
            ),
            "/articles/deep/one.html": _page("Article one", "<p>Reached through base.</p>"),
            "/docs/guide/intro.html": _page(
                "Guide: introduction",
                '<p><a href="../ref.html">Reference</a> <a href="./next.html">Next</a>'
                ' <a href="next.html?utm_source=docs">Next, tracked</a>'
                ' <a href="../../about.html">About</a></p>',
                description="Dot segments in relative links.",
            ),
            "/docs/guide/next.html": _page("Guide: next steps"),
            "/docs/ref.html": _page("Reference"),
            "/item": self._item,
            "/frag.html": _page(
                "Fragments",
                '<h2 id="x">X</h2><h2 id="y">Y</h2><a href="#x">to x</a> <a href="">self</a>',
            ),
            "/list": self._list,
            "/private/": _page("Private index"),
            "/private/secret.html": _page("Secret"),
            "/private/open.html": _page("Open private page", "<p>Allowed by robots.txt.</p>"),
            "/private/x": _page("Private redirect target"),
            "/elsewhere": _page("Out of scope"),
            "/offsite-target": _page("Out of scope redirect target"),
            # Relative Location on the second hop: the fetcher resolves it against the hop URL.
            "/redirect/1": _redirect("/redirect/2", 301),
            "/redirect/2": _redirect("3", 302),
            "/redirect/3": _redirect("/redirect/final.html", 307),
            "/redirect/final.html": _page(
                "Redirect target", '<p><a href="../about.html">About</a></p>'
            ),
            "/loop/a": _redirect("/loop/b"),
            "/loop/b": _redirect("/loop/a"),
            **{f"/hops/{n}": _redirect(f"/hops/{n + 1}") for n in range(1, 8)},
            "/hops/8": _page("Seven hops away"),
            "/redirect/to-private": _redirect("/private/x"),
            "/redirect/offsite": self._redirect_offsite,
            "/status/404": self._status_404,
            "/status/500": self._status_500,
            "/status/503-once": self._status_503_once,
            "/status/429-once": self._status_429_once,
            "/slow.html": self._slow,
            "/big/with-length.html": self._big_with_length,
            "/big/chunked.html": self._big_chunked,
            "/bomb.html": self._bomb,
            "/files/image.png": _bytes(PNG, "image/png"),
            "/files/report.pdf": _bytes(PDF, "application/pdf"),
            "/files/data.json": _bytes(JSON, "application/json"),
            "/malformed.html": _bytes(MALFORMED, "text/html"),
            "/from-malformed.html": _page("Reached from the malformed page"),
            **_charset_pages(),
        }

    async def _robots(self, request: web.Request) -> web.Response:
        delay = f"Crawl-delay: {self.crawl_delay}\n" if self.crawl_delay is not None else ""
        body = (
            "# Harvestman test site\n"
            "User-agent: otherbot\n"
            "Disallow: /\n"
            "\n"
            "User-agent: *\n"
            "Disallow: /private/\n"
            "Allow: /private/open.html\n"
            f"{delay}"
            "\n"
            f"Sitemap: {self.base}/sitemap.xml\n"
        )
        return web.Response(text=body, content_type="text/plain")

    async def _sitemap(self, request: web.Request) -> web.Response:
        # Lists only pages the links already reach, so reading it changes no expectation.
        urls = "".join(f"<url><loc>{self.base}{p}</loc></url>" for p in ("/", "/about.html"))
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>\n'
        )
        return web.Response(text=body, content_type="application/xml")

    async def _index(self, request: web.Request) -> web.Response:
        slow_link = "" if self.quick else '<a href="/slow.html">Slow</a> '
        body = f"""
<img src="/logo.png" alt="logo">
<h2>Plain and relative</h2>
<p><a href="about.html">About</a> <a href="/about.html">About (duplicate)</a>
<a href="./about.html#team">About (fragment)</a> <a href="/articles/">Articles (base href)</a>
<a href="docs/guide/intro.html">Guide</a></p>
<h2>Queries and fragments</h2>
<p><a href="/item?utm_source=x&amp;id=1">Item, tracked</a> <a href="/item?id=1">Item</a>
<a href="/item?id=1&amp;utm_campaign=y&amp;fbclid=abc">Item, tracked twice</a>
<a href="/frag.html#x">Fragment x</a> <a href="/frag.html#y">Fragment y</a>
<a href="/list?page=1">List</a></p>
<h2>Not crawlable</h2>
<p><a href="mailto:crawler@example.com">Mail</a> <a href="javascript:void(0)">Script</a>
<a href="tel:+15550100">Phone</a> <a href="data:text/html,hello">Data</a>
<a href="ftp://127.0.0.1/file.txt">FTP</a>
<a href="http://localhost:{self.port}/elsewhere">Another host</a></p>
<h2>robots.txt</h2>
<p><a href="/private/">Private</a> <a href="/private/secret.html">Secret</a>
<a href="/private/open.html">Open</a></p>
<h2>Redirects</h2>
<p><a href="/redirect/1">Three hops</a> <a href="/loop/a">Loop</a>
<a href="/hops/1">Seven hops</a> <a href="/redirect/to-private">Into /private/</a>
<a href="/redirect/offsite">To another host</a></p>
<h2>Statuses</h2>
<p><a href="/status/404">404</a> <a href="/status/500">500</a>
<a href="/status/503-once">503 once</a> <a href="/status/429-once">429 once</a></p>
<h2>Limits</h2>
<p>{slow_link}<a href="/big/with-length.html">Big</a>
<a href="/big/chunked.html">Big, chunked</a> <a href="/bomb.html">Gzip bomb</a></p>
<h2>Not HTML</h2>
<p><a href="/files/image.png">PNG</a> <a href="/files/report.pdf">PDF</a>
<a href="/files/data.json">JSON</a></p>
<h2>Malformed and charsets</h2>
<p><a href="/malformed.html">Malformed</a> <a href="/charset/meta-1252.html">windows-1252</a>
<a href="/charset/wrong-header.html">Wrong header</a>
<a href="/charset/shift-jis.html">Shift_JIS</a> <a href="/charset/none.html">No charset</a></p>
"""
        text = _html(
            "Harvestman test site",
            body,
            description="Every case the crawler must handle, one link away.",
            head='<link rel="stylesheet" href="/style.css">\n<script src="/app.js"></script>\n',
        )
        return web.Response(text=text, content_type="text/html")

    async def _item(self, request: web.Request) -> web.Response:
        item = request.query.get("id", "?")
        return web.Response(text=_html(f"Item {item}", ""), content_type="text/html")

    async def _list(self, request: web.Request) -> web.Response:
        page = int(request.query.get("page", "1"))
        # The next page is reachable only through <link rel="next">.
        head = '<link rel="next" href="/list?page=2">\n' if page == 1 else ""
        return web.Response(
            text=_html(f"List, page {page}", "", head=head), content_type="text/html"
        )

    async def _redirect_offsite(self, request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": f"{self.offsite_base}/offsite-target"})

    async def _status_404(self, request: web.Request) -> web.Response:
        return web.Response(status=404, text=_html("Not found", ""), content_type="text/html")

    async def _status_500(self, request: web.Request) -> web.Response:
        return web.Response(status=500, text=_html("Server error", ""), content_type="text/html")

    def _is_first_attempt(self, request: web.Request) -> bool:
        self._attempts[request.path] += 1
        return self._attempts[request.path] == 1

    async def _status_503_once(self, request: web.Request) -> web.Response:
        if self._is_first_attempt(request):
            return web.Response(status=503, text="busy", content_type="text/plain")
        return web.Response(text=_html("Recovered after 503", ""), content_type="text/html")

    async def _status_429_once(self, request: web.Request) -> web.Response:
        if self._is_first_attempt(request):
            return web.Response(
                status=429,
                text="slow down",
                content_type="text/plain",
                headers={"Retry-After": "0" if self.quick else "1"},
            )
        return web.Response(text=_html("Recovered after 429", ""), content_type="text/html")

    async def _slow(self, request: web.Request) -> web.Response:
        await asyncio.sleep(self.slow_seconds)
        return web.Response(text=_html("Slow page", ""), content_type="text/html")

    async def _big_with_length(self, request: web.Request) -> web.Response:
        return web.Response(body=big_page(self.big_bytes), content_type="text/html")

    async def _big_chunked(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        body = memoryview(big_page(self.big_bytes))
        try:
            for start in range(0, len(body), 64 * 1024):
                await response.write(body[start : start + 64 * 1024])
            await response.write_eof()
        except ConnectionResetError:
            pass  # the crawler hung up once it passed its cap: that is the point
        return response

    async def _bomb(self, request: web.Request) -> web.Response:
        return web.Response(
            body=gzip_bomb(), headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}
        )


async def _serve_forever(port: int, slow_seconds: float, crawl_delay: float | None) -> None:
    async with TestSite(port=port, slow_seconds=slow_seconds, crawl_delay=crawl_delay) as site:
        print(f"Harvestman test site on {site.url('/')} (Ctrl-C stops it)", flush=True)
        await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the Harvestman test site on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--slow-seconds", type=float, default=3.0)
    parser.add_argument("--crawl-delay", type=float, default=None)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_forever(args.port, args.slow_seconds, args.crawl_delay))


if __name__ == "__main__":
    main()
