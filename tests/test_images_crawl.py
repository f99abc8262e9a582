"""Product images: a crawl of a local shop downloads them politely, keeps each once by SHA-256,
measures them, and records every broken one with its reason, on SQLite and PostgreSQL.

The shop's images are made here with Pillow: real PNG, JPEG and WebP files, and broken ones (a
404, HTML served as image/png, an HTML page's type, a truncated PNG, one over the size cap).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from PIL import Image
from sqlalchemy import select

from conftest import SettingsFactory, serve
from harvestman.records import DomainControl
from harvestman.store import SqlStore, dialect
from harvestman.store.schema import images, products
from storerows import store_url
from support.cli import run_cli
from support.crawling import crawl

NOW = 1_700_000_000.0
DAY = 86400.0
CAP = 4096  # image_max_bytes of these crawls
DELAY = 0.05  # frontier_delay of these crawls
PARAGRAPH = (
    "<p>Every item in this shop is made by hand in a small workshop by the river, tested for a"
    " week before it is sold, and sent out in plain recycled paper with a note from its maker.</p>"
)


def image_bytes(size: tuple[int, int], fmt: str, *, noise: bool = False) -> bytes:
    mode = "RGB"
    if noise:
        image = Image.frombytes(mode, size, os.urandom(size[0] * size[1] * 3))
    else:
        image = Image.new(mode, size, (200, 40, 40))
    out = io.BytesIO()
    image.save(out, fmt)
    return out.getvalue()


PNG = image_bytes((4, 3), "PNG")
JPEG = image_bytes((5, 4), "JPEG")
WEBP = image_bytes((6, 2), "WEBP")
NOISY = image_bytes((16, 16), "PNG", noise=True)
HUGE = image_bytes((64, 64), "PNG", noise=True)  # ~12 KB of noise: over CAP
assert len(HUGE) > CAP
assert len(NOISY) < CAP

# path -> (content type, body); a path not here is a 404.
IMAGES: dict[str, tuple[str, bytes]] = {
    "/img/a.png": ("image/png", PNG),
    "/img/a-copy.png": ("image/png", PNG),  # the same bytes under another URL
    "/img/b.jpg": ("image/jpeg", JPEG),
    "/img/c.webp": ("image/webp", WEBP),
    "/img/fake.png": ("image/png", b"<html><body>not an image</body></html>"),
    "/img/page.png": ("text/html", b"<html><body>a page</body></html>"),
    "/img/truncated.png": ("image/png", NOISY[: len(NOISY) // 2]),
    "/img/huge.png": ("image/png", HUGE),
    "/img/streamed.png": ("image/png", HUGE),  # sent chunked: no Content-Length to judge by
}
PRODUCTS = {
    "/p/1": ("Red Mug", ["/img/a.png", "/img/b.jpg", "/img/missing.png"]),
    "/p/2": (
        "Red Cup",
        ["/img/a.png", "/img/a-copy.png", "/img/c.webp", "/img/fake.png", "/img/page.png"],
    ),
    "/p/3": ("Red Bowl", ["/img/truncated.png", "/img/huge.png", "/img/streamed.png"]),
}


def product_page(name: str, paths: list[str], price: str = "10.00") -> str:
    data = {
        "@context": "https://schema.org",
        "@type": "Product",
        "name": name,
        "image": paths,
        "offers": {"@type": "Offer", "price": price, "priceCurrency": "EUR"},
    }
    return (
        f"<html><head><title>{name}</title>"
        f'<script type="application/ld+json">{json.dumps(data)}</script></head>'
        f"<body><h1>{name}</h1>{PARAGRAPH}</body></html>"
    )


@dataclass
class Shop:
    port: int
    seen: list[tuple[float, str]] = field(default_factory=list)  # (arrival, path)
    price: str = "10.00"  # of every product

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture
async def shop() -> AsyncIterator[Shop]:
    shop = Shop(0)

    async def handle(request: web.Request) -> web.Response:
        shop.seen.append((time.time(), request.path))
        if request.path == "/":
            links = "".join(f'<a href="{path}">{path}</a> ' for path in PRODUCTS)
            html = f"<html><head><title>Shop</title></head><body>{PARAGRAPH}{links}</body></html>"
            return web.Response(text=html, content_type="text/html")
        if request.path in PRODUCTS:
            return web.Response(
                text=product_page(*PRODUCTS[request.path], shop.price), content_type="text/html"
            )
        if request.path in IMAGES:
            content_type, body = IMAGES[request.path]
            response = web.Response(body=body, headers={"Content-Type": content_type})
            if request.path == "/img/streamed.png":
                response.enable_chunked_encoding()
            return response
        raise web.HTTPNotFound()

    async with serve(handle) as port:
        shop.port = port
        yield shop


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_url(request, tmp_path)


def image_rows(database_url: str) -> list[dict[str, Any]]:
    engine = dialect.make_engine(database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                select(products.c.name, images)
                .join(products, products.c.id == images.c.product_id)
                .order_by(products.c.name, images.c.position)
            ).mappings()
            return [dict(row) for row in rows]
    finally:
        engine.dispose()


def sha(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


async def test_product_images_are_downloaded_measured_deduplicated_and_broken_ones_recorded(
    shop: Shop, database_url: str, make_settings: SettingsFactory, tmp_path: Path
) -> None:
    archive = tmp_path / "archive"
    settings = make_settings(
        database_url=database_url,
        discovery_sitemaps=False,
        crawl_max_depth=1,
        crawl_images=True,
        image_max_bytes=CAP,
        archive_dir=str(archive),
        frontier_delay=DELAY,
    )
    crawled = await crawl(settings, f"{shop.root}/")

    # Every page completed: broken images fail their own rows only.
    pages = {r["url"].removeprefix(shop.root): r for r in crawled.rows if r["kind"] == "page"}
    assert {path: r["status"] for path, r in pages.items()} == {
        "/": "completed", "/p/1": "completed", "/p/2": "completed", "/p/3": "completed",
    }  # fmt: skip
    image_status = {
        r["url"].removeprefix(shop.root): (r["status"], r["error_class"])
        for r in crawled.rows
        if r["kind"] == "image"
    }
    assert image_status == {
        "/img/a.png": ("completed", None),
        "/img/a-copy.png": ("completed", None),
        "/img/b.jpg": ("completed", None),
        "/img/c.webp": ("completed", None),
        "/img/missing.png": ("failed", "HttpStatusError"),
        "/img/fake.png": ("failed", "ImageRejected"),
        "/img/page.png": ("failed", "ImageRejected"),
        "/img/truncated.png": ("failed", "ImageRejected"),
        "/img/huge.png": ("failed", "BodyTooLarge"),
        "/img/streamed.png": ("failed", "BodyTooLarge"),
    }
    # An image two products show is fetched once; images are not stored as pages.
    fetched = [path for _, path in shop.seen if path.startswith("/img/")]
    assert sorted(fetched) == sorted(image_status)
    assert {p["url"].removeprefix(shop.root) for p in crawled.pages} == set(pages)

    found = {
        (row["name"], row["url"].removeprefix(shop.root)): (
            row["path"], row["bytes"], row["sha256"], row["content_type"], row["width"],
            row["height"], row["error_class"], row["error"] and row["error"].split(":")[0],
        )
        for row in image_rows(database_url)
    }  # fmt: skip
    key_a = f"images/{sha(PNG)[:2]}/{sha(PNG)[2:4]}/{sha(PNG)}.png"
    key_b = f"images/{sha(JPEG)[:2]}/{sha(JPEG)[2:4]}/{sha(JPEG)}.jpg"
    key_c = f"images/{sha(WEBP)[:2]}/{sha(WEBP)[2:4]}/{sha(WEBP)}.webp"
    kept_a = (key_a, len(PNG), sha(PNG), "image/png", 4, 3, None, None)
    assert found == {
        ("Red Mug", "/img/a.png"): kept_a,
        ("Red Mug", "/img/b.jpg"): (key_b, len(JPEG), sha(JPEG), "image/jpeg", 5, 4, None, None),
        ("Red Mug", "/img/missing.png"): (
            None, None, None, None, None, None, "HttpStatusError", "HTTP 404",
        ),
        ("Red Cup", "/img/a.png"): kept_a,
        ("Red Cup", "/img/a-copy.png"): kept_a,
        ("Red Cup", "/img/c.webp"): (key_c, len(WEBP), sha(WEBP), "image/webp", 6, 2, None, None),
        ("Red Cup", "/img/fake.png"): (
            None, None, None, None, None, None, "ImageRejected", "undecodable",
        ),
        ("Red Cup", "/img/page.png"): (
            None, None, None, None, None, None, "ImageRejected", "not_image",
        ),
        ("Red Bowl", "/img/truncated.png"): (
            None, None, None, None, None, None, "ImageRejected", "undecodable",
        ),
        ("Red Bowl", "/img/huge.png"): (
            None, None, None, None, None, None, "BodyTooLarge",
            f"Content-Length {len(HUGE):,} exceeds the {CAP:,}-byte cap",
        ),
        ("Red Bowl", "/img/streamed.png"): (
            None, None, None, None, None, None, "BodyTooLarge",
            f"body exceeds the {CAP:,}-byte cap",
        ),
    }  # fmt: skip

    # One blob per SHA-256: a.png and a-copy.png (two URLs, three rows) share one object.
    blobs = sorted(str(p.relative_to(archive)) for p in archive.rglob("*") if p.is_file())
    assert blobs == sorted([key_a, key_b, key_c])
    assert (archive / key_a).read_bytes() == PNG

    # An image is fetched after a page that shows it, never before.
    order = [path for _, path in shop.seen]
    for image in image_status:
        shown_on = [page for page, (_, paths) in PRODUCTS.items() if image in paths]
        assert min(order.index(page) for page in shown_on) < order.index(image), order

    # Politeness: image fetches are spaced like pages, by the host's delay.
    arrivals = [at for at, _ in shop.seen]
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
    assert min(gaps) >= DELAY - 0.002, gaps


async def test_the_crawl_command_downloads_images_only_when_asked(
    shop: Shop, tmp_path: Path
) -> None:
    env = {
        "HARVESTMAN_DISCOVERY_SITEMAPS": "false",
        "HARVESTMAN_IMAGE_MAX_BYTES": str(CAP),
        "HARVESTMAN_ARCHIVE_DIR": str(tmp_path / "archive"),
    }
    args = ["crawl", f"{shop.root}/", "--max-depth", "1", "--delay", "0", "--no-progress"]

    plain = await run_cli(*args, "--db", str(tmp_path / "plain.db"), env=env)
    assert plain[0] == 0, plain[2]
    assert not [path for _, path in shop.seen if path.startswith("/img/")]
    assert {row["path"] for row in image_rows(f"sqlite:///{tmp_path / 'plain.db'}")} == {None}

    asked = await run_cli(*args, "--images", "--db", str(tmp_path / "images.db"), env=env)
    assert asked[0] == 0, asked[2]
    kept = {
        row["url"].removeprefix(shop.root): row["sha256"]
        for row in image_rows(f"sqlite:///{tmp_path / 'images.db'}")
        if row["sha256"] is not None
    }
    assert kept == {
        "/img/a.png": sha(PNG), "/img/a-copy.png": sha(PNG), "/img/b.jpg": sha(JPEG),
        "/img/c.webp": sha(WEBP),
    }  # fmt: skip


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


async def test_images_go_to_the_s3_bucket_of_the_raw_archive(
    shop: Shop, s3_endpoint: str, make_settings: SettingsFactory
) -> None:
    import boto3

    s3 = {"region_name": "us-east-1", "aws_access_key_id": "t", "aws_secret_access_key": "t"}
    client = boto3.client("s3", endpoint_url=s3_endpoint, **s3)
    client.create_bucket(Bucket="shop-images")
    settings = make_settings(
        discovery_sitemaps=False,
        crawl_max_depth=1,
        crawl_images=True,
        image_max_bytes=CAP,
        archive_s3_bucket="shop-images",
        archive_s3_endpoint_url=s3_endpoint,
        archive_s3_region="us-east-1",
        archive_s3_access_key_id="t",
        archive_s3_secret_access_key="t",
        archive_s3_prefix="crawl-1/",
    )
    await crawl(settings, f"{shop.root}/")

    listed = client.list_objects_v2(Bucket="shop-images")["Contents"]
    keys = sorted(str(o["Key"]) for o in listed)
    assert keys == sorted(
        f"crawl-1/images/{sha(body)[:2]}/{sha(body)[2:4]}/{sha(body)}.{ext}"
        for body, ext in ((PNG, "png"), (JPEG, "jpg"), (WEBP, "webp"))
    )
    png_key = next(key for key in keys if key.endswith(".png"))
    stored = client.get_object(Bucket="shop-images", Key=png_key)
    assert (stored["Body"].read(), stored["ContentType"]) == (PNG, "image/png")


async def test_a_product_written_again_keeps_what_its_images_downloads_found(
    shop: Shop, database_url: str, make_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings = make_settings(
        database_url=database_url,
        discovery_sitemaps=False,
        crawl_max_depth=1,
        crawl_images=True,
        image_max_bytes=CAP,
        archive_dir=str(tmp_path / "archive"),
    )
    # The host's pages are due again after an hour; its images after the visited TTL (a week).
    async with SqlStore(database_url) as store:
        await store.upgrade()
        await store.in_thread(
            store.put_domain_control, DomainControl(shop.host, recrawl_interval=3600.0), NOW
        )
    await crawl(settings, f"{shop.root}/", clock=lambda: NOW)
    before = {
        (r["name"], r["url"]): (r["sha256"], r["error_class"]) for r in image_rows(database_url)
    }

    # A day later every price changed: each product is written again, its images rows too.
    shop.price = "12.00"
    seen_before = len(shop.seen)
    await crawl(settings, f"{shop.root}/", clock=lambda: NOW + DAY)

    refetched = [path for _, path in shop.seen[seen_before:]]
    assert not [path for path in refetched if path.startswith("/img/")]
    assert set(PRODUCTS) <= set(refetched)
    after = {
        (r["name"], r["url"]): (r["sha256"], r["error_class"]) for r in image_rows(database_url)
    }
    assert after == before
    assert {r["url"].removeprefix(shop.root): r["sha256"] for r in image_rows(database_url)}[
        "/img/b.jpg"
    ] == sha(JPEG)


@pytest.mark.parametrize("module", ["harvestman.images", "harvestman.archive.images"])
def test_the_examples_hold(module: str) -> None:
    import doctest
    import importlib

    assert doctest.testmod(importlib.import_module(module)).failed == 0
