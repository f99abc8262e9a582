"""The browser goes out only through the guard: a hostile page on an admitted origin tries every
way a browser has to reach another port of 127.0.0.1, and the internal server there counts every
TCP connection and UDP datagram it gets (none, unless the allow-list opens it)."""

from __future__ import annotations

import asyncio
import ipaddress
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from conftest import IN_CI, SettingsFactory, serve
from harvestman.guard import NetworkGuard
from harvestman.render import Renderer, RenderError, renderer_unavailable
from support.crawling import crawl

BROWSER = "/usr/bin/chromium"
WHY_NOT = renderer_unavailable(BROWSER)
if WHY_NOT is not None:
    if IN_CI:
        pytest.fail(f"rendering tests need Chromium and Playwright in CI: {WHY_NOT}")
    pytest.skip(f"rendering needs Chromium and Playwright: {WHY_NOT}", allow_module_level=True)

UA = "Harvestman-test/1.0"
SECRET_TITLE = "Internal secret"
SECRET_PAGE = f"<html><head><title>{SECRET_TITLE}</title></head><body>s3cr3t</body></html>"


class Internal:
    """The server an attacker wants read: counts TCP connections, request lines and UDP
    datagrams (STUN, QUIC) on one port; answers every HTTP request with the secret page."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: Counter[str] = Counter()
        self.datagrams = 0
        self.port = 0

    @property
    def hits(self) -> int:
        return self.connections + self.datagrams

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            self.requests[line.decode("latin-1").split(" ")[1:2][0] if b" " in line else "?"] += 1
            body = SECRET_PAGE.encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nAccess-Control-Allow-Origin: *\r\n"
                b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
        except (OSError, TimeoutError, IndexError):
            pass
        finally:
            writer.close()


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, internal: Internal) -> None:
        self.internal = internal

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.internal.datagrams += 1


@pytest.fixture
async def internal() -> AsyncIterator[Internal]:
    found = Internal()
    server = await asyncio.start_server(found._handle, "127.0.0.1", 0)
    found.port = server.sockets[0].getsockname()[1]
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(
        lambda: _Datagrams(found), local_addr=("127.0.0.1", found.port)
    )
    try:
        yield found
    finally:
        transport.close()
        server.close()
        await server.wait_closed()


# The hostile page: each way in is tried, through a redirect of the admitted site and directly.
ATTACK = """<html><head><title>Attack</title>
<script src="/to/script.js"></script>
<script src="{secret}/direct-script.js"></script>
<link rel=stylesheet href="/to/style.css">
<link rel=preconnect href="{secret}">
<link rel=prefetch href="{secret}/prefetch">
</head><body>
<p id=out>drawn</p>
<iframe src="/to/frame"></iframe>
<iframe src="{secret}/direct-frame"></iframe>
<iframe src="file:///etc/hostname"></iframe>
<script>
function note(what) {{ document.getElementById('out').textContent += ' ' + what; }}
fetch('/to/api').then(r => r.text()).then(t => note('fetch:' + t), () => note('fetch-failed'));
fetch('{secret}/direct-api').then(r => r.text()).then(t => note(t), () => 0);
fetch('ftp://127.0.0.1:{port}/ftp').then(() => note('ftp'), () => 0);
var x = new XMLHttpRequest(); x.open('GET', '/to/xhr'); x.send();
navigator.sendBeacon('{secret}/beacon', 'x');
new EventSource('/to/events');
for (const scheme of ['ws', 'wss']) {{
  try {{
    const ws = new WebSocket(scheme + '://127.0.0.1:{port}/' + scheme);
    ws.onopen = () => note('ws-open');
  }} catch (e) {{}}
}}
try {{ new WebSocket('ws://localhost:{port}/ws-by-name'); }} catch (e) {{}}
try {{ new WebTransport('https://127.0.0.1:{port}/webtransport'); }} catch (e) {{}}
try {{
  const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.1:{port}'}},
      {{urls: 'turn:127.0.0.1:{port}?transport=udp', username: 'u', credential: 'c'}}]}});
  pc.createDataChannel('x');
  pc.createOffer().then(o => pc.setLocalDescription(o));
}} catch (e) {{}}
</script></body></html>"""


class Site:
    """The admitted site: the hostile page, redirects to the internal server, and a page that
    redirects a browser's navigation (only) there."""

    def __init__(self, internal: Internal) -> None:
        self.internal = internal
        self.hits: Counter[str] = Counter()
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.hits[request.path] += 1
        secret = f"http://127.0.0.1:{self.internal.port}"
        if request.path.startswith("/to/"):
            location = f"{secret}/{request.path.removeprefix('/to/')}"
            return web.Response(status=302, headers={"Location": location})
        if request.path == "/attack":
            page = ATTACK.format(secret=secret, port=self.internal.port)
            return web.Response(text=page, content_type="text/html")
        if request.path in LATER:
            page = LATER[request.path].format(secret=secret)
            return web.Response(text=page, content_type="text/html")
        if request.path == "/app":
            # A crawler's fetch sees an app shell; a browser's navigation is sent inside.
            if request.headers.get("Sec-Fetch-Mode") == "navigate":
                raise web.HTTPFound(f"{secret}/secret")
            return web.Response(text=SHELL, content_type="text/html")
        return web.Response(status=404, text="no")


# Pages that move the browser inside after they loaded.
LATER = {
    "/meta": "<html><head><meta http-equiv=refresh content='0;url={secret}/meta'></head></html>",
    "/script": "<html><body><script>location.href = '{secret}/script';</script></body></html>",
    "/form": (
        "<html><body><form id=f method=post action='{secret}/form'><input name=a value=b>"
        "</form><script>f.submit()</script></body></html>"
    ),
}
SHELL = (
    "<html><head><title>Loading</title></head><body>"
    "<noscript>Please enable JavaScript to use this app.</noscript><div id=root></div>"
    "<script>var nothing = 1;</script></body></html>"
)


@pytest.fixture
async def site(internal: Internal) -> AsyncIterator[Site]:
    found = Site(internal)
    async with serve(found.handle) as port:
        found.port = port
        yield found


async def render(guard: NetworkGuard, url: str) -> tuple[bytes | None, str | None, Counter[str]]:
    """The rendered page or the render's error, and the egress proxy's counts."""
    renderer = Renderer(browser=BROWSER, user_agent=UA, timeout=10.0, settle=1.5, guard=guard)
    counts: Counter[str] = Counter()
    try:
        rendered = await renderer.render(url)
        return rendered.html, None, counts
    except RenderError as exc:
        return None, str(exc), counts
    finally:
        if renderer.egress is not None:
            counts.update(renderer.egress.counts)
        await renderer.close()


async def test_a_hostile_page_reaches_nothing_the_guard_refuses(
    site: Site, internal: Internal
) -> None:
    guard = NetworkGuard()
    guard.admit(ipaddress.ip_address("127.0.0.1"), site.port)
    html, error, counts = await render(guard, site.url("/attack"))
    assert (internal.connections, internal.datagrams, dict(internal.requests)) == (0, 0, {})
    assert error is None
    assert html is not None
    assert b"drawn" in html
    assert b"s3cr3t" not in html
    assert counts["refused"] >= 8
    assert site.hits["/attack"] == 1


async def test_the_same_page_reaches_the_internal_server_when_the_allow_list_opens_it(
    site: Site, internal: Internal
) -> None:
    # The control: each attack above works, so its refusal was the guard's.
    guard = NetworkGuard([f"127.0.0.1:{site.port}", f"127.0.0.1:{internal.port}"])
    html, error, _ = await render(guard, site.url("/attack"))
    assert error is None
    assert html is not None
    assert set(internal.requests) >= {
        "/script.js",
        "/direct-script.js",
        "/style.css",
        "/frame",
        "/direct-frame",
        "/api",
        "/direct-api",
        "/xhr",
        "/beacon",
        "/ws",
    }
    assert internal.datagrams == 0  # WebRTC's UDP does not leave, even to an allowed address


async def test_a_navigation_redirected_inside_fails_the_render(
    site: Site, internal: Internal
) -> None:
    guard = NetworkGuard()
    guard.admit(ipaddress.ip_address("127.0.0.1"), site.port)
    html, error, _ = await render(guard, site.url("/app"))
    assert html is None
    assert error is not None
    assert "the browser was refused" in error
    assert f"127.0.0.1 port {internal.port} is a non-public address" in error
    assert internal.hits == 0


@pytest.mark.parametrize("path", sorted(LATER))
async def test_a_page_that_moves_inside_after_it_loaded_fails_the_render(
    site: Site, internal: Internal, path: str
) -> None:
    guard = NetworkGuard()
    guard.admit(ipaddress.ip_address("127.0.0.1"), site.port)
    html, error, _ = await render(guard, site.url(path))
    assert internal.hits == 0
    assert html is None
    assert error is not None
    assert f"the browser was refused 127.0.0.1 port {internal.port}" in error


async def test_a_crawl_does_not_store_the_page_a_navigation_redirect_reaches(
    make_settings: SettingsFactory, site: Site, internal: Internal
) -> None:
    settings = make_settings(
        render_enabled=True,
        render_browser=BROWSER,
        render_settle=0.5,
        fetch_timeout=10.0,
        discovery_sitemaps=False,
    )
    crawled = await crawl(settings, [site.url("/app")])
    page = crawled.pages_by_url[site.url("/app")]
    assert page["title"] != SECRET_TITLE
    assert (page["validation_status"], page["rejection_reason"]) == ("soft", "needs_js")
    assert "the browser was refused" in (page["error"] or "")
    assert internal.hits == 0


@pytest.mark.parametrize("url", ["file:///etc/hostname", "ftp://127.0.0.1/", "data:text/html,x"])
async def test_only_http_and_https_pages_are_rendered(url: str) -> None:
    renderer = Renderer(browser=BROWSER, user_agent=UA, guard=NetworkGuard())
    with pytest.raises(RenderError, match="only http and https pages are rendered"):
        await renderer.render(url)
    assert renderer.egress is None  # refused before a browser was started
