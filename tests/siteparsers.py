"""Site parsers for the plugin tests, loaded by dotted path (``"siteparsers:CourierParser"``).

``CourierParser`` is what a real plugin looks like: it reads the article pages of the Riverside
Courier (``tests/fixtures/maintext/news_article.html``) with selectolax, declines the pages that
are not articles, and finds nothing once the site's layout changes.
"""

from __future__ import annotations

import re
import textwrap
from datetime import date
from decimal import Decimal
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from harvestman.extract.plugins import Record
from harvestman.parse import Page

_ARTICLE_PATH = re.compile(r"/\d{4}/[a-z]{3}/\d{2}/")


class CourierParser:
    name = "courier-article"
    version = "1.2.0"
    hosts = ("riversidecourier.example", "*.riversidecourier.example")

    def parse(self, page_html: str, url: str, page: Page) -> list[Record] | None:
        if not _ARTICLE_PATH.search(url):
            return None  # section fronts and the home page are not this parser's business
        tree = LexborHTMLParser(page_html)
        story = tree.css_first("article.story")
        if story is None:
            return []
        headline = story.css_first("h1")
        author = story.css_first("a[rel=author]")
        paragraphs = [node.text(strip=True) for node in story.css(".story-body > p")]
        return [
            Record(
                "article",
                {
                    "headline": headline.text(strip=True) if headline else None,
                    "author": author.text(strip=True) if author else None,
                    "paragraphs": len(paragraphs),
                    "first": paragraphs[0] if paragraphs else None,
                    "title": page.title,
                },
                parser="spoofed-name",  # the registry stamps the real name and version
            )
        ]


class ShopPriceParser:
    """Every product page of the shop: one record with a Decimal price and a date."""

    name = "shop-price"
    version = "3"
    hosts = (re.compile(r"(www\.)?shop\.example"),)

    def parse(self, page_html: str, url: str, page: Page) -> list[Record]:
        match = re.search(r'data-price="([\d.]+)"', page_html)
        if match is None:
            return []
        return [Record("price", {"price": Decimal(match.group(1)), "seen": date(2024, 5, 1)})]


class RaisingParser:
    name = "raising"
    version = "0.1"
    hosts = ("*",)

    def parse(self, page_html: str, url: str, page: Page) -> list[Record]:
        return [Record("x", {"value": {"a": 1}["missing"]})]


class SetDataParser:
    """Returns data the store cannot keep (a set is not JSON)."""

    name = "set-data"
    version = "1"
    hosts = ("*",)

    def parse(self, page_html: str, url: str, page: Page) -> list[Record]:
        return [Record("tags", {"tags": {"a", "b"}})]


class NoVersionParser:
    name = "no-version"
    hosts = ("*",)

    def parse(self, page_html: str, url: str, page: Page) -> list[Record]:
        return []


class OtherCourierParser:
    """A different class that claims the name of :class:`CourierParser`."""

    name = "courier-article"
    version = "1.2.0"  # the same version too: another version would be loaded beside it
    hosts = ("*",)

    def parse(self, page_html: str, url: str, page: Page) -> list[Record]:
        return []


class NeedsArgumentsParser:
    name = "needs-arguments"
    version = "1"
    hosts = ("*",)

    def __init__(self, api_key: str) -> None:
        self.api_key = api_key

    def parse(self, page_html: str, url: str, page: Page) -> list[Record]:
        return []


class LocalCourierParser(CourierParser):
    """The Courier parser for the copy of its site that crawl tests serve on 127.0.0.1."""

    hosts = ("127.0.0.1",)


class LocalCourierParserV2(LocalCourierParser):
    """The next version of :class:`LocalCourierParser` (after a change to its output)."""

    version = "1.3.0"


class LocalRaisingParser(RaisingParser):
    """Raises on every page of the local test sites (a plugin bug)."""

    name = "local-raising"
    hosts = ("127.0.0.1",)


def write_distribution(root: Path, name: str, entry_points: str, modules: dict[str, str]) -> None:
    """An installed distribution as importlib.metadata sees one: a .dist-info folder on sys.path."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))


class ShelfParser:
    """A shop's item pages (``/item/N``) on 127.0.0.1: one record, the item's <h1>."""

    name = "shelf"
    version = "1"
    hosts = ("127.0.0.1",)
    marker = '<h1 class="name">'

    def parse(self, page_html: str, url: str, page: Page) -> list[Record] | None:
        if "/item/" not in url:
            return None
        start = page_html.find(self.marker)
        if start < 0:
            return []
        name = page_html[start + len(self.marker) :].split("<", 1)[0]
        return [Record("item", {"name": name})]


class ShelfParserV2(ShelfParser):
    """The next version of :class:`ShelfParser`, released with a bug: it looks for an <h2>
    the site does not have, so it finds nothing (what a rollback is for)."""

    version = "2"
    marker = '<h2 class="name">'
