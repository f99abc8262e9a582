"""A small shop on 127.0.0.1 whose prices can change between crawls.

``/`` lists the products, ``/p/<slug>`` is a product page with its JSON-LD offer. Every page
has an ETag of its body and answers ``If-None-Match`` with a 304, as a real shop's server
does, so a re-crawl that changed nothing costs no body. ``hits`` counts the requests per path
and ``bodies`` the 200s; a path in ``down`` answers 503.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from aiohttp import web

from conftest import serve


@dataclass
class Shop:
    prices: dict[str, str] = field(
        default_factory=lambda: {"kettle": "19.90", "toaster": "34.50", "mixer": "89.00"}
    )
    port: int = 0
    hits: Counter[str] = field(default_factory=Counter)
    bodies: Counter[str] = field(default_factory=Counter)
    down: set[str] = field(default_factory=set)  # paths that answer 503 for now

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def product_url(self, slug: str) -> str:
        return f"{self.url}p/{slug}"

    def _page(self, path: str) -> str | None:
        if path == "/":
            links = "".join(f'<li><a href="/p/{slug}">{slug}</a></li>' for slug in self.prices)
            intro = "<p>Kitchen things at fair prices, shipped from our shop within two days.</p>"
            body = f"{intro}<ul>{links}</ul>"
            return f"<html><head><title>Shop</title></head><body>{body}</body></html>"
        slug = path.removeprefix("/p/")
        if slug not in self.prices:
            return None
        product = {
            "@context": "https://schema.org",
            "@type": "Product",
            "name": f"Steel {slug.title()}",
            "sku": slug,
            "offers": {"@type": "Offer", "price": self.prices[slug], "priceCurrency": "EUR"},
        }
        return (
            f"<html><head><title>Steel {slug.title()}</title>"
            f'<script type="application/ld+json">{json.dumps(product)}</script></head>'
            f'<body><h1>Steel {slug.title()}</h1><a href="/">shop</a></body></html>'
        )

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.hits[request.path] += 1
        if request.path == "/robots.txt":
            return web.Response(status=404)
        if request.path in self.down:
            return web.Response(status=503)
        html = self._page(request.path)
        if html is None:
            return web.Response(status=404)
        etag = '"' + hashlib.sha256(html.encode()).hexdigest()[:16] + '"'
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        self.bodies[request.path] += 1
        return web.Response(text=html, content_type="text/html", headers={"ETag": etag})


@contextlib.asynccontextmanager
async def running_shop() -> AsyncIterator[Shop]:
    shop = Shop()
    async with serve(shop.handle) as port:
        shop.port = port
        yield shop
