"""Stored products as a data product: ``GET /api/products`` (filters, orders, keyset pages),
``GET /api/products/export`` (the same list as a CSV or JSONL download), ``GET
/api/products/{id}`` and ``GET /api/products/{id}/history``.

Filters share ``/api/search``'s names and bounds where they overlap (``crawl``, ``domain``,
``since``, ``min_price``, ``max_price``, ``currency``, ``availability``). A list has no total:
counting a million filtered products cost more than the page (``next_cursor`` says whether
another page follows). Prices are exact decimal strings, as in search and the JSONL export.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field
from starlette.responses import Response, StreamingResponse

from harvestman.api import paging
from harvestman.api.context import ApiContext, context_of
from harvestman.api.crawls import crawl_id as _crawl_id
from harvestman.api.crawls import name_rows
from harvestman.api.downloads import Format, download_response, iso_time
from harvestman.api.errors import ApiError
from harvestman.api.params import Cursor, Id, User
from harvestman.api.routes.search import Availability, CrawlName, Domain, Price, Time
from harvestman.store.products import ProductQuery

router = APIRouter(tags=["products"])

Currency = Annotated[
    str | None, Query(min_length=3, max_length=3, pattern="^[A-Za-z]{3}$", description="ISO 4217")
]
Name = Annotated[
    str | None, Query(min_length=1, max_length=200, description="equal, ignoring case")
]
Parser = Annotated[
    str | None,
    Query(min_length=1, max_length=100, description="name@version, or a name: every version"),
]
Rating = Annotated[float | None, Query(ge=0, le=10**4, allow_inf_nan=False)]
Limit = Annotated[int, Query(ge=1, le=1000, description="up to api_products_max_limit (200)")]


class ImageOut(BaseModel):
    url: str
    alt: str | None
    width: int | None
    height: int | None


class OfferOut(BaseModel):
    price: str | None = Field(description="exact decimal")
    currency: str | None
    availability: str | None
    condition: str | None
    low_price: str | None = Field(description="of its AggregateOffer")
    high_price: str | None
    offer_count: int | None


class SeenOut(BaseModel):
    page_url: str = Field(description="the page it was found on")
    first_seen_at: float
    changed_at: float = Field(description="when its stored record last changed")
    last_seen_at: float | None = Field(description="when its page was last fetched")


class ProductOut(BaseModel):
    id: int
    crawl_id: int
    crawl: str | None = Field(None, description="the crawl's name (the crawl parameter)")
    name: str | None
    brand: str | None
    category: str | None
    url: str = Field(description="the product's own URL, else its page's")
    domain: str | None = Field(description="the host of its page")
    sku: str | None
    gtin: str | None
    mpn: str | None
    rating: str | None
    best_rating: str | None
    worst_rating: str | None
    review_count: int | None
    rating_count: int | None
    source: str
    parser: str
    sources: list[str]
    confidence: float | None
    offers: list[OfferOut]
    images: list[ImageOut]
    seen: SeenOut
    description: str | None = Field(None, description="GET /api/products/{id} only")
    errors: list[str] | None = Field(None, description="GET /api/products/{id} only")


class ProductPage(BaseModel):
    items: list[ProductOut]
    next_cursor: str | None = Field(description="the `cursor` of the next page; null: the last")
    limit: int


class ChangeOut(BaseModel):
    id: int
    changed_at: float
    price: str | None
    currency: str | None
    availability: str | None


class HistoryPage(BaseModel):
    items: list[ChangeOut] = Field(description="oldest first; the first is its first sighting")
    next_cursor: str | None
    limit: int


class DecimalResponse(Response):
    """JSON with every Decimal as its exact string (no padding zeros)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        # a row's keys are column names: str subclasses, which orjson takes only so
        return orjson.dumps(content, default=_decimal, option=orjson.OPT_NON_STR_KEYS)


def _decimal(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    raise TypeError(f"{type(value).__name__} is not JSON")


async def product_query(
    request: Request,
    crawl: CrawlName = None,
    min_price: Price = None,
    max_price: Price = None,
    currency: Currency = None,
    availability: list[Availability] | None = Query(None, max_length=20),
    brand: Name = None,
    category: Name = None,
    min_rating: Rating = None,
    domain: Domain = None,
    parser: Parser = None,
    since: Time = None,
    sort: Literal["price", "rating", "changed"] = "changed",
    order: Literal["asc", "desc"] = "desc",
) -> ProductQuery:
    """The products the list and its download hold: every filter given, in one order."""
    ctx = context_of(request)
    if min_price is not None and max_price is not None and min_price > max_price:
        raise ApiError(422, "min_price is above max_price", code="invalid_query")
    return ProductQuery(
        crawl_id=await _crawl_id(ctx, crawl),
        min_price=_decimal_of(min_price),
        max_price=_decimal_of(max_price),
        currency=currency,
        availability=tuple(dict.fromkeys(availability or ())),
        brand=brand,
        category=category,
        min_rating=_decimal_of(min_rating),
        domain=domain,
        parser=parser,
        since=since,
        sort=sort,
        descending=order == "desc",
    )


Products = Annotated[ProductQuery, Depends(product_query)]


@router.get("/api/products", response_model=ProductPage)
async def list_products(
    request: Request,
    _: User,
    query: Products,
    limit: Limit | None = None,
    cursor: Cursor = None,
) -> Response:
    """Stored products matching every filter given, by price, rating or last change
    (``since``: changed at or after, epoch seconds). Sorted by price or rating, products
    without one are left out. Each with its offers, images and where it was seen (``limit``:
    50, or api_products_max_limit when lower)."""
    ctx = context_of(request)
    limit = limit or min(50, ctx.settings.products_max_limit)
    _check_limit(ctx, limit)
    kind = f"products-{query.sort}-{'desc' if query.descending else 'asc'}"
    key = paging.decode_cursor(kind, cursor, text_key=True)
    after = None if key is None else str(key)

    def read() -> tuple[list[dict[str, Any]], str | None]:
        found, next_key = ctx.sql_store.products.list_products(query, after=after, limit=limit)
        name_rows(ctx, found)
        return found, next_key

    try:
        items, next_after = await ctx.read(read)
    except ValueError:
        raise ApiError(
            422,
            "invalid cursor: pass the next_cursor of a previous page of this list",
            details={"cursor": (cursor or "")[:100]},
        ) from None
    return DecimalResponse(
        {"items": items, "next_cursor": paging.encode_cursor(kind, next_after), "limit": limit}
    )


# The download's CSV columns: a product's fields, its first offer's, where it was seen (times
# in ISO 8601) and its image URLs, space-separated (see api/downloads.py).
EXPORT_COLUMNS = (
    "id", "name", "brand", "category", "price", "currency", "availability", "condition",
    "low_price", "high_price", "offer_count", "rating", "review_count", "sku", "gtin", "mpn",
    "url", "page_url", "domain", "crawl_id", "crawl", "source", "parser", "first_seen_at",
    "changed_at", "last_seen_at", "images",
)  # fmt: skip
_OFFER_COLUMNS = ("price", "currency", "availability", "condition", "low_price", "high_price",
                  "offer_count")  # fmt: skip
_SEEN_TIMES = ("first_seen_at", "changed_at", "last_seen_at")
_DECIMAL_COLUMNS = ("price", "low_price", "high_price", "rating")


def _product_row(item: dict[str, Any]) -> list[Any]:
    offer = item["offers"][0] if item["offers"] else {}
    flat = {**item, **{name: offer.get(name) for name in _OFFER_COLUMNS}}
    flat.update({name: iso_time(item["seen"][name]) for name in _SEEN_TIMES})
    flat["page_url"] = item["seen"]["page_url"]
    flat["images"] = " ".join(image["url"] for image in item["images"])
    for name in _DECIMAL_COLUMNS:
        if flat[name] is not None:
            flat[name] = _decimal(flat[name])
    return [flat[name] for name in EXPORT_COLUMNS]


@router.get("/api/products/export", response_class=StreamingResponse)
async def export_products(
    request: Request,
    _: User,
    query: Products,
    format: Format = Query("csv", description="csv or jsonl"),
) -> Response:
    """Every product ``GET /api/products`` lists for these filters, in its order, as a CSV or
    JSONL file (a line: one item of the list); at most ``api_export_max_rows``."""
    ctx = context_of(request)

    def read(after: str | None, limit: int) -> tuple[list[dict[str, Any]], str | None]:
        found, next_key = ctx.sql_store.products.list_products(query, after=after, limit=limit)
        name_rows(ctx, found)  # each product's crawl, as the list says it
        return found, next_key

    async def rows(after: str | None, limit: int) -> tuple[list[dict[str, Any]], str | None]:
        return await ctx.read(read, after, limit)

    crawl = request.query_params.get("crawl")
    return download_response(
        format,
        "products",
        rows,
        columns=EXPORT_COLUMNS,
        flatten=_product_row,
        most=ctx.settings.export_max_rows,
        scope=crawl or "all",
        default=_decimal,
    )


@router.get("/api/products/{product_id}", response_model=ProductOut)
async def get_product(request: Request, product_id: Id, _: User) -> Response:
    """One product, with its description and what its extraction skipped (``errors``)."""
    ctx = context_of(request)
    item = await ctx.read(ctx.sql_store.products.get_product, product_id)
    if item is None:
        raise ApiError(404, f"no product {product_id}", details={"id": product_id})
    await ctx.read(name_rows, ctx, [item])
    return DecimalResponse(item)


@router.get("/api/products/{product_id}/history", response_model=HistoryPage)
async def product_history(
    request: Request, product_id: Id, _: User, limit: Limit | None = None, cursor: Cursor = None
) -> Response:
    """Each change of the product's price, currency or availability, oldest first (``limit``:
    api_products_max_limit unless given)."""
    ctx = context_of(request)
    limit = limit or ctx.settings.products_max_limit
    _check_limit(ctx, limit)
    key = paging.decode_cursor("product-history", cursor)
    after = None if key is None else int(key)
    found = await ctx.read(
        lambda: ctx.sql_store.products.product_history(product_id, after=after, limit=limit)
    )
    if found is None:
        raise ApiError(404, f"no product {product_id}", details={"id": product_id})
    items, next_after = found
    return DecimalResponse(
        {
            "items": items,
            "next_cursor": paging.encode_cursor("product-history", next_after),
            "limit": limit,
        }
    )


def _check_limit(ctx: ApiContext, limit: int) -> None:
    most = ctx.settings.products_max_limit
    if limit > most:
        raise ApiError(
            422, f"limit above {most} (api_products_max_limit)", details={"limit": limit}
        )


def _decimal_of(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(value))
