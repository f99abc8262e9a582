"""Domain records passed between the frontier, the crawler and the store.

These are plain dataclasses: the store turns them into rows, the API into schemas. They hold
typed fields, never string-keyed ``meta`` dicts.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Literal

import orjson

from harvestman.errors import ConfigError

if TYPE_CHECKING:
    from harvestman.recrawl import RecrawlRule

EVERY_DOMAIN: Final = "*"  # a parser rollout's domain when it covers every domain


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


# How a URL was found (urls.discovered_via).
DISCOVERED_VIA = ("seed", "link", "sitemap", "feed", "pagination", "archive")


@dataclass(slots=True)
class NewUrl:
    """A URL to add to the frontier (normalized, hashed, scoped by the caller)."""

    url: str
    url_hash: str
    host: str
    depth: int
    priority: int
    kind: str = "page"  # page | sitemap | feed | image
    lastmod: float | None = None  # when a sitemap or feed says it last changed
    # Where it was found: the frontier row of the page, sitemap or feed (None: a seed or an
    # API add), and how (DISCOVERED_VIA); kept on the URL's row when it is new.
    parent_id: int | None = None
    via: str | None = None
    due_at: float | None = None  # not before (the ingest limit's deferral); None: at once


@dataclass(slots=True)
class CrawlRequest:
    """A leased frontier row: the unit of work the crawler fetches."""

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
class ImageRecord:
    """A product image downloaded and kept: written to every ``images`` row of the crawl that
    shows ``url``. ``path`` is its key in the blob store (one per ``sha256``)."""

    url: str
    path: str
    bytes: int
    sha256: str
    content_type: str
    width: int
    height: int
    fetched_at: float


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
    image: ImageRecord | None = None  # a product image downloaded (request.kind "image")
    # A product page's adaptive re-crawl (products_recrawl_interval): the store applies it as
    # it compares the page's products with the stored ones; None: next_crawl_at stands.
    recrawl: RecrawlRule | None = None
    # How long the fetch took, for the run's log (a 304 has no page record to carry it).
    elapsed_ms: int | None = None

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


@dataclass(slots=True, frozen=True)
class DomainControl:
    """What an operator set for one host (``domain_settings``): every worker applies it
    within ``domain_settings_ttl``. None: the crawl's own setting applies.

    ``paused``: the host's URLs stay pending (a paused host does not keep a crawl running);
    ``crawl_delay``: seconds between requests, never below robots.txt's Crawl-delay;
    ``concurrency``: requests in flight to the host; ``recrawl_interval``: seconds before a
    fetched page is due again (the crawl's visited TTL otherwise); ``priority``: hosts with a
    higher one are leased and handed out first when several are ready.
    """

    host: str
    paused: bool = False
    crawl_delay: float | None = None
    concurrency: int | None = None
    recrawl_interval: float | None = None
    priority: int = 0


@dataclass(slots=True)
class CrawlCounts:
    """Frontier rows by status and pages stored, for one crawl namespace."""

    by_status: dict[str, int]
    pages: int

    @property
    def fetched(self) -> int:
        return self.by_status.get("completed", 0) + self.by_status.get("failed", 0)


@dataclass(frozen=True, slots=True)
class ParserRollout:
    """A site parser's candidate ``version`` parses ``share`` (0.0-1.0) of ``domain``'s pages
    (``"*"``: every domain without a rollout of its own); another loaded version the rest.
    Promoted: share 1.0; rolled back: 0.0. Kept in ``parser_rollouts``, or given by the
    ``parser_rollouts`` setting."""

    parser: str
    version: str
    share: float
    domain: str = "*"
    updated_at: float = 0.0
    updated_by: str | None = None


def parse_rollout(text: str) -> ParserRollout:
    """A rollout from the ``parser_rollouts`` setting: ``name@version=share`` (every domain)
    or ``name@version@domain=share``, share from 0 to 1.

    >>> parse_rollout("acme@2.0@shop.test=0.1")
    ParserRollout(parser='acme', version='2.0', share=0.1, domain='shop.test', updated_at=0.0, updated_by=None)
    """  # noqa: E501
    head, equals, share_text = text.rpartition("=")
    parts = head.split("@")
    if not equals or len(parts) not in (2, 3) or not all(p.strip() for p in parts):
        raise ConfigError(f"parser rollout {text!r}: write name@version[@domain]=share")
    try:
        share = float(share_text)
    except ValueError:
        share = -1.0
    if not 0.0 <= share <= 1.0:
        raise ConfigError(f"parser rollout {text!r}: the share is a number from 0 to 1")
    domain = parts[2].strip().lower() if len(parts) == 3 else EVERY_DOMAIN
    return ParserRollout(parts[0].strip(), parts[1].strip(), share, domain)


@dataclass(frozen=True, slots=True)
class Record:
    """One thing a site parser extracted from a page.

    ``kind`` names what it is (``"article"``, ``"listing"``, ``"event"``...); ``data`` its
    fields, JSON-serializable (``Decimal`` is written as a string, dates and datetimes in ISO
    8601). ``parser`` and ``parser_version`` are set by the registry to the parser that made
    the record, whatever the parser put there. ``key`` names the record among what its parser
    finds on the page (a SKU, an event id; at most 200 characters, unique per page and
    parser): the store keeps one row per page, parser and key, so a record that moves on the
    page stays the same row. Without a key, its position in the parser's list is its key.
    """

    kind: str
    data: dict[str, Any]
    parser: str = ""
    parser_version: str = ""
    key: str = ""

    def data_json(self) -> str:
        """``data`` as compact JSON with sorted keys (how the store keeps it)."""
        return orjson.dumps(self.data, option=orjson.OPT_SORT_KEYS, default=_json_default).decode()

    def content_hash(self) -> str:
        """SHA-256 hex of kind, parser, version and data: unchanged records need no rewrite."""
        head = f"{self.kind}\0{self.parser}\0{self.parser_version}\0"
        return hashlib.sha256((head + self.data_json()).encode()).hexdigest()


def positional_key(index: int) -> str:
    """The store key of a record without one: its position in its parser's list (``"#0"``)."""
    return f"#{index}"


@dataclass(frozen=True, slots=True)
class ParserRun:
    """One parser on one page: ``outcome`` ``"ok"`` (records found), ``"empty"`` or ``"error"``."""

    parser: str
    version: str
    outcome: Literal["ok", "empty", "error"]
    records: int = 0
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class ParserFailure:
    """A parser that raised, or returned something other than a list of valid records.

    ``error_class`` is ``"ParserFailed"``; ``message`` starts with the original exception's
    class name (``"KeyError: 'price'"``, ``"InvalidRecord: record 2: data is not a dict"``);
    ``traceback`` is the formatted stack (capped at 8,000 characters).
    """

    parser: str
    version: str
    url: str
    message: str
    traceback: str = ""
    error_class: str = "ParserFailed"


def _json_default(value: object) -> str:
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serializable")
