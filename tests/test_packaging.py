"""The package as users get it: the wheel in a fresh virtualenv, without the dev extras.

The suite itself runs from a checkout whose dev extras bring in more than the package declares;
a dependency missing from ``pyproject.toml`` shows only here. One virtualenv is built for the
module (a wheel, then ``pip install`` from the configured index): slow, so it runs in CI and in
``make test`` (``HARVESTMAN_SLOW_TESTS=1``) and is skipped otherwise.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from aiohttp import web

from conftest import IN_CI, serve

ROOT = Path(__file__).resolve().parents[1]
RUN_SLOW = IN_CI or os.environ.get("HARVESTMAN_SLOW_TESTS", "").lower() in ("1", "true", "yes")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),  # a virtualenv install: 1-3 minutes on a shared machine
    pytest.mark.skipif(not RUN_SLOW, reason="builds a virtualenv: CI=true or make test"),
]

# Every optional feature that needs no extra (render needs playwright: the "render" extra).
FEATURES = {
    "HARVESTMAN_EXTRACT_MAIN_TEXT": "true",
    "HARVESTMAN_EXTRACT_PRODUCTS": "true",
    "HARVESTMAN_NEAR_DUPLICATES": "true",
    "HARVESTMAN_STORE_TEXT": "true",
    "HARVESTMAN_ARCHIVE_ENABLED": "true",
    "HARVESTMAN_DISCOVERY_SITEMAPS": "true",
    "HARVESTMAN_DISCOVERY_FEEDS": "true",
    "HARVESTMAN_DISCOVERY_PAGINATION": "true",
    "HARVESTMAN_DISCOVERY_ARCHIVES": "true",
    "HARVESTMAN_PARSERS_ENABLED": "true",
    "HARVESTMAN_VALIDATE_PAGES": "true",
}

TODAY = datetime.date.today()
MONTH = f"/news/{TODAY.year}/{TODAY.month:02d}/"
ARTICLE = " ".join(
    f"Sentence {i} of an article about crawling politely, slowly and well." for i in range(60)
)
PRODUCT = """<script type="application/ld+json">
{"@context": "https://schema.org", "@type": "Product", "name": "Copper kettle",
 "offers": {"@type": "Offer", "price": "34.50", "priceCurrency": "EUR"}}</script>"""


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without this checkout's source path or the suite's settings."""
    env = {
        k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("HARVESTMAN_")
    }
    return {**env, **extra}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv holding the wheel built from this checkout; its ``bin`` directory."""
    work = tmp_path_factory.mktemp("packaging")
    source = work / "source"  # a copy: building in the checkout would leave build/ behind
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "*.so", ".*_cache",
            "tests", "bench", "deploy", ".hypothesis",
        ),
    )  # fmt: skip
    env = _clean_env()
    pip = [sys.executable, "-m", "pip", "--quiet"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "-w", str(work / "wheels"), str(source)], check=True, env=env
    )
    [wheel] = (work / "wheels").glob("harvestman-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True, env=env)
    bin_dir = work / "venv" / "bin"
    # --no-compile: byte-compiling every installed module was a quarter of the install's CPU
    # (62 s against 47 s on a slow machine); the crawls below compile what they import.
    install = [str(bin_dir / "pip"), "install", "--quiet", "--no-compile", str(wheel)]
    subprocess.run(install, check=True, env=env)
    return bin_dir


class FeatureSite:
    """One page of each kind the optional features act on."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.Response:
        self.hits[request.path_qs] += 1
        path, query = request.path, request.query
        if path == "/robots.txt":
            return web.Response(text=f"User-agent: *\nAllow: /\nSitemap: {self.url('/sm.xml')}\n")
        if path == "/sm.xml":
            body = f"<urlset><url><loc>{self.url('/from-sitemap.html')}</loc></url></urlset>"
            return web.Response(text=body, content_type="application/xml")
        if path == "/feed.xml":
            item = f"<item><link>{self.url('/from-feed.html')}</link></item>"
            body = f'<rss version="2.0"><channel><title>f</title>{item}</channel></rss>'
            return web.Response(text=body, content_type="application/rss+xml")
        if path == "/":
            links = ["/a.html", "/b.html", "/news?page=1", f"{MONTH}post.html"]
            return self.page("Home", links, head=PRODUCT + self.feed_link())
        if path in ("/a.html", "/b.html"):  # the same article: one is a near-duplicate
            return self.page(path, [], text=ARTICLE + (" Printed today." if "b" in path else ""))
        if path == "/news" and query.get("page") in ("1", "2"):
            return self.page(f"News {query['page']}", ["/news?page=2"])
        if path in ("/from-sitemap.html", "/from-feed.html", MONTH, f"{MONTH}post.html"):
            return self.page(path, [])
        raise web.HTTPNotFound()

    def feed_link(self) -> str:
        return '<link rel="alternate" type="application/rss+xml" href="/feed.xml">'

    @staticmethod
    def page(title: str, links: list[str], *, head: str = "", text: str = "") -> web.Response:
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        words = text or "Words enough to make this a real page that a validator keeps."
        html = (
            f"<html><head><title>{title}</title>{head}</head>"
            f"<body><article><p>{words}</p></article><p>{anchors}</p></body></html>"
        )
        return web.Response(text=html, content_type="text/html")


async def test_the_wheel_alone_crawls_with_every_optional_feature_on(
    installed: Path, tmp_path: Path
) -> None:
    site = FeatureSite()
    db, warc, archive = tmp_path / "h.db", tmp_path / "crawl.warc.gz", tmp_path / "archive"
    env = _clean_env(**FEATURES, HARVESTMAN_ARCHIVE_DIR=str(archive))
    async with serve(site.handle) as port:
        site.port = port
        process = await asyncio.create_subprocess_exec(
            str(installed / "harvestman"), "crawl", site.url("/"), "--db", str(db),
            "--warc", str(warc), "--delay", "0", "--timeout", "5", "--no-progress",
            cwd=tmp_path, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await process.communicate()

    assert process.returncode == 0, err.decode()[-3000:]
    # Discovery: the sitemap robots.txt names, the feed the home page links, the next page
    # speculated past the last one linked, the archive paths guessed from a dated URL. (The
    # feed's items are not reached: the crawler queues a <link rel=alternate> feed as a page
    # before its feed discovery sees it; a defect of the crawler, not of the package.)
    for path in ("/sm.xml", "/from-sitemap.html", "/feed.xml", MONTH):
        assert site.hits[path] == 1, (path, site.hits)
    assert site.hits["/news?page=3"] == 1
    assert site.hits["/archive"] == 1
    with sqlite3.connect(db) as conn:
        pages = {
            url.removeprefix(site.url("")): (main_text, near)
            for url, main_text, near in conn.execute(
                "SELECT url, main_text, near_duplicate_of FROM crawled_pages"
            )
        }
        hashes = dict(
            conn.execute(
                "SELECT url, url_hash FROM urls WHERE url IN (?, ?)",
                (site.url("/a.html"), site.url("/b.html")),
            )
        )
        a_hash, b_hash = hashes[site.url("/a.html")], hashes[site.url("/b.html")]
        products = conn.execute("SELECT name, price, currency FROM products").fetchall()
    assert "Sentence 59 of an article" in (pages["/a.html"][0] or "")
    # Fetched side by side: whichever was analyzed second is the near-duplicate of the other.
    assert (pages["/a.html"][1], pages["/b.html"][1]) in ((None, a_hash), (b_hash, None))
    assert [(name, float(price), currency) for name, price, currency in products] == [
        ("Copper kettle", 34.5, "EUR")
    ]
    assert warc.stat().st_size > 0
    assert any(path.is_file() for path in archive.rglob("*"))
