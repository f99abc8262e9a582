"""A response made into an outcome: a listing is read, a page analyzed and run through the steps.

A page's analysis (:mod:`harvestman.crawl.analysis`: parse, verdict, fingerprint, product scan)
comes from a page process, or is made here by the same analyzer; the steps read it. The steps
are the ones the wiring switched on, in its order; a step that rejects the page answers
:class:`~harvestman.crawl.work.Rejected`, after which the page meets only the steps that run on
rejected pages (discovery), or none when the rejection halts it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from harvestman.crawl.analysis import AnalysisSpec, PageAnalysis, PageAnalyzer
from harvestman.crawl.discovery import Discovery
from harvestman.crawl.fetch import FetchResult
from harvestman.crawl.outcomes import Outcomes
from harvestman.crawl.work import PageWork, Rejected, Step
from harvestman.crawl.writer import BatchWriter
from harvestman.discovery.listing_stream import ListingStream
from harvestman.discovery.listings import read_listing
from harvestman.errors import ListingInvalid
from harvestman.records import CrawlRequest, NewUrl, Outcome, PageRecord, UrlStatus
from harvestman.recrawl import RecrawlRule
from harvestman.urls import UrlNormalizer
from harvestman.validate import Validator


class ListingReader:
    """A sitemap or feed: its entries join the frontier; a broken one is recorded.

    A feed is due again after ``feed_poll_interval`` (fetched with its ETag/Last-Modified),
    a sitemap after the visited TTL.

    A sitemap is streamed (:meth:`stream`): its rows go to ``writer`` ``batch_size`` at a time,
    each batch handed over before the next is parsed and the reading paused while the writer
    holds a batch's worth; ``slots`` lets ``concurrency`` sitemaps be fetched and read at once.
    So memory holds a few bodies and batches, never what the sitemaps list. The rows reach the
    store by the writer's path (its ingest limit, the shared seen set, ON CONFLICT DO NOTHING).
    """

    def __init__(
        self,
        discovery: Discovery,
        outcomes: Outcomes,
        *,
        max_depth: int,
        max_urls: int,
        max_bytes: int,
        feed_poll_interval: float,
        normalizer: UrlNormalizer,
        writer: BatchWriter | None = None,
        batch_size: int = 1000,
        concurrency: int = 1,
    ) -> None:
        self.discovery = discovery
        self.writer = writer  # None: sitemaps are read whole, like feeds
        self.batch_size = batch_size
        self.slots = asyncio.Semaphore(concurrency)
        # Listed URLs come as written; they are normalized like every link of the crawl.
        self.normalize = normalizer.normalize
        self.outcomes = outcomes
        self.max_depth = max_depth
        self.max_urls = max_urls
        self.max_bytes = max_bytes
        self.feed_poll_interval = feed_poll_interval

    def again(self, request: CrawlRequest) -> float:
        return self.feed_poll_interval if request.kind == "feed" else self.outcomes.visited_ttl

    def streams(self, request: CrawlRequest) -> bool:
        """Whether a fetch of ``request`` is read by :meth:`stream` (and takes a slot)."""
        return request.kind == "sitemap" and self.writer is not None

    async def stream(self, request: CrawlRequest, result: FetchResult) -> Outcome:
        """A sitemap's outcome, its rows written batch by batch on the way (see the class)."""
        assert self.writer is not None
        listing = ListingStream(result.body, result.final_url, **self._options(request))
        limit = self.batch_size
        for rows in listing.batches(self.batch_size):
            new_urls = self.discovery.listed(rows, request.id, request.kind)
            if new_urls:
                await self.writer.add_bounded(new_urls, limit)
        return self._outcome(
            request, result, rows=listing.rows, errors=listing.errors, invalid=listing.invalid
        )

    def read(self, request: CrawlRequest, result: FetchResult) -> tuple[Outcome, list[NewUrl]]:
        listing = read_listing(result.body, result.final_url, **self._options(request))
        outcome = self._outcome(
            request, result, rows=len(listing.urls), errors=listing.errors, invalid=listing.invalid
        )
        if listing.invalid:
            return outcome, []
        return outcome, self.discovery.listed(listing.urls, request.id, request.kind)

    def _options(self, request: CrawlRequest) -> dict[str, Any]:
        """What a whole read (``read_listing``) and a streamed one (``ListingStream``) take."""
        check = self.discovery.scope.check
        return {
            "depth": request.depth,
            "max_depth": self.max_depth,
            "max_urls": self.max_urls,
            "max_bytes": self.max_bytes,
            "in_scope": lambda url: check(url) is None,
            "normalize": self.normalize,
        }

    def _outcome(
        self,
        request: CrawlRequest,
        result: FetchResult,
        *,
        rows: int,
        errors: Sequence[str],
        invalid: bool,
    ) -> Outcome:
        """The listing's own outcome: failed when it was no listing, else completed with its
        row count as its links."""
        stats = self.discovery.stats
        stats.inc(f"{request.kind}/fetched")
        stats.inc(f"{request.kind}/urls", rows)
        record = self.outcomes.page_record(request, result)
        again = self.again(request)
        if errors:
            record.error = "; ".join(errors[:5])[:2000]
        if invalid:
            stats.inc(f"{request.kind}/invalid")
            exc = ListingInvalid(record.error or f"not a {request.kind}")
            return self.outcomes.rejected(
                request, exc, record, status=UrlStatus.FAILED, again=again
            )
        record.links_count = rows
        return self.outcomes.completed(request, result, record, again)


class PagePipeline:
    """Reads a listing, or runs the page steps over a page's analysis.

    ``spec`` says what an analysis computes; the pipeline keeps the page's text in it when one
    of ``steps`` reads it (:attr:`spec`, what a page process is sent too). ``normalizer`` and
    ``validator`` (default: the spec's) are the crawl's own, shared with the inline analyzer.
    """

    def __init__(
        self,
        steps: Sequence[Step],
        outcomes: Outcomes,
        listings: ListingReader,
        spec: AnalysisSpec,
        *,
        count: Callable[[str], None],
        normalizer: UrlNormalizer | None = None,
        validator: Validator | None = None,
        recrawl: RecrawlRule | None = None,
    ) -> None:
        self.steps = tuple(steps)
        # For a 304 of a page: the store applies it to known product pages (nothing changed).
        self.recrawl = recrawl
        self.outcomes = outcomes
        self.listings = listings
        keep_text = any(step.reads_text for step in self.steps)
        self.spec = dataclasses.replace(spec, keep_text=keep_text)
        self.analyzer = PageAnalyzer(self.spec, normalizer, validator)
        self.count = count

    def _judges_empty(self, result: FetchResult) -> bool:
        """An empty page is judged (too small) when validation is on; 204 and 205 have no
        content by definition."""
        return self.spec.validate_min_bytes is not None and result.status not in (204, 205)

    def parses(self, request: CrawlRequest, result: FetchResult) -> bool:
        """Whether :meth:`handle` parses this response (a page's HTML, not a 304)."""
        return (
            request.kind == "page"
            and result.status != 304
            and result.is_html
            and bool(result.body or self._judges_empty(result))
        )

    def handle(
        self, request: CrawlRequest, result: FetchResult, analysis: PageAnalysis | None = None
    ) -> tuple[Outcome, list[NewUrl]]:
        """The outcome of a response below 400 and the URLs it revealed.

        ``analysis``: the page's, made ahead in a page process (None: it is made here).
        """
        outcomes = self.outcomes
        if result.status == 304:  # unchanged since the stored ETag / Last-Modified
            self.count("fetch/not_modified")
            again = (
                self.listings.again(request)
                if request.kind != "page"
                else outcomes.revisit_after(request)
            )
            return Outcome(
                request,
                UrlStatus.COMPLETED,
                outcomes.clock() + again,
                request.attempts,
                status_code=304,
                recrawl=self.recrawl if request.kind == "page" else None,
            ), []
        if request.kind != "page":
            return self.listings.read(request, result)
        if not self.parses(request, result):
            record = outcomes.page_record(request, result)
            return outcomes.completed(request, result, record, outcomes.visited_ttl), []
        return self.handle_page(request, result, analysis)

    def handle_page(
        self, request: CrawlRequest, result: FetchResult, analysis: PageAnalysis | None = None
    ) -> tuple[Outcome, list[NewUrl]]:
        """:meth:`handle` for a response :meth:`parses` (the caller asked it already)."""
        record = self.outcomes.page_record(request, result)
        if analysis is None:
            analysis = self._analyze(result)
        self.count("parse/pages")
        return self._run_steps(request, result, record, analysis)

    def rendered(self, request: CrawlRequest, result: FetchResult) -> tuple[Outcome, list[NewUrl]]:
        """The outcome of a page handled before, now as a browser drew it (``result`` holds
        the rendered HTML): analyzed again and judged again by the steps, and not counted as
        another page."""
        record = self.outcomes.page_record(request, result)
        return self._run_steps(request, result, record, self._analyze(result))

    def _analyze(self, result: FetchResult) -> PageAnalysis:
        return self.analyzer.analyze(
            result.final_url, result.status, result.headers, result.body, result.charset
        )

    def _run_steps(
        self,
        request: CrawlRequest,
        result: FetchResult,
        record: PageRecord,
        analysis: PageAnalysis,
    ) -> tuple[Outcome, list[NewUrl]]:
        outcomes = self.outcomes
        page = analysis.page
        record.charset = page.encoding
        record.content_hash = page.content_hash
        record.title = page.title
        record.description = page.description
        record.canonical = page.canonical
        record.lang = page.lang
        record.links_count = len(page.links)
        work = PageWork(request, result, record, analysis)
        rejected: Rejected | None = None
        for step in self.steps:
            if rejected is not None:
                if rejected.halt:
                    break
                if not step.on_rejected:
                    continue
            answer = step.run(work)
            if answer is not None and rejected is None:  # the first rejection stands
                rejected = answer
        if rejected is not None:
            return rejected.outcome, work.new_urls
        outcome = outcomes.completed(request, result, record, outcomes.visited_ttl)
        outcome.products = work.products
        outcome.recrawl = work.recrawl
        parsed = work.parsed
        if parsed is not None:
            outcome.records = parsed.records
            outcome.parser_runs = parsed.runs
            outcome.parse_failures = parsed.failures or None
        return outcome, work.new_urls
