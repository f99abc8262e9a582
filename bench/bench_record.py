"""The crawl's batch write alone: lease, then record 200 outcomes and their new links, as the
crawler's writer does, on a fresh store.

Each of ``--pages`` pages (one host) is leased, completed with a page row of a typical size
(title, description, no stored text) and one new link (the next page: what reaches the store
once the crawl's seen cache has dropped the rest), in batches of ``--batch``. Prints the CPU
seconds of the whole process (the store's thread does the work) per page for ``record`` and
for ``lease``, best of ``--repeat``. SQLite always; PostgreSQL too with ``--postgres URL`` (a
schema of its own, dropped after).

    .venv/bin/python bench/bench_record.py --pages 20000
    .venv/bin/python bench/bench_record.py --postgres postgresql://postgres@127.0.0.1/test
    PYTHONPATH=/path/to/other/src .venv/bin/python bench/bench_record.py   # another checkout
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import create_engine, text

from harvestman.records import CrawlRequest, NewUrl, Outcome, PageRecord, UrlStatus
from harvestman.store import SqlStore
from harvestman.urls import url_hash

HOST = "127.0.0.1:8000"
DESCRIPTION = "A page of the benchmark's kind: a title, a description, some thirty links. " * 2


def link(number: int, depth: int) -> NewUrl:
    url = f"http://{HOST}/p/{number}.html"
    return NewUrl(url, url_hash(url), HOST, depth, 0)


def completed(request: CrawlRequest, now: float) -> Outcome:
    page = PageRecord(
        url=request.url,
        final_url=request.url,
        host=request.host,
        status_code=200,
        content_type="text/html",
        content_length=20_000,
        fetched_at=now,
        crawl_duration_ms=3,
        charset="utf-8",
        content_hash=request.url_hash[:32],
        title=f"Page {request.id}",
        description=DESCRIPTION,
        lang="en",
        links_count=30,
        validation_status="ok",
        simhash=request.id * 2654435761 % 2**63,
    )
    return Outcome(
        request,
        UrlStatus.COMPLETED,
        now + 7 * 86400,
        1,
        status_code=200,
        content_hash=page.content_hash,
        page=page,
    )


async def one_run(url: str, pages: int, batch: int) -> tuple[float, float]:
    """CPU seconds of recording and of leasing ``pages`` pages."""
    recording = leasing = 0.0
    async with SqlStore(url) as store:
        await store.upgrade()
        crawl_id = await store.ensure_crawl("bench")
        now = time.time()
        await store.add_urls(crawl_id, [link(n, 0) for n in range(batch)], now)
        added, done = batch, 0
        while done < pages:
            started = time.process_time()
            leased, _ = await store.lease(crawl_id, {HOST: batch}, now, now + 300, "bench")
            leasing += time.process_time() - started
            if not leased:
                break
            outcomes = [completed(request, now) for request in leased]
            new = [link(added + i, 1) for i in range(min(len(leased), pages - added))]
            added += len(new)
            started = time.process_time()
            await store.record(crawl_id, outcomes, new, now)
            recording += time.process_time() - started
            done += len(leased)
        assert done == pages, (done, pages)
    return recording, leasing


def report(name: str, fresh: Callable[[], str], args: argparse.Namespace) -> None:
    """Best of ``--repeat`` runs, each on a fresh store from ``fresh()``."""
    best_record = best_lease = float("inf")
    for _ in range(args.repeat):
        recording, leasing = asyncio.run(one_run(fresh(), args.pages, args.batch))
        best_record, best_lease = min(best_record, recording), min(best_lease, leasing)
    per = 1e6 / args.pages
    print(
        f"{name:10} record {best_record:6.2f} s ({best_record * per:5.0f} µs a page)   "
        f"lease {best_lease:5.2f} s ({best_lease * per:4.0f} µs a page)   "
        f"{args.pages} pages, batches of {args.batch}, best of {args.repeat}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", help="also on this PostgreSQL database (postgresql://...)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        runs = itertools.count()
        report("sqlite", lambda: f"sqlite:///{Path(directory) / f'{next(runs)}.db'}", args)
    if args.postgres:
        admin = create_engine(args.postgres.replace("postgresql://", "postgresql+psycopg://", 1))
        schemas: list[str] = []

        def fresh() -> str:
            schemas.append(f"bench_record_{uuid.uuid4().hex[:8]}")
            with admin.begin() as conn:
                conn.execute(text(f"CREATE SCHEMA {schemas[-1]}"))
            return f"{args.postgres}?options=-csearch_path%3D{schemas[-1]}"

        try:
            report("postgresql", fresh, args)
        finally:
            with admin.begin() as conn:
                for schema in schemas:
                    conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
            admin.dispose()


if __name__ == "__main__":
    main()
