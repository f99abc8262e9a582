"""A catalogue of products written straight into a store (the product query's tests and its
benchmark use the same shapes): every filter has matches and misses, every order ties."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import insert, select

from harvestman.store import SqlStore
from harvestman.store.schema import crawls, images, products, urls
from harvestman.store.transaction import transaction

HOSTS = ("shop-a.test", "www.shop-b.test", "shop-c.test")
BRANDS = ("Acme", "Globex", "Initech", None)
CATEGORIES = ("Kitchen", "Garden", "Tools")
CURRENCIES = ("EUR", "USD")
AVAILABILITY = ("in_stock", "out_of_stock", "preorder", None)
PARSERS = ("harvestman.products@2", "shop.parser@1")
T0 = 1_800_000_000.0


def catalogue(count: int) -> list[dict[str, Any]]:
    """``count`` product rows (the columns of ``products`` but ``crawl_id``), deterministic;
    prices repeat (ties for the keyset's id tie-break) and some are missing."""
    rows = []
    for n in range(count):
        host = HOSTS[n % 3]
        page = f"https://{host}/p/{n}"
        rows.append({
            "url_hash": f"{n:064x}", "position": 0, "page_url": page, "product_url": None,
            "domain": host.removeprefix("www."), "name": f"Product {n}",
            "price": None if n % 11 == 0 else Decimal(n % 17) + Decimal("0.25"),
            "currency": CURRENCIES[n % 2], "availability": AVAILABILITY[n % 4],
            "rating": None if n % 5 == 0 else Decimal(n % 5) + Decimal("0.5"),
            "brand": BRANDS[n % 4], "category": CATEGORIES[n % 3], "source": "json-ld",
            "parser": PARSERS[n % 7 == 0], "content_hash": f"{n:064x}",
            "created_at": T0, "updated_at": T0 + (n % 13) * 60.0,
        })  # fmt: skip
    return rows


def add_catalogue(store: SqlStore, count: int, crawl: str = "shop") -> int:
    """A crawl holding ``catalogue(count)``, a frontier row per page (fetched at T0 + 1) and
    one image on every product whose number is even; returns the crawl's id."""
    with transaction(store.engine) as conn:
        conn.execute(insert(crawls).values(name=crawl, created_at=T0, seeds="[]"))
        crawl_id = conn.execute(select(crawls.c.id).where(crawls.c.name == crawl)).scalar_one()
    rows = catalogue(count)
    store.load_products(crawl_id, rows)
    with transaction(store.engine) as conn:
        conn.execute(insert(urls), [
            {"crawl_id": crawl_id, "url_hash": row["url_hash"], "url": row["page_url"],
             "host": row["page_url"].split("/")[2], "status": "completed",
             "next_crawl_at": T0 + 86400, "discovered_at": T0, "updated_at": T0,
             "last_fetched_at": T0 + 1}
            for row in rows
        ])  # fmt: skip
        found = conn.execute(
            select(products.c.id, products.c.name).where(products.c.crawl_id == crawl_id)
        ).all()
        conn.execute(insert(images), [
            {"product_id": pid, "position": 0, "url": f"https://img.test/{pid}.jpg",
             "alt": name, "width": 100, "height": None}
            for pid, name in found if int(name.split()[1]) % 2 == 0
        ])  # fmt: skip
    return int(crawl_id)
