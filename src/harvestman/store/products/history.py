"""What a batch write keeps of product changes (``store/crawl/outcomes.py`` calls these in the
batch's transaction): a ``product_history`` row for each change of a product's price, currency
or availability (and its first sighting), and a product page's adaptive re-crawl.

A page is *changed* when one of its products is new, gone, or moved in price, currency or
availability; anything else (a new description, a new image) is not a change here. Its next
re-crawl is then ``RecrawlRule.interval(n)`` from now, ``n`` the unchanged re-crawls in a row
(``urls.recrawl_unchanged``; 0 after a change): the rule a source's jobs follow
(``harvestman.recrawl``), applied per URL.

>>> is_change({"price": Decimal("12.5000"), "currency": "EUR", "availability": "in_stock"},
...           {"price": Decimal("12.5"), "currency": "EUR", "availability": "in_stock"})
False
>>> is_change({"price": None, "currency": None, "availability": None},
...           {"price": Decimal("1"), "currency": None, "availability": None})
True
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, bindparam, select, update
from sqlalchemy.engine import RowMapping

from harvestman.recrawl import RecrawlRule
from harvestman.store.schema import product_history, urls

TRACKED = ("price", "currency", "availability")
_MAX_COUNT = 30_000  # recrawl_unchanged is a SMALLINT; 2^15 doublings are past any cap anyway


def is_change(old: Mapping[str, Any] | RowMapping, new: Mapping[str, Any]) -> bool:
    """Whether ``new`` moves any tracked value of ``old`` (prices compared as numbers)."""
    return any(_differs(old[name], new[name]) for name in TRACKED)


def _differs(old: Any, new: Any) -> bool:
    if old is None or new is None:
        return old is not new
    if isinstance(old, Decimal | float | int) or isinstance(new, Decimal | float | int):
        return Decimal(str(old)) != Decimal(str(new))
    return bool(old != new)


def history_row(product_id: int, values: Mapping[str, Any], now: float) -> dict[str, Any]:
    return {"product_id": product_id, "changed_at": now, **{n: values[n] for n in TRACKED}}


def write_history(conn: Connection, rows: list[dict[str, Any]]) -> None:
    if rows:
        conn.execute(product_history.insert(), rows)


def unchanged_product_pages(
    conn: Connection, pages: Mapping[int, RecrawlRule]
) -> dict[int, tuple[RecrawlRule, bool]]:
    """Of the pages that answered 304 (``urls.id`` -> rule), those known as product pages (a
    re-crawl count kept), each as unchanged: a 304 says nothing on the page changed."""
    if not pages:
        return {}
    known = conn.execute(
        select(urls.c.id).where(urls.c.id.in_(sorted(pages)), urls.c.recrawl_unchanged.is_not(None))
    ).scalars()
    return {row_id: (pages[row_id], False) for row_id in known}


def apply_recrawl(
    conn: Connection, pages: Mapping[int, tuple[RecrawlRule, bool]], now: float
) -> dict[int, float]:
    """Make each product page (``urls.id`` -> its rule and whether it changed) due after its
    adaptive interval; the rows are this batch's, already locked by its URL update. Returns
    each page's next due time."""
    if not pages:
        return {}
    ids = sorted(pages)
    before = dict(
        conn.execute(select(urls.c.id, urls.c.recrawl_unchanged).where(urls.c.id.in_(ids))).all()
    )
    rows = []
    due: dict[int, float] = {}
    for row_id in ids:
        if row_id not in before:
            continue
        rule, changed = pages[row_id]
        count = 0 if changed else min((before[row_id] or 0) + 1, _MAX_COUNT)
        due[row_id] = now + rule.interval(count)
        rows.append({"row_id": row_id, "due": due[row_id], "count": count})
    if rows:
        conn.execute(
            update(urls)
            .where(urls.c.id == bindparam("row_id"))
            .values(next_crawl_at=bindparam("due"), recrawl_unchanged=bindparam("count")),
            rows,
        )
    return due
