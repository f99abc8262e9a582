"""Full-text search over stored pages and products: ``GET /api/search``.

Results are the best of at most ``RANK_WINDOW`` matches (see :mod:`harvestman.search`), so
``offset`` stops there and ``total`` is a lower bound when ``total_is_exact`` is false. A query
that cannot find anything by its form (no word, only exclusions) is a 422 ``invalid_query``
with the reason; so are contradictory filters.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from harvestman.api.context import ApiContext, context_of
from harvestman.api.crawls import CrawlQuery, crawl_names
from harvestman.api.crawls import crawl_id as one_crawl_or_all
from harvestman.api.errors import ApiError
from harvestman.api.params import User
from harvestman.errors import QueryError
from harvestman.search.highlight import to_html
from harvestman.search.hits import MAX_LIMIT, RANK_WINDOW, PageHit, ProductHit, SearchResult
from harvestman.search.query import MAX_QUERY_CHARS, require_query

router = APIRouter(tags=["search"])

# extract.vocabulary.AVAILABILITY_VALUES, spelled out for the OpenAPI schema (a test holds
# them equal).
Availability = Literal[
    "in_stock", "out_of_stock", "preorder", "presale", "backorder", "made_to_order",
    "discontinued", "limited", "online_only", "in_store_only", "sold_out", "reserved",
]  # fmt: skip
Text = Annotated[
    str,
    Query(min_length=1, max_length=MAX_QUERY_CHARS,
          description='words (all required), "a phrase", a OR b, -excluded'),
]  # fmt: skip
CrawlName = CrawlQuery
Domain = Annotated[
    str | None, Query(min_length=1, max_length=300, description="a host, example.com also www.")
]
Time = Annotated[float | None, Query(ge=0, le=1e11, allow_inf_nan=False)]
Price = Annotated[float | None, Query(ge=0, le=1e12, allow_inf_nan=False)]


_R = TypeVar("_R", bound=SearchResult[Any])


class PageHitOut(BaseModel):
    url: str = Field(description="where the content was found (the final URL)")
    requested_url: str
    title: str | None
    snippet: str = Field(description="HTML: the text escaped, the matched words in <mark>")
    rank: float = Field(description="higher is better; compares within one result only")
    fetched_at: float
    host: str
    crawl_id: int
    crawl: str | None = Field(description="the crawl's name: a page stored by two is listed twice")
    page_id: int = Field(description="the stored page: GET /api/pages/{page_id}")


class ProductHitOut(BaseModel):
    name: str | None
    brand: str | None
    price: Decimal | None
    currency: str | None
    availability: str | None
    url: str = Field(description="the product's own URL, else the page's")
    page_url: str
    snippet: str = Field(description="HTML: the text escaped, the matched words in <mark>")
    rank: float
    updated_at: float
    host: str
    sku: str | None = None
    gtin: str | None = Field(None, description="GTIN-8, -12, -13 or -14 digits, check digit valid")
    mpn: str | None = None
    condition: str | None = Field(None, description="new, used, refurbished or damaged")
    low_price: Decimal | None = Field(None, description="of its AggregateOffer")
    high_price: Decimal | None = None
    offer_count: int | None = None
    rating: Decimal | None = Field(None, description="within worst_rating..best_rating")
    best_rating: Decimal | None = None
    worst_rating: Decimal | None = None
    review_count: int | None = None
    rating_count: int | None = None
    sources: list[str] = Field(
        default_factory=list, description="the structured data forms that agree on it"
    )
    confidence: float | None = Field(None, description="0..1: how far those forms agree")
    crawl_id: int
    crawl: str | None = Field(description="the crawl's name")


class SearchOut(BaseModel):
    target: Literal["pages", "products"]
    items: list[PageHitOut] | list[ProductHitOut]
    total: int = Field(description="matches; a lower bound when total_is_exact is false")
    total_is_exact: bool
    limit: int
    offset: int
    next_offset: int | None = Field(description="the offset of the next page, if any")
    ignored: list[str] = Field(description="words in most documents, left out of the query")


@router.get("/api/search")
async def search(
    request: Request,
    _: User,
    q: Text,
    target: Literal["pages", "products"] = "pages",
    crawl: CrawlName = None,
    domain: Domain = None,
    since: Time = None,
    until: Time = None,
    min_price: Price = None,
    max_price: Price = None,
    currency: str | None = Query(None, min_length=3, max_length=3, pattern="^[A-Za-z]{3}$"),
    availability: list[Availability] | None = Query(None, max_length=20),
    limit: int = Query(20, ge=1, le=MAX_LIMIT),
    offset: int = Query(0, ge=0, lt=RANK_WINDOW, description=f"results end at {RANK_WINDOW}"),
) -> SearchOut:
    """Ranked pages (``since``/``until``: when fetched, epoch seconds) or products (also
    ``min_price``/``max_price``, ``currency``, ``availability``; dates: when changed)."""
    try:
        require_query(q)
    except QueryError as exc:
        raise ApiError(422, exc.reason, code="invalid_query", details={"q": q[:200]}) from None
    _check_filters(target, since, until, min_price, max_price, currency, availability)
    ctx = context_of(request)
    store = ctx.sql_store
    crawl_id = await one_crawl_or_all(ctx, crawl)
    items: list[PageHitOut] | list[ProductHitOut]
    result: SearchResult[PageHit] | SearchResult[ProductHit]
    if target == "pages":
        pages, names = await ctx.read(
            lambda: _named(ctx, store.search.search_pages(crawl_id, q, domain=domain, since=since,
                                                          until=until, limit=limit, offset=offset))
        )  # fmt: skip
        result = pages
        items = [_page_out(hit, names.get(hit.crawl_id)) for hit in pages.hits]
    else:
        products, names = await ctx.read(
            lambda: _named(ctx, store.search.search_products(
                crawl_id, q, domain=domain, since=since, until=until,
                min_price=None if min_price is None else Decimal(str(min_price)),
                max_price=None if max_price is None else Decimal(str(max_price)),
                currency=currency, availability=availability, limit=limit, offset=offset,
            ))
        )  # fmt: skip
        result = products
        items = [_product_out(hit, names.get(hit.crawl_id)) for hit in products.hits]
    end = offset + len(result.hits)
    more = len(result.hits) == limit and end < min(result.total, RANK_WINDOW)
    return SearchOut(
        target=target,
        items=items,
        total=result.total,
        total_is_exact=result.total_is_exact,
        limit=limit,
        offset=offset,
        next_offset=end if more else None,
        ignored=list(result.ignored),
    )


def _check_filters(
    target: str,
    since: float | None,
    until: float | None,
    min_price: float | None,
    max_price: float | None,
    currency: str | None,
    availability: Sequence[str] | None,
) -> None:
    """Filters that contradict each other or the target: a 422 rather than nothing found."""
    product_only = {
        "min_price": min_price, "max_price": max_price, "currency": currency,
        "availability": availability,
    }  # fmt: skip
    given = [name for name, value in product_only.items() if value is not None]
    if target == "pages" and given:
        raise ApiError(422, f"{', '.join(given)} filter products: add target=products",
                       code="invalid_query", details={"filters": given})  # fmt: skip
    if since is not None and until is not None and since >= until:
        raise ApiError(422, "since must be before until", code="invalid_query")
    if min_price is not None and max_price is not None and min_price > max_price:
        raise ApiError(422, "min_price is above max_price", code="invalid_query")


def _named(ctx: ApiContext, result: _R) -> tuple[_R, dict[int, str]]:
    """``result`` and the names of its hits' crawls, looked up on the store's thread in the
    same hop as the search (``crawl_names``: known names come from the context's cache)."""
    return result, crawl_names(ctx, (hit.crawl_id for hit in result.hits))


def _page_out(hit: PageHit, crawl: str | None) -> PageHitOut:
    return PageHitOut(
        url=hit.url, requested_url=hit.requested_url, title=hit.title,
        snippet=to_html(hit.snippet), rank=hit.rank, fetched_at=hit.fetched_at, host=hit.host,
        crawl_id=hit.crawl_id, crawl=crawl, page_id=hit.page_id,
    )  # fmt: skip


def _product_out(hit: ProductHit, crawl: str | None) -> ProductHitOut:
    return ProductHitOut(
        name=hit.name, brand=hit.brand, price=hit.price, currency=hit.currency,
        availability=hit.availability, url=hit.url, page_url=hit.page_url,
        snippet=to_html(hit.snippet), rank=hit.rank, updated_at=hit.updated_at, host=hit.host,
        sku=hit.sku, gtin=hit.gtin, mpn=hit.mpn, condition=hit.condition,
        low_price=hit.low_price, high_price=hit.high_price, offer_count=hit.offer_count,
        rating=hit.rating, best_rating=hit.best_rating, worst_rating=hit.worst_rating,
        review_count=hit.review_count, rating_count=hit.rating_count,
        sources=list(hit.sources), confidence=hit.confidence, crawl_id=hit.crawl_id, crawl=crawl,
    )  # fmt: skip
