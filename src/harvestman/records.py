"""Domain records passed between the frontier, the engine and the store.

These are plain dataclasses: the store turns them into rows, the API into schemas. They hold
typed fields, never string-keyed ``meta`` dicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harvestman.extract.plugins import ParserFailure, ParserRun, Record
    from harvestman.recrawl import RecrawlRule


class UrlStatus(StrEnum):
    """The life of a frontier row.

    ``pending`` (due at ``next_crawl_at``) -> ``in_progress`` (leased until ``lease_until``) ->
    ``completed`` (a 2xx/304 response), ``failed`` (an HTTP error or a fetch error after its
    retries) or ``blocked`` (robots.txt denies it). A retry goes back to ``pending`` with a later
    ``next_crawl_at``; an expired lease goes back to ``pending`` at once.
    """

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"
    BLOCKED = "blocked"


@dataclass(slots=True)
class NewUrl:
    """A URL to add to the frontier (normalized, hashed, scoped by the caller)."""

    url: str
    url_hash: str
    host: str
    depth: int
    priority: int
    kind: str = "page"  # page | sitemap | feed
    lastmod: float | None = None  # when a sitemap or feed says it last changed


@dataclass(slots=True)
class CrawlRequest:
    """A leased frontier row: the unit of work the engine fetches."""

    id: int
    url: str
    url_hash: str
    host: str
    depth: int
    priority: int
    attempts: int = 0
    etag: str | None = None
    last_modified: str | None = None
    kind: str = "page"


@dataclass(slots=True)
class PageRecord:
    """What one fetch of one URL produced: a row of ``crawled_pages``."""

    url: str
    final_url: str
    host: str
    status_code: int | None
    content_type: str | None
    content_length: int | None
    fetched_at: float
    crawl_duration_ms: int
    charset: str | None = None
    content_hash: str | None = None
    title: str | None = None
    description: str | None = None
    canonical: str | None = None
    lang: str | None = None
    links_count: int = 0
    redirects: list[str] = field(default_factory=list)
    error_class: str | None = None
    error: str | None = None
    validation_status: str | None = None
    rejection_reason: str | None = None
    simhash: int | None = None
    near_duplicate_of: str | None = None
    proxy: str | None = None
    archive_path: str | None = None
    text: str | None = None
    main_text: str | None = None  # the article without boilerplate, when extracted (opt-in)


@dataclass(slots=True)
class Outcome:
    """The result of handling one leased request, written back in a batch."""

    request: CrawlRequest
    status: UrlStatus
    next_crawl_at: float
    attempts: int
    status_code: int | None = None
    error_class: str | None = None
    error: str | None = None
    content_hash: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    page: PageRecord | None = None
    products: list[Any] | None = None  # extract.products.Product, for pages that have them
    stack_trace: str | None = None  # for internal errors
    # What site parsers made of the page (extract.plugins): the records, one ParserRun per
    # parser that handled it (the stats), one ParserFailure per parser that failed.
    records: list[Record] | None = None
    parser_runs: list[ParserRun] | None = None
    parse_failures: list[ParserFailure] | None = None
    # A product page's adaptive re-crawl (products_recrawl_interval): the store applies it as
    # it compares the page's products with the stored ones; None: next_crawl_at stands.
    recrawl: RecrawlRule | None = None

    @classmethod
    def failed(
        cls,
        request: CrawlRequest,
        exc: BaseException,
        next_crawl_at: float,
        *,
        status: UrlStatus = UrlStatus.FAILED,
        attempts: int | None = None,
        error: str | None = None,
        page: PageRecord | None = None,
        status_code: int | None = None,
    ) -> Outcome:
        """The outcome that records ``exc``: ``error_class`` is its class name (its category
        follows from the class, see :mod:`harvestman.errors`), ``error`` its message unless
        given. A ``page`` given carries the same class and message."""
        error_class = type(exc).__name__
        message = str(exc) if error is None else error
        if page is not None:
            page.error_class, page.error = error_class, message
        return cls(
            request=request,
            status=status,
            next_crawl_at=next_crawl_at,
            attempts=request.attempts if attempts is None else attempts,
            status_code=status_code,
            error_class=error_class,
            error=message,
            page=page,
        )


@dataclass(slots=True)
class DomainRecord:
    """Per-host state kept in the store: the robots.txt cache and counters."""

    host: str
    robots_txt: str | None = None
    robots_status: int | None = None
    robots_fetched_at: float | None = None
    crawl_delay: float | None = None
    allowed: bool = True
    page_count: int = 0


@dataclass(slots=True)
class CrawlCounts:
    """Frontier rows by status and pages stored, for one crawl namespace."""

    by_status: dict[str, int]
    pages: int

    @property
    def fetched(self) -> int:
        return self.by_status.get("completed", 0) + self.by_status.get("failed", 0)
