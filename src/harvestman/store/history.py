"""The stats history table: additive writes and time-series reads, on both stores.

Rows are counters per (crawl, resolution, bucket start): ``minute`` rows come from the crawlers,
``day`` rows from maintenance rolling up minute rows older than a week (``lifecycle.rollup``).
Every write adds (``INSERT ... ON CONFLICT DO UPDATE SET n = n + excluded.n``), one atomic
statement per row on either database, so any number of workers may add to the same row and
none reads a counter back to write it::

    >>> bucket_start(125.0, "minute"), bucket_start(90_000.0, "day")
    (120.0, 86400.0)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, Engine, Integer, case, cast, func, or_, select

from harvestman.store import dialect
from harvestman.store.schema import crawled_pages, stats_history

COUNTERS = (
    "pages", "failed", "errors", "bytes", "status_2xx", "status_3xx", "status_4xx", "status_5xx",
    "robots_denied", "new_urls",
)  # fmt: skip
RESOLUTIONS = {"minute": 60.0, "day": 86400.0}


def bucket_start(at: float, resolution: str) -> float:
    """The start of the ``resolution`` bucket holding the epoch time ``at`` (UTC aligned)."""
    width = RESOLUTIONS[resolution]
    return float(at // width * width)


def add_counts(
    conn: Connection,
    crawl_id: int,
    resolution: str,
    buckets: Mapping[float, Mapping[str, int]],
) -> None:
    """Add ``buckets`` ({bucket start: {counter: delta}}) to the crawl's rows, in one statement.

    Rows go in bucket order, so two writers adding to the same buckets lock them in the same
    order (no deadlock on PostgreSQL). Unknown counter names raise ``KeyError``.
    """
    if not buckets:
        return
    if resolution not in RESOLUTIONS:
        raise ValueError(f"resolution must be one of {sorted(RESOLUTIONS)}, not {resolution!r}")
    for counts in buckets.values():
        unknown = set(counts) - set(COUNTERS)
        if unknown:
            raise KeyError(f"unknown stats counters: {sorted(unknown)}")
    stmt = dialect.insert(conn.engine, stats_history)
    stmt = stmt.on_conflict_do_update(
        index_elements=["crawl_id", "resolution", "bucket_start"],
        set_={name: stats_history.c[name] + stmt.excluded[name] for name in COUNTERS},
    )
    conn.execute(
        stmt,
        [
            {
                "crawl_id": crawl_id,
                "resolution": resolution,
                "bucket_start": start,
                **{name: int(buckets[start].get(name, 0)) for name in COUNTERS},
            }
            for start in sorted(buckets)
        ],
    )


def has_history(engine: Engine, crawl_id: int | None) -> bool:
    """Whether the crawl (any crawl, for None) has a stats row: stores and crawls from before
    the history have none, and their time series come from the pages instead."""
    query = select(stats_history.c.id).limit(1)
    if crawl_id is not None:
        query = query.where(stats_history.c.crawl_id == crawl_id)
    with engine.connect() as conn:
        return conn.execute(query).first() is not None


def points(
    engine: Engine, crawl_id: int | None, since: float, bucket: float
) -> list[dict[str, Any]]:
    """The counters summed per ``bucket`` seconds (buckets with any rows, oldest first).

    Every row overlapping ``since`` or later counts; a row lands in the bucket holding its start,
    so once minute rows are rolled up a day is one point whatever ``bucket`` asks for. Each point
    also has ``pages_per_second`` (over ``bucket``) and ``success_rate``: the share of responses
    that were 2xx or 3xx (None without responses; failures with no response count in
    ``errors``).
    """
    if bucket <= 0:
        raise ValueError(f"bucket must be positive, not {bucket}")
    table = stats_history.c
    ratio = table.bucket_start / bucket
    # SQLite may lack floor(); its CAST truncates, which is floor for times (PostgreSQL rounds).
    slot = cast(ratio, Integer) if dialect.is_sqlite(engine) else func.floor(ratio)
    overlaps = or_(
        *(
            (table.resolution == name) & (table.bucket_start > since - width)
            for name, width in RESOLUTIONS.items()
        )
    )
    where = [overlaps]
    if crawl_id is not None:
        where.append(table.crawl_id == crawl_id)
    sums = [func.sum(table[name]).label(name) for name in COUNTERS]
    query = select(slot.label("slot"), *sums).where(*where).group_by(slot).order_by(slot)
    with engine.connect() as conn:
        return [_point(row._mapping, bucket) for row in conn.execute(query)]


def page_points(
    engine: Engine, crawl_id: int | None, since: float, bucket: float
) -> list[dict[str, Any]]:
    """``points`` computed from the stored pages, for crawls without history: what a page row
    tells (pages, bytes, status classes, errors); the rest is None."""
    pages = crawled_pages.c
    ratio = pages.fetched_at / bucket
    slot = cast(ratio, Integer) if dialect.is_sqlite(engine) else func.floor(ratio)
    where = [pages.fetched_at >= since]
    if crawl_id is not None:
        where.append(pages.crawl_id == crawl_id)

    def share(condition: Any) -> Any:
        return func.sum(case((condition, 1), else_=0))

    query = (
        select(
            slot.label("slot"),
            func.count().label("pages"),
            func.coalesce(func.sum(pages.content_length), 0).label("bytes"),
            share(pages.error_class.is_not(None)).label("errors"),
            *(
                share(pages.status_code.between(low, low + 99)).label(f"status_{low // 100}xx")
                for low in (200, 300, 400, 500)
            ),
        )
        .where(*where)
        .group_by(slot)
        .order_by(slot)
    )
    with engine.connect() as conn:
        found = [dict(row._mapping) for row in conn.execute(query)]
    return [_point({name: row.get(name) for name in ("slot", *COUNTERS)}, bucket) for row in found]


def _point(row: Mapping[Any, Any], bucket: float) -> dict[str, Any]:
    point: dict[str, Any] = {"t": float(row["slot"]) * bucket}
    for name in COUNTERS:
        value = row[name]
        point[name] = None if value is None else int(value)
    point["pages_per_second"] = round(point["pages"] / bucket, 3)
    ok = (point["status_2xx"] or 0) + (point["status_3xx"] or 0)
    responses = ok + (point["status_4xx"] or 0) + (point["status_5xx"] or 0)
    point["success_rate"] = round(ok / responses, 4) if responses else None
    return point
