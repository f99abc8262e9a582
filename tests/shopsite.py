"""A small shop on 127.0.0.1 whose prices a test changes: a home page linking two product pages
(JSON-LD offers, a canonical link) and a page that only says to enable JavaScript (rejected by
validation as ``needs_js``). Pages answer ETags, so an unchanged page re-fetched is a 304."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiohttp import web

from conftest import serve

# Validation rejects a page under 500 bytes without a paragraph: every content page has one.
PARAGRAPH = (
    "<p>Every item in this shop is made by hand in a small workshop by the river, tested for a"
    " week before it is sold, and sent out in plain recycled paper with a note from its maker.</p>"
)
PRODUCTS = {"kettle": "Steel Kettle", "toaster": "Red Toaster"}


@dataclass
class Shop:
    port: int = 0
    prices: dict[str, str] = field(default_factory=lambda: {"kettle": "25.00", "toaster": "40.00"})

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def html(self, path: str) -> str | None:
        if path == "/":
            links = "".join(f'<a href="/p/{slug}">{name}</a> ' for slug, name in PRODUCTS.items())
            return (
                "<html><head><title>The Shop</title></head>"
                f'<body><h1>The Shop</h1>{PARAGRAPH}{links}<a href="/js">App</a></body></html>'
            )
        if path == "/js":
            return (
                "<html><head><title>App</title><script src='/app.js'></script></head>"
                "<body><noscript>Please enable JavaScript to use this app.</noscript></body></html>"
            )
        slug = path.removeprefix("/p/")
        if slug not in PRODUCTS:
            return None
        product = {
            "@context": "https://schema.org",
            "@type": "Product",
            "name": PRODUCTS[slug],
            "sku": slug.upper(),
            "offers": {
                "@type": "Offer",
                "price": self.prices[slug],
                "priceCurrency": "EUR",
                "availability": "https://schema.org/InStock",
            },
        }
        return (
            f"<html><head><title>{PRODUCTS[slug]}</title>"
            f'<link rel="canonical" href="{self.url(path)}">'
            f'<script type="application/ld+json">{json.dumps(product)}</script></head>'
            f"<body><h1>{PRODUCTS[slug]}</h1>{PARAGRAPH}"
            f'<a href="/">Home</a></body></html>'
        )

    async def handle(self, request: web.Request) -> web.StreamResponse:
        html = self.html(request.path)
        if html is None:
            raise web.HTTPNotFound()
        etag = '"' + hashlib.sha256(html.encode()).hexdigest()[:16] + '"'
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        return web.Response(text=html, content_type="text/html", headers={"ETag": etag})


@asynccontextmanager
async def running_shop() -> AsyncIterator[Shop]:
    shop = Shop()
    async with serve(shop.handle) as port:
        shop.port = port
        yield shop
