"""A crawl's hot writes on PostgreSQL as one statement per batch: its rows' columns go to the
server as arrays and ``unnest`` turns them back into rows.

Through the driver's ``executemany`` a batch of 200 outcomes was 200 UPDATEs, 200 page upserts
and one INSERT per new link: psycopg pipelines them (one round trip), but the server plans,
starts and ends an executor for each, and that per-statement work was most of its CPU per
page (bench/pg_cost.py, docs/SCALING.md §1.1). Here each of them is one statement whatever
the batch's size; SQLite keeps the ``executemany`` path (in-process, a statement costs it
little). The SQL is written for the psycopg driver's ``pyformat`` parameters and run with
``exec_driver_sql``: no SQLAlchemy compilation on the hot path.

Plans: a crawl's ``urls`` is new and has no statistics until autovacuum's first ANALYZE, a
minute or more into the crawl (never, where autovacuum is off), and the planner then guesses
every table small. It ran the batch's UPDATE as a hash join over a sequential scan of ``urls``
(locking rows in the table's order, not the batch's id order) and the lease by sorting all of
the host's rows found through ``ix_urls_host`` (14,437 of them to lease 64: 50 ms a lease,
auto_explain in bench/pg_cost.py --explain), not by walking ``ix_urls_ready`` in its order.
``INDEX_WALKS`` turns hash and merge joins and sorts off for the transaction, so both
become what they are in a table of any size: a nested loop over the arrays in their order (an
index probe per element; rows locked in the arrays' order, which the callers sort: ids for
updates, url hashes for inserts, as ``store.transaction`` requires) and a lease that reads its
k rows and stops.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects import postgresql

from harvestman.records import CrawlRequest, NewUrl, Outcome
from harvestman.store.schema import crawled_pages

INDEX_WALKS = (
    "SELECT set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off',"
    " true), set_config('enable_sort', 'off', true), set_config('jit', 'off', true)"
)
"""The planner settings of a transaction of this module's statements (see the module's
docstring), begun with them by ``store.transaction(engine, index_walks=True)``. ``jit`` is
off because a plan that still needs a node turned off (a sort, a hash join) is costed
10^10 higher, far past ``jit_above_cost``: one such statement in the transaction (a
trigger's query with a sort, in a trial: half a second a row) would be compiled."""


_INSERT_LINKS = """
INSERT INTO urls (crawl_id, url_hash, url, host, status, priority, depth, next_crawl_at,
                  attempts, discovered_at, updated_at, kind, parent_id, discovered_via)
SELECT %(crawl_id)s, h, u, host, 'pending', p, d, due, 0, %(now)s, %(now)s, k, parent, via
FROM unnest(%(h)b::text[], %(u)b::text[], %(host)b::text[], %(p)b::smallint[],
            %(d)b::smallint[], %(due)b::float8[], %(k)b::text[], %(parent)b::bigint[],
            %(via)b::text[]) AS t(h, u, host, p, d, due, k, parent, via)
ON CONFLICT (crawl_id, url_hash) DO NOTHING
"""


def insert_links(conn: Connection, crawl_id: int, rows: Sequence[NewUrl], now: float) -> int:
    """INSERT ... ON CONFLICT DO NOTHING of ``rows`` (no lastmod) in their order, as one
    statement; returns how many were added."""
    params = {
        "crawl_id": crawl_id,
        "now": now,
        "h": [row.url_hash for row in rows],
        "u": [row.url for row in rows],
        "host": [row.host for row in rows],
        "p": [row.priority for row in rows],
        "d": [row.depth for row in rows],
        "due": [now if row.due_at is None else row.due_at for row in rows],
        "k": [row.kind for row in rows],
        "parent": [row.parent_id for row in rows],
        "via": [row.via for row in rows],
    }
    return int(conn.exec_driver_sql(_INSERT_LINKS, params).rowcount)


_FINISH = """
UPDATE urls SET status = v.status, next_crawl_at = v.due, attempts = v.attempts,
    lease_until = NULL, leased_by = NULL, updated_at = %(now)s, last_fetched_at = v.fetched,
    status_code = v.code, error_class = v.err_class, error = v.err,
    content_hash = coalesce(v.hash, urls.content_hash),
    etag = coalesce(v.etag, urls.etag),
    last_modified = coalesce(v.lm, urls.last_modified)
FROM unnest(%(id)b::bigint[], %(status)b::text[], %(due)b::float8[], %(attempts)b::smallint[],
            %(fetched)b::float8[], %(code)b::smallint[], %(err_class)b::text[],
            %(err)b::text[], %(hash)b::text[], %(etag)b::text[], %(lm)b::text[])
    AS v(id, status, due, attempts, fetched, code, err_class, err, hash, etag, lm)
WHERE urls.id = v.id
"""


def finish_urls(conn: Connection, outcomes: Sequence[Outcome], now: float) -> None:
    """The outcomes' URL rows take their new state, as one UPDATE (``outcomes`` in id order;
    of two for one row, the last counts, as it would in statements run one by one)."""
    outcomes = list({o.request.id: o for o in outcomes}.values())
    conn.exec_driver_sql(
        _FINISH,
        {
            "now": now,
            "id": [o.request.id for o in outcomes],
            "status": [o.status.value for o in outcomes],
            "due": [o.next_crawl_at for o in outcomes],
            "attempts": [o.attempts for o in outcomes],
            "fetched": [o.page.fetched_at if o.page else None for o in outcomes],
            "code": [o.status_code for o in outcomes],
            "err_class": [o.error_class for o in outcomes],
            "err": [o.error for o in outcomes],
            "hash": [o.content_hash for o in outcomes],
            "etag": [o.etag for o in outcomes],
            "lm": [o.last_modified for o in outcomes],
        },
    )


@functools.cache
def _column_types(names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Each of ``crawled_pages``' ``names`` with its PostgreSQL type, for the array casts."""
    dialect = postgresql.dialect()  # type: ignore[no-untyped-call]
    return tuple((name, crawled_pages.c[name].type.compile(dialect=dialect)) for name in names)


def upsert_pages(
    conn: Connection, names: Sequence[str], rows: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Insert or replace ``rows`` of ``crawled_pages`` (by crawl and url hash; ``names``: their
    columns, ``crawl_id`` and ``url_hash`` among them) as one statement; returns the host of
    each row that was new (a re-crawl replaces its row).

    ``rows`` must not repeat a url hash: one ON CONFLICT DO UPDATE cannot change a row twice.
    """
    columns = _column_types(tuple(names))
    unnested = ", ".join(f"%({name})b::{kind}[]" for name, kind in columns)
    updated = ", ".join(
        f"{name} = excluded.{name}" for name in names if name not in ("crawl_id", "url_hash")
    )
    sql = (
        f"INSERT INTO crawled_pages ({', '.join(names)})"
        f" SELECT * FROM unnest({unnested})"
        f" ON CONFLICT (crawl_id, url_hash) DO UPDATE SET {updated}"
        # xmax is 0 on a row this statement inserted, the updater's on one it replaced.
        " RETURNING host, xmax = 0"
    )
    params = {name: [row[name] for row in rows] for name in names}
    return [host for host, inserted in conn.exec_driver_sql(sql, params) if inserted]


_LEASE = """
UPDATE urls SET status = 'in_progress', lease_until = %(until)s, leased_by = %(worker)s,
    updated_at = %(now)s
WHERE id IN (
    SELECT id FROM urls
    WHERE crawl_id = %(crawl_id)s AND status = 'pending' AND host = %(host)s
      AND next_crawl_at <= %(now)s
    ORDER BY priority DESC, next_crawl_at, id LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED)
RETURNING id, url, url_hash, host, depth, priority, attempts, etag, last_modified, kind,
    next_crawl_at
"""


def lease_host(
    conn: Connection,
    crawl_id: int,
    host: str,
    limit: int,
    now: float,
    lease_until: float,
    worker_id: str,
) -> list[CrawlRequest]:
    """Lease up to ``limit`` due rows of ``host`` in priority order: found, locked and marked
    in progress by one statement (a SELECT and an UPDATE per row before)."""
    rows = list(
        conn.exec_driver_sql(
            _LEASE,
            {
                "crawl_id": crawl_id,
                "host": host,
                "now": now,
                "limit": limit,
                "until": lease_until,
                "worker": worker_id,
            },
        )
    )
    # RETURNING keeps no order: the lease's own, again.
    rows.sort(key=lambda row: (-row[5], row[10], row[0]))
    return [CrawlRequest(*row[:10]) for row in rows]
