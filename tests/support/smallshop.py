"""A small shop on 127.0.0.1 for a job's runs: a start page with an ETag, two pages, a 404, a
URL robots.txt denies, and a page that holds its answer until the test releases it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiohttp import web

PROSE = "A kettle of brushed steel boils water for tea in three minutes, quietly. " * 8


def _html(title: str, body: str = "") -> bytes:
    head = f"<head><title>{title}</title></head>"
    return f"<html>{head}<body><p>{PROSE}</p>{body}</body></html>".encode()


PAGE_A = _html("Kettle")
PAGE_B = _html("Teapot", "<p>Porcelain, one litre.</p>")


@dataclass
class Shop:
    """``/`` (ETag ``"v1"``: a conditional request gets a 304) links to ``/a``, ``/b``,
    ``/gone`` (404), ``/private/x`` (denied by robots.txt) and, when ``holding``, ``/slow``,
    which answers once ``release`` is set."""

    holding: bool = False
    release: asyncio.Event = field(default_factory=asyncio.Event)
    slow_asked: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def home(self) -> bytes:
        links = ["/a", "/b", "/gone", "/private/x"] + (["/slow"] if self.holding else [])
        return _html("Shop", "".join(f'<a href="{link}">{link}</a> ' for link in links))

    async def handle(self, request: web.Request) -> web.Response:
        html = "text/html"
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow: /private/\n")
        if request.path == "/":
            if request.headers.get("If-None-Match") == '"v1"':
                return web.Response(status=304, headers={"ETag": '"v1"'})
            return web.Response(body=self.home, content_type=html, headers={"ETag": '"v1"'})
        if request.path == "/slow":
            self.slow_asked.set()
            await self.release.wait()
            return web.Response(body=PAGE_A, content_type=html)
        pages = {"/a": PAGE_A, "/b": PAGE_B}
        if request.path in pages:
            return web.Response(body=pages[request.path], content_type=html)
        return web.Response(status=404, text="not here")
