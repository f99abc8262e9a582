"""Rendering pages that need JavaScript: headless Chromium driven by Playwright (optional).

Validation marks a page ``needs_js`` when its content is drawn by scripts (an app shell, an
"enable JavaScript" notice, a browser check that passes by itself). With ``render_enabled``
and Playwright installed (``pip install 'harvestman[render]'``; the browser is the system's
Chromium, ``render_browser``), the crawler hands such a page to :class:`Renderer` within the
same turn of its host, so the render is as polite as the fetch, and parses the DOM the scripts
built instead. Without either, the page stays recorded as ``needs_js``.

Images, media and fonts are not loaded: they cost bandwidth and time and change no text. One
browser serves the whole crawl; every page gets a fresh context (no cookies or storage leak
from one site to the next) and at most ``render_concurrency`` pages render at once.

With the crawl's network guard, every connection the browser opens goes through
:class:`~harvestman.egress.EgressProxy`, an in-process forward proxy that resolves the target,
applies the guard and connects to the address it checked: the page, every redirect hop, its
scripts, frames, stylesheets, XHRs and fetches, WebSockets, preconnects, a service worker's
requests. Chromium is started so that loopback is proxied too, it resolves no name itself and
it speaks no QUIC and no non-proxied WebRTC UDP (:data:`~harvestman.egress.BROWSER_ARGS`).
Playwright's request interception is used only to skip images, media and fonts: it never sees
a redirect hop or a WebSocket, so it cannot be the guard. A page whose document the proxy
refused (a redirect to an internal address) fails the render with the proxy's reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvestman.errors import HarvestmanError
from harvestman.guard import NetworkGuard

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright, Response, Route

    from harvestman.egress import EgressProxy

log = logging.getLogger(__name__)

SKIPPED_RESOURCES = frozenset({"image", "media", "font"})


class RenderError(HarvestmanError):
    """A page could not be rendered (browser missing or crashed, timeout, navigation error)."""


@dataclass(frozen=True, slots=True)
class Rendered:
    """The DOM after the page's scripts ran, serialized as UTF-8 HTML."""

    url: str
    status: int | None  # the main document's HTTP status as the browser saw it
    html: bytes


def renderer_unavailable(browser: str) -> str | None:
    """Why rendering cannot run here (None: it can): Playwright or the browser is missing."""
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed (pip install 'harvestman[render]')"
    if not Path(browser).is_file():
        return f"no browser at {browser} (install Chromium or set render_browser)"
    return None


class Renderer:
    """One headless Chromium for the crawl, started on first use, with its egress proxy when
    there is a ``guard`` (without one nothing is checked: only tests build one so)."""

    def __init__(
        self,
        *,
        browser: str = "/usr/bin/chromium",
        user_agent: str,
        concurrency: int = 2,
        timeout: float = 30.0,
        settle: float = 2.0,
        max_bytes: int = 10 * 1024 * 1024,
        guard: NetworkGuard | None = None,
    ) -> None:
        self.browser_path = browser
        self.guard = guard
        self.user_agent = user_agent
        self.timeout_ms = timeout * 1000
        self.settle_ms = settle * 1000
        self.max_bytes = max_bytes
        self._slots = asyncio.Semaphore(concurrency)
        self._start_lock = asyncio.Lock()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._proxy: EgressProxy | None = None

    @property
    def egress(self) -> EgressProxy | None:
        """The proxy the browser goes out through (None before the start, or without a guard)."""
        return self._proxy

    async def render(self, url: str) -> Rendered:
        """Load ``url`` (http or https) in the browser and return the DOM its scripts built."""
        if not url[:8].lower().startswith(("http://", "https://")):
            raise RenderError(f"rendering {url[:200]!r}: only http and https pages are rendered")
        async with self._slots:
            browser = await self._started()
            try:
                # Playwright's own timeouts bound each step; this bounds the whole render.
                overall = (2 * self.timeout_ms + self.settle_ms) / 1000
                return await asyncio.wait_for(self._render(browser, url), overall)
            except TimeoutError as exc:
                raise RenderError(f"rendering {url} timed out") from exc
            except RenderError:
                raise
            except Exception as exc:  # Playwright raises its own Error for every failure
                raise RenderError(f"rendering {url} failed: {exc}".splitlines()[0]) from exc

    async def _render(self, browser: Browser, url: str) -> Rendered:
        context = await browser.new_context(user_agent=self.user_agent, java_script_enabled=True)
        try:
            await context.route("**/*", self._route)
            page = await context.new_page()
            # Every document the main frame loads, the first and any the page moves on to
            # (a redirect, a meta refresh, a script's navigation, a form): when the last one is
            # a refusal of the proxy, the DOM is that refusal, no page of the site.
            refused: list[str | None] = [None]
            from harvestman.egress import REFUSED_HEADER  # h11's proxy: loaded to render only

            def note(response: Response) -> None:
                request = response.request
                if request.is_navigation_request() and request.frame == page.main_frame:
                    refused[0] = response.headers.get(REFUSED_HEADER.lower())

            page.on("response", note)
            response = await page.goto(url, wait_until="load", timeout=self.timeout_ms)
            if self.settle_ms:
                # Scripts often fetch their data after "load"; idle network means it arrived.
                with contextlib.suppress(Exception):
                    await page.wait_for_load_state("networkidle", timeout=self.settle_ms)
            html = (await page.content()).encode("utf-8", "surrogatepass")
            if refused[0] is not None:
                raise RenderError(f"rendering {url}: the browser was refused {refused[0]}")
        finally:
            await context.close()
        if len(html) > self.max_bytes:
            raise RenderError(f"rendered page is {len(html):,} bytes (max {self.max_bytes:,})")
        return Rendered(url, response.status if response is not None else None, html)

    async def _route(self, route: Route, *_: Any) -> None:
        # Bandwidth only: the guard is the proxy's (this handler never sees redirect hops).
        if route.request.resource_type in SKIPPED_RESOURCES:
            await route.abort()
            return
        await route.continue_()

    async def _started(self) -> Browser:
        async with self._start_lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            why = renderer_unavailable(self.browser_path)
            if why is not None:
                raise RenderError(why)
            from playwright.async_api import async_playwright

            from harvestman.egress import BROWSER_ARGS, EgressProxy

            args = ["--no-sandbox", "--disable-dev-shm-usage"]
            if self.guard is not None:
                if self._proxy is None:
                    proxy = EgressProxy(self.guard, timeout=self.timeout_ms / 1000)
                    self._proxy = await proxy.__aenter__()
                args += [f"--proxy-server={self._proxy.url}", *BROWSER_ARGS]
            try:
                if self._playwright is None:
                    self._playwright = await async_playwright().start()
                self._browser = await self._playwright.chromium.launch(
                    executable_path=self.browser_path, headless=True, args=args
                )
            except Exception as exc:
                raise RenderError(f"could not start {self.browser_path}: {exc}") from exc
            log.info("renderer: started %s", self.browser_path)
            return self._browser

    async def close(self) -> None:
        async with self._start_lock:
            browser, self._browser = self._browser, None
            playwright, self._playwright = self._playwright, None
            proxy, self._proxy = self._proxy, None
            with contextlib.suppress(Exception):
                if browser is not None:
                    await browser.close()
            with contextlib.suppress(Exception):
                if playwright is not None:
                    await playwright.stop()
            if proxy is not None:
                await proxy.__aexit__(None, None, None)
