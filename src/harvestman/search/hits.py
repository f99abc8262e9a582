"""What a search returns: hits on pages and products, one page of them at a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Generic, TypeVar

RANK_WINDOW = 1000
"""How many of the newest matches are ranked (see :mod:`harvestman.store.search.ranking`); also
the furthest ``offset + limit`` reaches, as web search engines stop at about a thousand results.
Ranking costs PostgreSQL a few µs a row (pages: a short vector kept in the row)."""
MAX_LIMIT = 100  # hits per page

H = TypeVar("H")


@dataclass(frozen=True, slots=True)
class PageHit:
    """A matching page. ``url`` is where the content was found (the final URL)."""

    url: str
    requested_url: str
    title: str | None
    snippet: str
    rank: float
    fetched_at: float
    host: str
    crawl_id: int  # results of every crawl can hold one page twice: each its crawl's
    page_id: int  # the stored page (GET /api/pages/{page_id})


@dataclass(frozen=True, slots=True)
class ProductHit:
    """A matching product. ``url`` is the product's own URL, else the page's; the fields after
    ``host`` are those of the product record (docs/DESIGN.md), ``None`` when not given."""

    name: str | None
    brand: str | None
    price: Decimal | None
    currency: str | None
    availability: str | None
    url: str
    page_url: str
    snippet: str
    rank: float
    updated_at: float
    host: str
    crawl_id: int
    sku: str | None = None
    gtin: str | None = None
    mpn: str | None = None
    condition: str | None = None
    low_price: Decimal | None = None
    high_price: Decimal | None = None
    offer_count: int | None = None
    rating: Decimal | None = None
    best_rating: Decimal | None = None
    worst_rating: Decimal | None = None
    review_count: int | None = None
    rating_count: int | None = None
    sources: tuple[str, ...] = field(default=())
    confidence: float | None = None


@dataclass(frozen=True, slots=True)
class SearchResult(Generic[H]):
    """One page of hits, best first.

    ``total`` counts the matches exactly when ``total_is_exact``; otherwise it is a lower
    bound: more than ``RANK_WINDOW`` rows matched and ``total`` is that window, or (PostgreSQL)
    a phrase had too many rows to check and ``total`` counts its matches among the newest; the
    hits are the best of the newest matches. ``ignored`` are the query's stop words (in more
    than half of the pages), left out of it (see :mod:`harvestman.store.search.ranking`).
    """

    total: int
    total_is_exact: bool
    hits: list[H]
    ignored: tuple[str, ...] = ()
