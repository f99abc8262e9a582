"""One leased request, start to end: gates, fetch, exchange steps, page steps, outcome.

The request's host slot is released exactly once on every path, here and (when workers share
a coordinator) for every worker: before the response is handled, or after it when a page may
be rendered (the host's turn lasts until the browser is done with it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harvestman.crawl.fetch import FetchResult, parse_retry_after
from harvestman.crawl.fetching import HopCheck, PageFetcher
from harvestman.crawl.gates import Final, Gate, HealthObserver, Requeue
from harvestman.crawl.hosts import HostSlots
from harvestman.crawl.outcomes import Outcomes
from harvestman.crawl.pages import PagePipeline
from harvestman.crawl.run import CrawlRun
from harvestman.crawl.work import Exchange, ExchangeStep
from harvestman.errors import ContentRejected, FetchError, HttpStatusError, UrlError
from harvestman.records import CrawlRequest, NewUrl, Outcome, UrlStatus
from harvestman.validate import VerdictStatus

if TYPE_CHECKING:
    from harvestman.crawl.images import ImageStep
    from harvestman.crawl.pageworkers import PageWorkers
    from harvestman.crawl.steps import ValidateStep

Handled = tuple[Outcome, list[NewUrl]]


class RequestHandler:
    """Runs one request through the gates, the fetch and the steps the wiring switched on."""

    def __init__(
        self,
        run: CrawlRun,
        outcomes: Outcomes,
        gates: Sequence[Gate],
        observers: Sequence[HealthObserver],
        exchange_steps: Sequence[ExchangeStep],
        pipeline: PagePipeline,
        *,
        listing_max_bytes: int,
        hold_host_while_handling: bool,
        refusals: ValidateStep | None = None,
        images: ImageStep | None = None,
        image_max_bytes: int | None = None,
        workers: PageWorkers | None = None,
    ) -> None:
        self.run = run
        self.outcomes = outcomes
        self.gates = tuple(gates)
        self.observers = tuple(observers)
        self.exchange_steps = tuple(exchange_steps)
        self.pipeline = pipeline
        self.listing_max_bytes = listing_max_bytes
        self.hold_host_while_handling = hold_host_while_handling
        self.refusals = refusals  # judges error responses: a block page's vendor is recorded
        self.images = images  # makes the outcome of an image row (crawl_images)
        self.image_max_bytes = image_max_bytes
        self.workers = workers  # analyze pages in page processes (parse_processes)

    async def handle(
        self, request: CrawlRequest, fetcher: PageFetcher, check_hop: HopCheck, hosts: HostSlots
    ) -> Handled | None:
        """The request's outcome and the URLs it revealed; None: it went back to the frontier."""
        try:
            for gate in self.gates:
                verdict = await gate.check(request)
                if verdict is None:
                    continue
                if isinstance(verdict, Requeue):
                    await hosts.requeue(request, verdict.not_before, fetched=verdict.fetched)
                    return None
                assert isinstance(verdict, Final)
                await hosts.release(request, fetched=verdict.fetched)
                return verdict.outcome, []
        except BaseException:
            await hosts.release(request, fetched=False)
            raise
        return await self._fetch(request, fetcher, check_hop, hosts)

    async def _fetch(
        self, request: CrawlRequest, fetcher: PageFetcher, check_hop: HopCheck, hosts: HostSlots
    ) -> Handled:
        listings = self.pipeline.listings
        if not listings.streams(request):
            return await self._fetch_now(request, fetcher, check_hop, hosts)
        # Only so many sitemap bodies are held at once, each from its fetch to its last row.
        async with listings.slots:
            return await self._fetch_now(request, fetcher, check_hop, hosts)

    async def _fetch_now(
        self, request: CrawlRequest, fetcher: PageFetcher, check_hop: HopCheck, hosts: HostSlots
    ) -> Handled:
        headers = {}
        if request.etag:
            headers["If-None-Match"] = request.etag
        if request.last_modified:
            headers["If-Modified-Since"] = request.last_modified
        started = self.run.clock()
        max_bytes = None
        if request.kind == "image":
            max_bytes = self.image_max_bytes
        elif request.kind != "page":
            max_bytes = self.listing_max_bytes
        try:
            result = await fetcher.fetch(
                request.url, headers=headers, check_hop=check_hop, max_bytes=max_bytes
            )
        except FetchError as exc:
            await hosts.release(request)
            self.run.stats.inc(f"fetch/error/{type(exc).__name__}")
            self._observe(request, None, type(exc).__name__)
            return _not_a_page(request, self.outcomes.fetch_failure(request, exc, started)), []
        except UrlError as exc:  # a stored URL the HTTP client cannot request
            await hosts.release(request, fetched=False)
            return self.outcomes.final(request, UrlStatus.FAILED, exc), []
        except BaseException:
            await hosts.release(request)
            raise
        retry_after = None
        if result.status in (429, 503):
            retry_after = parse_retry_after(result.headers.get("Retry-After"))
        not_before = self.run.clock() + retry_after if retry_after else 0.0
        if not self.hold_host_while_handling or result.status >= 400:
            await hosts.release(request, not_before=not_before)
            return await self._response(request, result, headers, started, retry_after)
        try:
            return await self._response(request, result, headers, started, retry_after)
        finally:
            await hosts.release(request, not_before=not_before)

    async def _response(
        self,
        request: CrawlRequest,
        result: FetchResult,
        headers: dict[str, str],
        started: float,
        retry_after: float | None,
    ) -> Handled:
        refusal = None
        if result.status >= 400:
            if self.refusals is not None:
                refusal = self.refusals.judge_refusal(request, result)
            hard = refusal is not None and refusal.status is VerdictStatus.HARD
            self._observe(request, result.status, ContentRejected.__name__ if hard else None)
        steps = self.exchange_steps
        # The exchange steps' view (WARC, archive), made only when one is on.
        exchange = None
        if steps:
            exchange = Exchange(request, result, headers)
            for step in steps:
                await step.keep(exchange)
        stats = self.run.stats
        stats.inc("fetch/responses")
        stats.inc(f"fetch/status/{result.status}")
        stats.inc("fetch/bytes", len(result.body))
        if result.status >= 400:
            exc = HttpStatusError(result.status, request.url, retry_after)
            outcome = self.outcomes.fetch_failure(request, exc, started, result)
            if refusal is not None and self.refusals is not None:
                self.refusals.record_refusal(outcome, refusal)
            return _not_a_page(request, outcome), []
        if request.kind == "image" and self.images is not None:
            outcome = await self.images.handle(request, result)
            self._observe(request, result.status, None)
            return outcome, []
        # An image row while images are off (queued by an earlier run): done, not a page.
        pipeline = self.pipeline
        new_urls: list[NewUrl] = []
        if result.status != 304 and pipeline.listings.streams(request):
            outcome = await pipeline.listings.stream(request, result)
        elif pipeline.parses(request, result):
            analysis = None
            if self.workers is not None:
                analysis = await self.workers.analyze(result)
            outcome, new_urls = pipeline.handle_page(request, result, analysis)
        else:
            outcome, new_urls = pipeline.handle(request, result)
        _not_a_page(request, outcome)
        # Told after validation: a block page served with 200 counts against the host.
        self._observe(request, result.status, _refused(outcome))
        if exchange is None:
            return outcome, new_urls
        exchange.outcome, exchange.new_urls = outcome, new_urls
        for step in steps:
            await step.finish(exchange)
        return exchange.outcome, exchange.new_urls

    def _observe(self, request: CrawlRequest, status: int | None, error: str | None) -> None:
        for observer in self.observers:
            observer.observe(request, status, error)


def _not_a_page(request: CrawlRequest, outcome: Outcome) -> Outcome:
    """An image's failure is recorded on its frontier row and its ``images`` rows, not as a
    stored page."""
    if request.kind == "image":
        outcome.page = None
    return outcome


def _refused(outcome: Outcome) -> str | None:
    """The error class of a page validation found hard (the host refuses us), else None."""
    page = outcome.page
    if page is not None and page.validation_status == VerdictStatus.HARD.value:
        return outcome.error_class
    return None
