"""What recording where each URL came from costs the frontier's insert (migration 0018).

Adds the same new URLs (batches of 1,000, as the writer does) to a fresh store twice: as
today, with ``parent_id`` and ``discovered_via`` set and ``ix_urls_parent`` kept up; and as
before 0018, both NULL and that index dropped. Prints rows per second for each (best of
``--repeat``). SQLite always; PostgreSQL too when ``--postgres URL`` is given.

    .venv/bin/python bench/bench_discovery_write.py --rows 100000
    .venv/bin/python bench/bench_discovery_write.py --postgres postgresql://postgres@127.0.0.1/test
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine, create_engine, text

from harvestman.records import NewUrl
from harvestman.store import SqlStore
from harvestman.urls import url_hash

BATCH = 1000


def _rows(n: int, with_source: bool) -> list[NewUrl]:
    rows = []
    for i in range(n):
        url = f"http://h{i % 50}.test/p/{i}"
        row = NewUrl(url, url_hash(url), f"h{i % 50}.test", 2, 2)
        if with_source:
            row.parent_id, row.via = 1 + i // 40, "link"
        rows.append(row)
    return rows


async def _insert(database_url: str, rows: list[NewUrl], drop_index: bool) -> float:
    async with SqlStore(database_url) as store:
        await store.upgrade()
        if drop_index:
            with store.engine.begin() as conn:
                conn.execute(text("DROP INDEX ix_urls_parent"))
        crawl_id = await store.ensure_crawl("bench")
        started = time.perf_counter()
        for start in range(0, len(rows), BATCH):
            await store.add_urls(crawl_id, rows[start : start + BATCH], 1000.0)
        return len(rows) / (time.perf_counter() - started)


def _fresh_sqlite(directory: Path) -> str:
    return f"sqlite:///{directory / f'{uuid.uuid4().hex}.db'}"


_SCHEMAS: list[str] = []


def _admin(url: str) -> Engine:
    return create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))


def _fresh_postgres(url: str) -> str:
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    engine = _admin(url)
    with engine.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    engine.dispose()
    _SCHEMAS.append(schema)
    return f"{url}?options=-csearch_path%3D{schema}"


def _drop_schemas(url: str) -> None:
    engine = _admin(url)
    with engine.begin() as conn:
        for schema in _SCHEMAS:
            conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL (a schema per run)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stores = [("SQLite", lambda: _fresh_sqlite(Path(tmp)))]
        if args.postgres:
            stores.append(("PostgreSQL", lambda: _fresh_postgres(args.postgres)))
        try:
            _run(stores, args.rows, args.repeat)
        finally:
            if args.postgres:
                _drop_schemas(args.postgres)


def _run(stores: list[tuple[str, Callable[[], str]]], n: int, repeat: int) -> None:
    for name, fresh in stores:
        for label, with_source in (("with parent_id, discovered_via", True),
                                   ("as before 0018 (NULL, no index)", False)):  # fmt: skip
            rows = _rows(n, with_source)
            best = max(
                asyncio.run(_insert(fresh(), rows, drop_index=not with_source))
                for _ in range(repeat)
            )
            print(f"{name:10} {label:34} {best:>10,.0f} rows/s ({n:,} rows)")


if __name__ == "__main__":
    main()
