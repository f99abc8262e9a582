"""What a crawl yields, end to end: products, error logs, WARC, the raw archive, exports."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from warcio.archiveiterator import ArchiveIterator

from conftest import SettingsFactory, serve
from support.crawling import crawl
from testsite import TestSite

CLI = [sys.executable, "-m", "harvestman.cli"]


class Shop:
    """A shop whose product page carries JSON-LD; its price can change."""

    def __init__(self) -> None:
        self.price = "19.99"
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/":
            body = '<p>Our shop has one product for now: <a href="/p/kettle">the kettle</a>.</p>'
            return self.page("Shop", body)
        if request.path == "/p/kettle":
            data = {
                "@context": "https://schema.org", "@type": "Product", "name": "Kettle",
                "sku": "K-1", "image": ["/img/k1.jpg", "/img/k2.jpg"],
                "offers": {"@type": "Offer", "price": self.price, "priceCurrency": "EUR",
                           "availability": "https://schema.org/InStock"},
            }  # fmt: skip
            head = f'<script type="application/ld+json">{json.dumps(data)}</script>'
            return self.page("Kettle", "<p>A kettle that boils water fast and quietly.</p>", head)
        raise web.HTTPNotFound()

    @staticmethod
    def page(title: str, body: str, head: str = "") -> web.Response:
        html = f"<html><head><title>{title}</title>{head}</head><body>{body}</body></html>"
        return web.Response(text=html, content_type="text/html")


@pytest.fixture
async def shop() -> AsyncIterator[Shop]:
    state = Shop()
    async with serve(state.handle) as port:
        state.port = port
        yield state


def query(settings: object, sql: str) -> list[tuple]:
    path = settings.database_url.removeprefix("sqlite:///")  # type: ignore[attr-defined]
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


async def test_products_are_stored_and_rewritten_only_when_they_change(
    shop: Shop, make_settings: SettingsFactory
) -> None:
    settings = make_settings(crawl_visited_ttl=0, discovery_sitemaps=False)
    root = f"http://127.0.0.1:{shop.port}/"
    await crawl(settings, [root])
    [(name, price, currency, availability, sku, updated)] = query(
        settings, "SELECT name, price, currency, availability, sku, updated_at FROM products"
    )
    assert (name, str(price), currency, availability, sku) == (
        "Kettle", "19.99", "EUR", "in_stock", "K-1",
    )  # fmt: skip
    images = query(settings, "SELECT position, url FROM images ORDER BY position")
    assert images == [
        (0, f"http://127.0.0.1:{shop.port}/img/k1.jpg"),
        (1, f"http://127.0.0.1:{shop.port}/img/k2.jpg"),
    ]

    await crawl(settings, [root])  # unchanged: not rewritten
    assert query(settings, "SELECT updated_at FROM products") == [(updated,)]

    shop.price = "24.50"
    await crawl(settings, [root])
    [(price, moved)] = query(settings, "SELECT price, updated_at FROM products")
    assert price == 24.5
    assert moved > updated


async def test_errors_are_logged_by_category(
    full_site: TestSite, make_settings: SettingsFactory
) -> None:
    site = full_site  # /slow.html is the network error
    settings = make_settings(crawl_max_depth=1)
    await crawl(settings, [site.url("/")])
    found = dict(query(settings, "SELECT error_class, category FROM error_logs GROUP BY 1"))
    assert found["FetchTimeout"] == "network"
    assert found["HttpStatusError"] == "http"
    assert found["TooManyRedirects"] == "http"
    assert "RobotsDenied" not in found  # a policy, not an error


async def test_a_warc_and_the_raw_archive_read_back(
    shop: Shop, make_settings: SettingsFactory, tmp_path: Path
) -> None:
    warc = tmp_path / "crawl.warc.gz"
    archive = tmp_path / "archive"
    settings = make_settings(
        warc_path=str(warc), archive_enabled=True, archive_dir=str(archive),
        discovery_sitemaps=False,
    )  # fmt: skip
    await crawl(settings, [f"http://127.0.0.1:{shop.port}/"])

    with warc.open("rb") as stream:
        records = [
            (r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
            for r in ArchiveIterator(stream)
        ]
    responses = {uri: body for kind, uri, body in records if kind == "response"}
    assert set(responses) == {
        f"http://127.0.0.1:{shop.port}/",
        f"http://127.0.0.1:{shop.port}/p/kettle",
    }
    assert b"Kettle" in responses[f"http://127.0.0.1:{shop.port}/p/kettle"]
    assert sum(1 for kind, _, _ in records if kind == "request") == 2

    paths = [p for (p,) in query(settings, "SELECT archive_path FROM crawled_pages")]
    assert all(paths)
    assert all((archive / p).exists() for p in paths)

    out = tmp_path / "export.warc.gz"
    env = {
        "HARVESTMAN_DATABASE_URL": settings.database_url, "HARVESTMAN_ARCHIVE_DIR": str(archive),
    }  # fmt: skip
    code, err = await run_cli("export", "--format", "warc", "-o", str(out), env=env)
    assert code == 0, err
    with out.open("rb") as stream:
        exported = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(stream)
                    if r.rec_type == "response"]  # fmt: skip
    assert set(exported) == set(responses)


async def test_exports_products_as_es_bulk_and_requeue_dead_letters(
    shop: Shop, site: TestSite, make_settings: SettingsFactory
) -> None:
    settings = make_settings(discovery_sitemaps=False, crawl_max_depth=1)
    await crawl(settings, [f"http://127.0.0.1:{shop.port}/", site.url("/")])
    env = {"HARVESTMAN_DATABASE_URL": settings.database_url}

    code, out = await run_cli("export", "--format", "es", "--what", "products", env=env, out=True)
    assert code == 0
    action, document = (json.loads(line) for line in out.splitlines())
    assert action["index"]["_index"] == "harvestman-products"
    assert (document["name"], document["price"]) == ("Kettle", 19.99)

    failed = query(settings, "SELECT count(*) FROM urls WHERE status = 'failed'")[0][0]
    code, err = await run_cli("dead-letter", "requeue", "--error-class", "HttpStatusError", env=env)
    assert code == 0, err
    pending = query(settings, "SELECT count(*) FROM urls WHERE status = 'pending'")[0][0]
    assert pending == 2  # /status/404 and /status/500
    assert query(settings, "SELECT count(*) FROM urls WHERE status = 'failed'")[0][0] == failed - 2


async def run_cli(*args: str, env: dict[str, str], out: bool = False) -> tuple[int, str]:
    import os

    process = await asyncio.create_subprocess_exec(
        *CLI, *args, env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await process.communicate()
    assert process.returncode is not None
    return process.returncode, (stdout if out else stderr).decode()
