"""The crawl store's browsable lists: pages, frontier rows, domains (the API pages them).

A filter is a frozen value naming one list and its conditions, so it also keys the API's
count cache. Each list's order is one unique column and every filter combination of one crawl
but a host substring is served by an index ending in that column (migration 0009);
``SqlStore.list_rows`` and ``SqlStore.count_rows`` run them. ``crawl_id`` None lists every
crawl: the page walks the key's own order (the primary key) and filters, which is fast for
the unfiltered list and for common values, and slow for a rare one on a large store (no index
leads with host or status alone: they would cost every write of the frontier).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sqlalchemy import Column, ColumnElement, Table, and_
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import BinaryExpression

from harvestman.store.keyset import Keyset
from harvestman.store.schema import crawled_pages, domains, urls

PAGE_FIELDS = (
    "id", "crawl_id", "url", "final_url", "host", "status_code", "content_type", "content_length",
    "content_hash", "title", "description", "canonical", "lang", "links_count",
    "crawl_duration_ms", "fetched_at", "error_class", "error", "validation_status",
    "rejection_reason", "near_duplicate_of",
)  # fmt: skip
URL_FIELDS = (
    "id", "crawl_id", "url", "url_hash", "host", "status", "kind", "priority", "depth",
    "next_crawl_at", "lease_until", "leased_by", "attempts", "discovered_at", "last_fetched_at",
    "status_code", "error_class", "error",
)  # fmt: skip
DISCOVERED_FIELDS = (
    "id", "crawl_id", "url", "host", "status", "kind", "depth", "discovered_at", "parent_id",
    "discovered_via",
)  # fmt: skip
# What a discovered link may have come from (records.DISCOVERED_VIA but the seeds).
LINK_SOURCES = ("link", "sitemap", "feed", "pagination", "archive")
DOMAIN_FIELDS = (
    "host", "robots_status", "robots_fetched_at", "crawl_delay", "allowed", "page_count",
    "updated_at", "next_allowed_at",
)  # fmt: skip


class RowFilter:
    """One list of the crawl store and the conditions on it."""

    table: ClassVar[Table]
    fields: ClassVar[tuple[str, ...]]
    keyset: ClassVar[Keyset]

    def conditions(self) -> list[ColumnElement[bool]]:
        raise NotImplementedError

    def index_prefix(self) -> list[Column[Any]]:
        """The equal columns of the index that serves this filter (``Keyset.page``)."""
        return []

    def page_conditions(self, dialect_name: str) -> list[ColumnElement[bool]]:
        """``conditions`` for reading a page in key order.

        On PostgreSQL an equality on an index column after the first is written as a range
        of one value. The planner drops an ORDER BY column held equal, so the order left is
        the key's alone, which the primary key serves too: it then walks the primary key and
        filters, guessing matches are spread evenly; when they are the newest rows (a crawl's
        pending URLs) that walk reads all the older ones (884 ms for the first page of 500,000
        pending URLs among 1,000,000, against 2 ms). A range keeps the column in the order, so
        only the filter's index serves it, and a B-tree still starts the scan at the first
        match past the cursor (=, >= then > keys all position it).
        """
        conditions = self.conditions()
        if dialect_name != "postgresql":
            return conditions
        later = {column.name for column in self.index_prefix()[1:]}
        return [_as_range(c) if _equal_on(c, later) else c for c in conditions]


@dataclass(frozen=True, slots=True, kw_only=True)
class PageFilter(RowFilter):
    """Stored pages of a crawl, newest first."""

    table = crawled_pages
    fields = PAGE_FIELDS
    keyset = Keyset(crawled_pages.c.id, descending=True)

    crawl_id: int | None  # None: every crawl
    host: str | None = None
    status_code: int | None = None
    validation_status: str | None = None
    since: float | None = None  # fetched at or after

    def conditions(self) -> list[ColumnElement[bool]]:
        c = crawled_pages.c
        where = [] if self.crawl_id is None else [c.crawl_id == self.crawl_id]
        if self.host:
            where.append(c.host == self.host.lower())
        if self.status_code is not None:
            where.append(c.status_code == self.status_code)
        if self.validation_status:
            where.append(c.validation_status == self.validation_status)
        if self.since is not None:
            where.append(c.fetched_at >= self.since)
        return where

    def index_prefix(self) -> list[Column[Any]]:
        c = crawled_pages.c
        if self.crawl_id is None:
            return []
        if self.host:
            return [c.crawl_id, c.host]
        if self.status_code is not None:
            return [c.crawl_id, c.status_code]
        if self.validation_status:
            return [c.crawl_id, c.validation_status]
        return [c.crawl_id]


@dataclass(frozen=True, slots=True, kw_only=True)
class UrlFilter(RowFilter):
    """Frontier rows of a crawl in id (discovery) order."""

    table = urls
    fields = URL_FIELDS
    keyset = Keyset(urls.c.id)

    crawl_id: int | None  # None: every crawl
    status: str | None = None
    host: str | None = None

    def conditions(self) -> list[ColumnElement[bool]]:
        where = [] if self.crawl_id is None else [urls.c.crawl_id == self.crawl_id]
        if self.status:
            where.append(urls.c.status == self.status)
        if self.host:
            where.append(urls.c.host == self.host.lower())
        return where

    def index_prefix(self) -> list[Column[Any]]:
        if self.crawl_id is None:
            return []
        if self.host:  # with a status too: a host's rows are few, the status is filtered
            return [urls.c.crawl_id, urls.c.host]
        if self.status:
            return [urls.c.crawl_id, urls.c.status]
        return [urls.c.crawl_id]


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscoveredFilter(RowFilter):
    """URLs a crawl found on its pages, sitemaps and feeds, in id (discovery) order: all of
    them, those one frontier row revealed (``parent_id``: ``ix_urls_parent``), of one kind of
    discovery (``via``) or one host. Only a URL's first discovery is recorded."""

    table = urls
    fields = DISCOVERED_FIELDS
    keyset = Keyset(urls.c.id)

    crawl_id: int | None  # None: every crawl
    parent_id: int | None = None
    via: str | None = None
    host: str | None = None

    def conditions(self) -> list[ColumnElement[bool]]:
        where = [] if self.crawl_id is None else [urls.c.crawl_id == self.crawl_id]
        if self.parent_id is not None:
            where.append(urls.c.parent_id == self.parent_id)
        if self.via:
            where.append(urls.c.discovered_via == self.via)
        else:
            where.append(urls.c.discovered_via.in_(LINK_SOURCES))
        if self.host:
            where.append(urls.c.host == self.host.lower())
        return where

    def index_prefix(self) -> list[Column[Any]]:
        if self.crawl_id is None:
            return []
        if self.parent_id is not None:
            return [urls.c.crawl_id, urls.c.parent_id]
        if self.host:
            return [urls.c.crawl_id, urls.c.host]
        return [urls.c.crawl_id]


@dataclass(frozen=True, slots=True, kw_only=True)
class DomainFilter(RowFilter):
    """Known domains by host name. A substring matches no index: the host order is walked
    until a page is full, which is fast unless the substring is rare."""

    table = domains
    fields = DOMAIN_FIELDS
    keyset = Keyset(domains.c.host)

    host_contains: str | None = None

    def conditions(self) -> list[ColumnElement[bool]]:
        if not self.host_contains:
            return []
        return [domains.c.host.icontains(self.host_contains, autoescape=True)]


def _equal_on(condition: ColumnElement[bool], names: set[str]) -> bool:
    return (
        isinstance(condition, BinaryExpression)
        and condition.operator is operators.eq
        and isinstance(condition.left, Column)
        and condition.left.name in names
    )


def _as_range(condition: ColumnElement[bool]) -> ColumnElement[bool]:
    equal: Any = condition
    return and_(equal.left >= equal.right, equal.left <= equal.right)


def columns(where: RowFilter) -> list[Any]:
    return [where.table.c[name] for name in where.fields]
