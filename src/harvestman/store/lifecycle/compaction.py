"""Compaction: planner statistics and free space after maintenance, as each store needs.

**SQLite.** ``PRAGMA optimize`` when the store has planner statistics (``sqlite_stat1``), to
keep them current; none are created: the store's queries are written for SQLite's default plans,
and sampled statistics were measured to send replay's page scan to the wrong index. Deleted rows
leave free pages that new rows reuse; the file itself shrinks only by vacuuming:

- a file in incremental auto-vacuum mode gives its free pages back with ``PRAGMA
  incremental_vacuum(N)`` in steps of ``N`` pages, each a short write of its own: online;
- otherwise only a full ``VACUUM`` does. It rewrites the whole file holding the write lock all the
  while (a crawl's writer would wait past its 30 s busy timeout on a big store) and needs free
  disk for a second copy, so it runs only when it is worth it (at least ``vacuum_min_free_fraction``
  of the file is free) and no worker has sent a heartbeat in ``live_worker_seconds``. The same
  VACUUM switches the file to incremental auto-vacuum, so later runs give space back online.

**PostgreSQL.** ``VACUUM (ANALYZE)`` on the tables rows were deleted from, ``ANALYZE`` on the
others: plain VACUUM takes a SHARE UPDATE EXCLUSIVE lock, so leases, writes and reads go on; it
makes the space reusable (autovacuum would get there later). Never ``VACUUM FULL`` on a live
store: it holds an ACCESS EXCLUSIVE lock for the whole rewrite, which stops every lease, write and
read of the table, and needs disk for a full copy. A table that must shrink on disk: ``pg_repack``,
or VACUUM FULL in a window with every crawl stopped (docs/OPERATIONS.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Engine, text

from harvestman.store import dialect
from harvestman.store.schema import crawled_pages, urls

INCREMENTAL_STEP = 2048  # pages freed per incremental_vacuum step (8 MiB at 4 KiB pages)
AUTO_VACUUM_INCREMENTAL = 2


@dataclass(slots=True)
class CompactionReport:
    """What ``compact`` did: ``actions`` in order; ``free_bytes_*`` (SQLite) is the free-page
    space inside the file before and after; ``vacuum`` says which vacuum ran or why none did."""

    backend: str
    actions: list[str] = field(default_factory=list)
    vacuum: str = "none"
    free_bytes_before: int | None = None
    free_bytes_after: int | None = None


def compact(
    engine: Engine,
    *,
    now: float,
    changed_tables: Sequence[str] = (),
    vacuum_min_free_fraction: float | None = 0.25,
    live_worker_seconds: float = 60.0,
) -> CompactionReport:
    """Refresh statistics and give back space as the store behind ``engine`` needs.

    ``changed_tables`` names the tables rows were deleted from (PostgreSQL vacuums those).
    ``now`` (epoch seconds) decides which workers count as alive. Synchronous.
    """
    if dialect.is_sqlite(engine):
        return _compact_sqlite(engine, now, vacuum_min_free_fraction, live_worker_seconds)
    return _compact_postgresql(engine, changed_tables)


def _compact_sqlite(
    engine: Engine, now: float, min_free: float | None, live_worker_seconds: float
) -> CompactionReport:
    report = CompactionReport("sqlite")
    pooled = engine.raw_connection()
    try:
        # The pool's connections run without implicit transactions (isolation_level None), as
        # VACUUM and incremental_vacuum require.
        db: sqlite3.Connection = pooled.driver_connection  # type: ignore[assignment]
        if _has_statistics(db):
            db.execute("PRAGMA optimize")
            report.actions.append("PRAGMA optimize")
        page_size = _pragma(db, "page_size")
        pages, free = _pragma(db, "page_count"), _pragma(db, "freelist_count")
        report.free_bytes_before = free * page_size
        if free == 0:
            report.vacuum = "none: no free pages"
        elif _pragma(db, "auto_vacuum") == AUTO_VACUUM_INCREMENTAL:
            steps = 0
            while free:
                # executescript steps the pragma to completion; execute() would free one page.
                db.executescript(f"PRAGMA incremental_vacuum({INCREMENTAL_STEP})")
                steps += 1
                left = _pragma(db, "freelist_count")
                if left >= free:
                    break
                free = left
            report.vacuum = f"incremental: {steps} step(s)"
            report.actions.append(f"PRAGMA incremental_vacuum({INCREMENTAL_STEP}) x{steps}")
        else:
            report.vacuum = _maybe_full_vacuum(db, now, pages, free, min_free, live_worker_seconds)
            if report.vacuum == "full":
                report.actions.append("PRAGMA auto_vacuum=INCREMENTAL; VACUUM")
        report.free_bytes_after = _pragma(db, "freelist_count") * page_size
    finally:
        pooled.close()
    return report


def _maybe_full_vacuum(
    db: sqlite3.Connection,
    now: float,
    pages: int,
    free: int,
    min_free: float | None,
    live_worker_seconds: float,
) -> str:
    if min_free is None:
        return "skipped: full VACUUM disabled"
    fraction = free / pages
    if fraction < min_free:
        return f"skipped: {fraction:.0%} free, under {min_free:.0%}"
    live = db.execute(
        "SELECT count(*) FROM workers WHERE heartbeat_at >= ?", (now - live_worker_seconds,)
    ).fetchone()[0]
    if live:
        return f"skipped: {live} live worker(s) would wait on the write lock"
    db.executescript("PRAGMA auto_vacuum=INCREMENTAL; VACUUM;")
    return "full"


def _has_statistics(db: sqlite3.Connection) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'")
    return found.fetchone() is not None


def _pragma(db: sqlite3.Connection, name: str) -> int:
    return int(db.execute(f"PRAGMA {name}").fetchone()[0])


def _compact_postgresql(engine: Engine, changed_tables: Sequence[str]) -> CompactionReport:
    report = CompactionReport("postgresql")
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for table in (urls.name, crawled_pages.name):
            statement = (
                f"VACUUM (ANALYZE) {table}" if table in changed_tables else f"ANALYZE {table}"
            )
            conn.execute(text(statement))
            report.actions.append(statement)
    report.vacuum = "plain VACUUM: " + (", ".join(changed_tables) or "none")
    return report
