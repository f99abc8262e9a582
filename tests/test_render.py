"""Pages drawn by JavaScript, rendered in headless Chromium when the renderer is enabled."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from aiohttp import web

from conftest import IN_CI, SettingsFactory, serve
from harvestman.render import Renderer, RenderError, renderer_unavailable
from support.crawling import crawl

BROWSER = "/usr/bin/chromium"
WHY_NOT = renderer_unavailable(BROWSER)
if WHY_NOT is not None:
    if IN_CI:
        pytest.fail(f"rendering tests need Chromium and Playwright in CI: {WHY_NOT}")
    pytest.skip(f"rendering needs Chromium and Playwright: {WHY_NOT}", allow_module_level=True)

PARAGRAPH = "Text the script drew, long enough to count as a real paragraph of content. " * 4
APP = (
    "<html><head><title>Loading</title></head><body>"
    "<noscript>Please enable JavaScript to use this app.</noscript><div id=root></div>"
    "<script>document.title = 'Rendered app';"
    f"document.getElementById('root').innerHTML = '<p>{PARAGRAPH}</p>"
    "<img src=/logo.png><a href=/next.html>next</a>';</script></body></html>"
)
STUCK = (  # an app whose script draws nothing: it needs JavaScript, and a browser does not help
    "<html><head><title>Stuck</title></head><body>"
    "<noscript>Please enable JavaScript to use this app.</noscript><div id=root></div>"
    "<script>var nothing = 1;</script></body></html>"
)
NEXT = f"<html><head><title>Next</title></head><body><p>{PARAGRAPH}</p></body></html>"


class App:
    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.Response:
        self.hits[request.path] += 1
        bodies = {"/": APP, "/stuck.html": STUCK, "/next.html": NEXT}
        if request.path in bodies:
            return web.Response(text=bodies[request.path], content_type="text/html")
        return web.Response(status=404, text="not found")


def settings_for(make_settings: SettingsFactory, **overrides: Any) -> Any:
    # The hit counts below tell a fetch from a render: a busy machine's fetch timeout (1 s in
    # make_settings) must not add a retry to them.
    values = {
        "render_enabled": True,
        "render_browser": BROWSER,
        "render_settle": 0.5,
        "fetch_timeout": 10.0,
    }
    return make_settings(**{"discovery_sitemaps": False, **values, **overrides})


async def test_a_page_drawn_by_javascript_is_rendered_stored_and_its_links_followed(
    make_settings: SettingsFactory,
) -> None:
    app = App()
    async with serve(app.handle) as port:
        app.port = port
        crawled = await crawl(settings_for(make_settings), [app.url("/")])
        crawler, pages = crawled.crawler, crawled.pages_by_url

    home = pages[app.url("/")]
    assert (home["validation_status"], home["rejection_reason"]) == ("ok", None)
    assert home["title"] == "Rendered app"
    assert home["content_hash"] is not None
    assert pages[app.url("/next.html")]["title"] == "Next"  # the link the script drew
    assert crawler.stats["render/pages"] == 1
    # The page and the one its script linked, each counted once (a render is not a new page).
    assert crawler.stats["parse/pages"] == 2
    assert crawler.stats["validate/soft/needs_js"] == 1
    # One fetch and one render of the page; the image the script added was never asked for.
    assert app.hits["/"] == 2
    assert app.hits["/logo.png"] == 0


async def test_a_page_still_empty_after_rendering_stays_needs_js(
    make_settings: SettingsFactory,
) -> None:
    app = App()
    async with serve(app.handle) as port:
        app.port = port
        crawled = await crawl(settings_for(make_settings), [app.url("/stuck.html")])
        crawler, pages = crawled.crawler, crawled.pages_by_url

    stuck = pages[app.url("/stuck.html")]
    assert (stuck["validation_status"], stuck["rejection_reason"]) == ("soft", "needs_js")
    assert stuck["content_hash"] is None
    assert crawler.stats["render/still_needs_js"] == 1
    assert crawler.stats["parse/pages"] == 1


async def test_without_the_renderer_the_page_is_recorded_as_needs_js(
    make_settings: SettingsFactory,
) -> None:
    app = App()
    async with serve(app.handle) as port:
        app.port = port
        settings = settings_for(make_settings, render_browser="/nonexistent/chromium")
        crawled = await crawl(settings, [app.url("/")])
        crawler, pages = crawled.crawler, crawled.pages_by_url

    assert crawler.renderer is None  # a browser that is not there: logged, and the crawl goes on
    home = pages[app.url("/")]
    assert (home["validation_status"], home["rejection_reason"]) == ("soft", "needs_js")
    assert app.url("/next.html") not in pages
    assert app.hits["/"] == 1


async def test_a_render_that_fails_raises_a_render_error() -> None:
    renderer = Renderer(browser=BROWSER, user_agent="test", timeout=5.0, settle=0.0)
    try:
        with pytest.raises(RenderError, match=r"rendering http://127\.0\.0\.1:9/ failed"):
            await renderer.render("http://127.0.0.1:9/")  # nothing listens on port 9
    finally:
        await renderer.close()
