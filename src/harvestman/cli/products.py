"""``harvestman products``: stored products found by price, availability, brand, category,
rating, domain, parser and last change, in a chosen order; a table for people, JSON lines
(``--json``) for programs. The same query as ``GET /api/products`` (store/products)."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from harvestman.cli.exits import err, usage_error
from harvestman.cli.options import (
    AvailabilityOption,
    ConfigOption,
    CurrencyOption,
    DatabaseUrlOption,
    DbOption,
    EveryCrawlOption,
)
from harvestman.cli.stores import existing_crawl, open_store

MAX_LIMIT = 1000


def products(
    min_price: Annotated[float | None, typer.Option("--min-price", min=0, max=1e12)] = None,
    max_price: Annotated[float | None, typer.Option("--max-price", min=0, max=1e12)] = None,
    currency: CurrencyOption = None,
    availability: AvailabilityOption = None,
    brand: Annotated[str | None, typer.Option("--brand", help="Equal, ignoring case")] = None,
    category: Annotated[str | None, typer.Option("--category", help="Equal, ignoring case")] = None,
    min_rating: Annotated[float | None, typer.Option("--min-rating", min=0, max=1e4)] = None,
    domain: Annotated[
        str | None, typer.Option("--domain", help="One host (example.com: also www.)")
    ] = None,
    parser: Annotated[
        str | None, typer.Option("--parser", help="name@version, or a name: every version")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Changed since: an age (7d), ISO date, epoch")
    ] = None,
    sort: Annotated[str, typer.Option("--sort", help="price, rating or changed")] = "changed",
    order: Annotated[str, typer.Option("--order", help="asc or desc")] = "desc",
    limit: Annotated[int, typer.Option("--limit", min=1, max=MAX_LIMIT)] = 20,
    after: Annotated[
        str | None, typer.Option("--after", help="The key a previous page printed: the next page")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a product")] = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: EveryCrawlOption = None,
) -> None:
    """Stored products matching every filter given, by price, rating or last change (sorted
    by price or rating: those without one are left out). A page ends with the --after key of
    the next, on stderr."""
    import time
    from decimal import Decimal

    from harvestman.extract.vocabulary import AVAILABILITY_VALUES
    from harvestman.lifecycle.since import parse_since
    from harvestman.store.products import SORTS, ProductQuery

    if sort not in SORTS or order not in ("asc", "desc"):
        raise usage_error(f"--sort is one of {', '.join(SORTS)}; --order asc or desc")
    unknown = sorted(set(availability or ()) - set(AVAILABILITY_VALUES))
    if unknown:
        raise usage_error(f"--availability {unknown[0]!r}: one of {', '.join(AVAILABILITY_VALUES)}")
    if currency is not None and not (
        len(currency) == 3 and currency.isascii() and currency.isalpha()
    ):
        raise usage_error("--currency is an ISO 4217 code: three letters")
    for option, value, most in (("--brand", brand, 200), ("--category", category, 200),
                                ("--domain", domain, 300), ("--parser", parser, 100)):  # fmt: skip
        if value is not None and not 0 < len(value) <= most:
            raise usage_error(f"{option} takes 1 to {most} characters")
    if min_price is not None and max_price is not None and min_price > max_price:
        raise usage_error("--min-price is above --max-price")
    try:
        since_at = None if since is None else parse_since(since, now=time.time())
    except ValueError:
        raise usage_error("--since: use an age (36h, 7d), an ISO date or epoch") from None

    def exact(value: float | None) -> Decimal | None:
        return None if value is None else Decimal(str(value))

    opened = open_store(config, db, database_url, must_exist=True, crawl_name=name)
    with opened as (settings, store):
        crawl_id = existing_crawl(store, settings.crawl_name) if name else None
        store.schema.check_current()
        query = ProductQuery(
            crawl_id=crawl_id, min_price=exact(min_price), max_price=exact(max_price),
            currency=currency, availability=tuple(dict.fromkeys(availability or ())),
            brand=brand, category=category, min_rating=exact(min_rating), domain=domain,
            parser=parser, since=since_at, sort=sort, descending=order == "desc",
        )  # fmt: skip
        try:
            items, next_key = store.products.list_products(query, after=after, limit=limit)
        except ValueError:
            raise usage_error(
                "--after: pass the key a previous page of this order printed"
            ) from None
    if as_json:
        import orjson

        for item in items:
            sys.stdout.buffer.write(orjson.dumps(item, default=_exact) + b"\n")
    else:
        from rich.console import Console

        Console().print(_table(items))
    if next_key is not None:
        err.print(f"more: --after '{next_key}'", markup=False, highlight=False)


def _exact(value: Any) -> Any:
    from decimal import Decimal

    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    raise TypeError(f"{type(value).__name__} is not JSON")


def _table(items: list[dict[str, Any]]) -> Any:
    """Crawled text goes in as plain cells (``Text``), never as Rich markup."""
    from rich.table import Table
    from rich.text import Text

    table = Table(expand=False)
    for column in ("id", "name", "brand", "price", "availability", "rating", "domain"):
        table.add_column(column, overflow="fold", justify="right" if column == "id" else "left")
    for item in items:
        offer = item["offers"][0]
        price = offer["price"]
        shown = "" if price is None else f"{_exact(price)} {offer['currency'] or ''}".strip()
        rating = "" if item["rating"] is None else _exact(item["rating"])
        cells = (str(item["id"]), item["name"] or "", item["brand"] or "", shown,
                 offer["availability"] or "", rating, item["domain"] or "")  # fmt: skip
        table.add_row(*(Text(cell) for cell in cells))
    return table
