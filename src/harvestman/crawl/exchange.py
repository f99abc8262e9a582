"""The steps around a whole exchange, off the event loop or in a browser: the WARC and raw
archive (every response), rendering (a page that needs JavaScript), main text (a stored page).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Self

from harvestman.archive import RawArchive, WarcWriter
from harvestman.config import Settings
from harvestman.crawl.pages import PagePipeline
from harvestman.crawl.work import Exchange
from harvestman.errors import StoreError
from harvestman.guard import NetworkGuard
from harvestman.records import Outcome, UrlStatus
from harvestman.render import Renderer, RenderError, renderer_unavailable
from harvestman.stats import Stats

if TYPE_CHECKING:
    from harvestman.extract.maintext import MainTextExtractor

log = logging.getLogger(__name__)


class WarcStep:
    """Every exchange is written to the WARC file (opened for the run by :meth:`open`)."""

    def __init__(
        self, writer: WarcWriter, user_agent: str, stats: Stats, clock: Callable[[], float]
    ) -> None:
        self.writer = writer
        self.user_agent = user_agent
        self.stats = stats
        self.clock = clock

    def open(self, keep: contextlib.ExitStack) -> None:
        keep.enter_context(self.writer)

    async def keep(self, exchange: Exchange) -> None:
        result = exchange.result
        sent = {"User-Agent": self.user_agent, "Accept": "text/html", **exchange.headers}
        await asyncio.to_thread(
            self.writer.write_exchange,
            result.final_url,
            sent,
            result.status,
            None,
            result.headers,
            result.body,
            self.clock(),
            truncated=result.truncated,
        )
        self.stats.inc("warc/records")

    async def finish(self, exchange: Exchange) -> None:
        pass


class RawArchiveStep:
    """HTML 2xx bodies go to the content-addressed raw archive; the page keeps its path.

    The archive is made by ``make_archive`` when the run opens it (:meth:`open`): its blob
    store (an S3 client) exists only while a crawl runs.
    """

    def __init__(self, make_archive: Callable[[], RawArchive], stats: Stats) -> None:
        self.make_archive = make_archive
        self.archive: RawArchive | None = None
        self.stats = stats

    def open(self, keep: contextlib.ExitStack) -> None:
        self.archive = keep.enter_context(self.make_archive())

    async def keep(self, exchange: Exchange) -> None:
        result, archive = exchange.result, self.archive
        if archive is None or not result.is_html or not 200 <= result.status < 300:
            return
        try:
            path = await asyncio.to_thread(archive.put, result.body, result.content_type)
        except StoreError as exc:  # the page is still recorded; its body is not kept
            self.stats.inc("archive/errors")
            log.warning("could not archive %s: %s", exchange.request.url, exc)
            return
        self.stats.inc("archive/bodies")
        exchange.archive_path = path

    async def finish(self, exchange: Exchange) -> None:
        outcome = exchange.outcome
        if outcome is not None and outcome.page is not None and exchange.archive_path:
            outcome.page.archive_path = exchange.archive_path


class RenderStep:
    """A page validation found drawn by scripts is rendered by a browser and its steps run
    again on what the browser drew (one page: counted by ``render/pages``, not parsed as a
    new one); when the render fails the ``needs_js`` record stands, with the reason."""

    def __init__(self, renderer: Renderer, pipeline: PagePipeline, stats: Stats) -> None:
        self.renderer = renderer
        self.pipeline = pipeline
        self.stats = stats

    @classmethod
    def from_settings(
        cls, settings: Settings, pipeline: PagePipeline, stats: Stats, guard: NetworkGuard
    ) -> Self | None:
        """None when rendering is off, or on but unable to run here (logged once: pages that
        need JavaScript are then recorded as ``needs_js`` and the crawl goes on)."""
        if not (settings.render_enabled and settings.validate_pages):
            return None
        why = renderer_unavailable(settings.render_browser)
        if why is not None:
            log.warning(
                "rendering is enabled but cannot run: %s; pages that need JavaScript "
                "are recorded as needs_js",
                why,
            )
            return None
        renderer = Renderer(
            browser=settings.render_browser,
            user_agent=settings.fetch_user_agent,
            concurrency=settings.render_concurrency,
            timeout=settings.render_timeout,
            settle=settings.render_settle,
            guard=guard,
            max_bytes=settings.fetch_max_page_size,
        )
        return cls(renderer, pipeline, stats)

    async def keep(self, exchange: Exchange) -> None:
        pass

    async def finish(self, exchange: Exchange) -> None:
        outcome = exchange.outcome
        if outcome is None or outcome.page is None or not needs_render(outcome):
            return
        result = exchange.result
        try:
            rendered = await self.renderer.render(result.final_url)
        except RenderError as exc:
            self.stats.inc("render/failed")
            log.warning("%s", exc)
            outcome.page.error = f"{outcome.page.error}; {exc}"[:2000]
            return
        self.stats.inc("render/pages")
        again = dataclasses.replace(result, body=rendered.html, charset="utf-8")
        exchange.outcome, exchange.new_urls = self.pipeline.rendered(exchange.request, again)
        if needs_render(exchange.outcome):
            self.stats.inc("render/still_needs_js")

    async def close(self) -> None:
        await self.renderer.close()


class MainTextStep:
    """The article text of a stored page, off the event loop (milliseconds of CPU)."""

    def __init__(self, extractor: MainTextExtractor, stats: Stats) -> None:
        self.extractor = extractor
        self.stats = stats

    @classmethod
    def from_settings(
        cls, settings: Settings, stats: Stats, clock: Callable[[], float]
    ) -> Self | None:
        if not settings.extract_main_text:
            return None
        # Imported here: trafilatura takes 0.7 s to import, paid only by crawls that use it.
        from harvestman.extract.maintext import MainTextExtractor

        return cls(MainTextExtractor(clock=clock), stats)

    async def keep(self, exchange: Exchange) -> None:
        pass

    async def finish(self, exchange: Exchange) -> None:
        outcome, result = exchange.outcome, exchange.result
        if outcome is None or outcome.page is None or not has_content(outcome):
            return
        page = outcome.page
        found = await asyncio.to_thread(
            self.extractor.extract, result.body, result.final_url, charset=result.charset
        )
        if found.error is not None:
            self.stats.inc("extract/main_text/errors")
            log.warning("main text of %s: %s", result.final_url, found.error)
        elif found.text:
            page.main_text = found.text
            self.stats.inc("extract/main_text/pages")


def has_content(outcome: Outcome) -> bool:
    """A completed HTML page stored with its content (parsed, and not rejected)."""
    page = outcome.page
    return (
        outcome.status is UrlStatus.COMPLETED
        and page is not None
        and page.content_hash is not None
        and page.error_class is None
    )


def needs_render(outcome: Outcome) -> bool:
    """A page that validation found drawn by scripts: a browser may turn it into content."""
    return outcome.page is not None and outcome.page.rejection_reason == "needs_js"
