"""The Riverside Courier on 127.0.0.1: a news site for the crawl tests of site parsers and
main text (its articles are ``fixtures/maintext/news_article.html``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiohttp import web
from sqlalchemy import create_engine, text

from conftest import serve
from harvestman.config import Settings

FIXTURES = Path(__file__).parent / "fixtures" / "maintext"
NEWS_HTML = (FIXTURES / "news_article.html").read_text("utf-8")
HEADLINE = "River Thames barrier to close 40 times this winter, agency warns"
ARTICLES = ("/environment/2024/nov/18/thames-barrier", "/environment/2024/nov/17/rail-strike")


class Courier:
    """The Riverside Courier on 127.0.0.1: a front page and two articles whose layout (the
    class of the story's <article>) and headline can change between crawls."""

    def __init__(self) -> None:
        self.layout = "story"
        self.headline = HEADLINE
        self.port = 0

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/":
            links = "".join(f'<li><a href="{path}">Story {path}</a></li>' for path in ARTICLES)
            filler = "<p>" + "Today's news from the river towns, every morning. " * 12 + "</p>"
            html = f"<html><head><title>Courier</title></head><body><ul>{links}</ul>{filler}"
            return web.Response(text=html + "</body></html>", content_type="text/html")
        if request.path in ARTICLES:
            html = NEWS_HTML.replace('<article class="story">', f'<article class="{self.layout}">')
            html = html.replace(f"<h1>{HEADLINE}</h1>", f"<h1>{self.headline}</h1>")
            return web.Response(text=html, content_type="text/html")
        raise web.HTTPNotFound()


async def running_courier() -> AsyncIterator[Courier]:
    site = Courier()
    async with serve(site.handle) as port:
        site.port = port
        yield site


def rows(settings: Settings, sql: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` in the store of ``settings`` (SQLite or PostgreSQL)."""
    engine = create_engine(settings.database_url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(sql))]
    finally:
        engine.dispose()
