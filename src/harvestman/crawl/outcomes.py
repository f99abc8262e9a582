"""Outcomes of requests: completed, blocked or failed (built from the exception), or retried."""

from __future__ import annotations

from collections.abc import Callable

from harvestman.crawl.fetch import FetchResult, RetryPolicy
from harvestman.errors import FetchError, HarvestmanError, HttpStatusError
from harvestman.proxies import redact_proxy_url
from harvestman.records import CrawlRequest, Outcome, PageRecord, UrlStatus
from harvestman.stats import Stats


class Outcomes:
    """Builds outcomes with the crawl's clock, revisit interval and retry policy."""

    def __init__(
        self,
        stats: Stats,
        clock: Callable[[], float],
        *,
        visited_ttl: float,
        retry: RetryPolicy,
    ) -> None:
        self.stats = stats
        self.clock = clock
        self.visited_ttl = visited_ttl
        self.retry = retry
        # Operators' re-crawl intervals per host (domain_settings, crawl/controls.py): they
        # replace the visited TTL of the host's pages.
        self.recrawl: dict[str, float] = {}

    def completed(
        self, request: CrawlRequest, result: FetchResult, page: PageRecord | None, again: float
    ) -> Outcome:
        """A response stored as it is, due again after ``again`` seconds (a page: after its
        host's re-crawl interval, when an operator set one)."""
        if request.kind == "page" and self.recrawl:
            again = self.recrawl.get(request.host, again)
        return Outcome(
            request=request,
            status=UrlStatus.COMPLETED,
            next_crawl_at=self.clock() + again,
            attempts=request.attempts,
            status_code=result.status,
            content_hash=page.content_hash if page is not None else None,
            etag=result.headers.get("ETag"),
            last_modified=result.headers.get("Last-Modified"),
            page=page,
            elapsed_ms=int(result.elapsed * 1000),
        )

    def revisit_after(self, request: CrawlRequest) -> float:
        """Seconds before a page fetched now is due again: its host's re-crawl interval, when
        an operator set one, else the visited TTL."""
        return self.recrawl.get(request.host, self.visited_ttl)

    def final(self, request: CrawlRequest, status: UrlStatus, exc: BaseException) -> Outcome:
        """Blocked or failed for good; the row becomes eligible again with the visited TTL
        (when robots.txt may differ)."""
        return Outcome.failed(request, exc, self.clock() + self.visited_ttl, status=status)

    def page_record(self, request: CrawlRequest, result: FetchResult) -> PageRecord:
        return PageRecord(
            url=request.url,
            final_url=result.final_url,
            host=request.host,
            status_code=result.status,
            content_type=result.content_type or None,
            content_length=len(result.body),
            fetched_at=self.clock(),
            crawl_duration_ms=int(result.elapsed * 1000),
            charset=result.charset,
            redirects=result.redirects,
            proxy=redact_proxy_url(result.proxy) if result.proxy else None,
        )

    def fetch_failure(
        self,
        request: CrawlRequest,
        exc: FetchError,
        started: float,
        result: FetchResult | None = None,
    ) -> Outcome:
        """A fetch that failed: retried later while the policy allows, else failed."""
        now = self.clock()
        status_code = result.status if result is not None else None
        if exc.retryable:
            retry_after = exc.retry_after if isinstance(exc, HttpStatusError) else None
            wait = self.retry.delay(request.attempts + 1, retry_after)
            if wait is not None:
                self.stats.inc("fetch/retries")
                retry = Outcome.failed(
                    request,
                    exc,
                    now + wait,
                    status=UrlStatus.PENDING,
                    attempts=request.attempts + 1,
                    status_code=status_code,
                    error=f"{exc} (retry {request.attempts + 1} of {self.retry.max_retries})",
                )
                retry.elapsed_ms = int((now - started) * 1000)  # no page record carries it
                return retry
        if result is not None:
            record = self.page_record(request, result)
        else:
            record = PageRecord(
                url=request.url,
                final_url=exc.url or request.url,
                host=request.host,
                status_code=None,
                content_type=None,
                content_length=None,
                fetched_at=now,
                crawl_duration_ms=int((now - started) * 1000),
            )
        return Outcome.failed(
            request, exc, now + self.visited_ttl, status_code=status_code, page=record
        )

    def rejected(
        self,
        request: CrawlRequest,
        exc: HarvestmanError,
        record: PageRecord,
        *,
        status: UrlStatus,
        again: float,
        attempts: int | None = None,
    ) -> Outcome:
        return Outcome.failed(
            request,
            exc,
            self.clock() + again,
            status=status,
            attempts=attempts,
            status_code=record.status_code,
            page=record,
        )
