"""Lifecycle benchmark: retention, backup and replay on a big store, beside a writing crawl.

Builds a store of ``--urls`` frontier rows (60 % completed within a week, 20 % completed 8-60
days ago, 5 % failed 31-90 days ago, the rest pending) and ``--pages`` page rows (half older than
90 days, ~600 bytes of metadata each), on SQLite (default) or PostgreSQL (``--postgres URL``).
While retention runs, a "crawl" thread commits a small write transaction every 10 ms, as the
engine's flusher does, and records how long each waited: the figure that says whether
maintenance locks the store out. Then it times a backup (SQLite) and a replay dry run and real run
of one host with ``--pages / 10`` pages.

    python bench/bench_lifecycle.py --urls 1000000 --pages 200000 --batches 5000,1000
    python bench/bench_lifecycle.py --postgres postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

from sqlalchemy import Engine, Table, create_engine, insert, text

from harvestman.lifecycle import (
    RetentionRules,
    apply_retention,
    backup_sqlite,
    replay,
    restore_sqlite,
)
from harvestman.store import dialect, migrate
from harvestman.store.schema import crawled_pages, crawls, urls

NOW = 1_700_000_000.0
DAY = 86400.0
OUT = Path(__file__).with_name("out") / "lifecycle"


def fill(engine: Engine, n_urls: int, n_pages: int) -> int:
    rng = random.Random(7)
    with engine.begin() as conn:
        conn.execute(insert(crawls).values(name="bench", created_at=NOW, seeds="[]"))
        crawl = int(conn.execute(text("SELECT id FROM crawls")).scalar_one())
    batch: list[dict[str, object]] = []
    for i in range(n_urls):
        roll = rng.random()
        if roll < 0.6:
            status, age = "completed", rng.uniform(0, 7)
        elif roll < 0.8:
            status, age = "completed", rng.uniform(8, 60)
        elif roll < 0.85:
            status, age = "failed", rng.uniform(31, 90)
        else:
            status, age = "pending", rng.uniform(0, 2)
        changed = NOW - age * DAY
        host = "replay.test" if i % 10 == 0 else f"h{i % 500}.test"
        batch.append(
            {"crawl_id": crawl, "url_hash": f"{i:064x}", "url": f"http://{host}/{i}",
             "host": host, "status": status, "priority": 2, "depth": 1,
             "next_crawl_at": changed + 7 * DAY, "attempts": 0, "discovered_at": changed,
             "updated_at": changed, "kind": "page",
             "error": "HTTP 500" if status == "failed" else None}
        )  # fmt: skip
        if len(batch) == 20_000:
            batch = _flush(engine, urls, batch)
    batch = _flush(engine, urls, batch)
    for i in range(n_pages):
        host = "replay.test" if i % 10 == 0 else f"h{i % 500}.test"
        batch.append(
            {"crawl_id": crawl, "url_hash": f"{i:064x}", "url": f"http://{host}/{i}",
             "final_url": f"http://{host}/{i}", "host": host, "status_code": 200,
             "title": "t" * 60, "description": "d" * 400, "links_count": 20,
             "content_hash": "c" * 64,
             "fetched_at": NOW - (rng.uniform(91, 200) if i % 2 else rng.uniform(0, 60)) * DAY}
        )  # fmt: skip
        if len(batch) == 20_000:
            batch = _flush(engine, crawled_pages, batch)
    _flush(engine, crawled_pages, batch)
    return crawl


def _flush(engine: Engine, table: Table, batch: list[dict[str, object]]) -> list[dict[str, object]]:
    if batch:
        with engine.begin() as conn:
            conn.execute(insert(table), batch)
    return []


class CrawlWriter(threading.Thread):
    """Commits one small write every 10 ms and records how long each took."""

    def __init__(self, engine: Engine, name: str) -> None:
        super().__init__(daemon=True)
        self.engine = engine
        self.tag = name
        self.waits: list[float] = []
        self.running = True

    def run(self) -> None:
        n = 0
        options = dialect.write_options(self.engine)
        while self.running:
            began = time.perf_counter()
            with self.engine.connect() as conn:
                conn.execution_options(**options)
                with conn.begin():
                    conn.execute(
                        insert(urls).values(
                            crawl_id=1, url_hash=f"{self.tag}{n:060x}",
                            url=f"http://w.test/{self.tag}/{n}",
                            host="w.test", status="pending", priority=2, depth=1,
                            next_crawl_at=NOW, attempts=0, discovered_at=NOW, updated_at=NOW,
                        )
                    )  # fmt: skip
            self.waits.append(time.perf_counter() - began)
            n += 1
            time.sleep(0.01)


def _latencies(seconds: list[float]) -> str:
    waits = [w * 1000 for w in sorted(seconds)]
    return (
        f"{len(waits)} writes, median {statistics.median(waits):.1f} ms,"
        f" p99 {waits[int(len(waits) * 0.99)]:.1f} ms, max {waits[-1]:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--pages", type=int, default=200_000)
    parser.add_argument("--batches", default="1000", help="batch sizes to compare, e.g. 5000,1000")
    parser.add_argument("--postgres", help="a PostgreSQL URL (a schema is made and dropped)")
    args = parser.parse_args()
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    sizes = [int(size) for size in args.batches.split(",")]
    if args.postgres:
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(args.postgres.replace("postgresql://", "postgresql+psycopg://", 1))
        with admin.begin() as conn:
            conn.execute(text(f"CREATE SCHEMA {schema}"))
        try:
            engine = _filled(f"{args.postgres}?options=-csearch_path%3D{schema}", args)
            _retention(engine, sizes[0])
            _replay(engine)
            engine.dispose()
        finally:
            with admin.begin() as conn:
                conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        return
    filled = OUT / "filled.db"
    engine = _filled(f"sqlite:///{filled}", args)
    engine.dispose()
    print(f"store: {filled.stat().st_size / 1e6:.0f} MB")
    backup = backup_sqlite(filled, OUT / "backup.db")
    print(f"backup (idle store): {backup.bytes / 1e6:.0f} MB in {backup.seconds:.2f} s")
    for size in sizes:
        run = OUT / f"run-{size}.db"
        restore_sqlite(OUT / "backup.db", run)
        engine = dialect.make_engine(f"sqlite:///{run}")
        _retention(engine, size)
        if size == sizes[-1]:
            _replay(engine)
        engine.dispose()


def _filled(url: str, args: argparse.Namespace) -> Engine:
    engine = dialect.make_engine(url)
    migrate.upgrade(engine)
    began = time.perf_counter()
    fill(engine, args.urls, args.pages)
    took = time.perf_counter() - began
    print(f"fill: {args.urls:,} urls, {args.pages:,} pages in {took:.1f} s")
    alone = CrawlWriter(engine, "lone")
    alone.start()
    time.sleep(3)
    alone.running = False
    alone.join()
    print(f"crawl writes alone (3 s): {_latencies(alone.waits)}")
    return engine


def _retention(engine: Engine, batch_size: int) -> None:
    writer = CrawlWriter(engine, "busy")
    writer.start()
    rules = RetentionRules(export_dir=OUT / f"retention-{batch_size}", batch_size=batch_size)
    report = apply_retention(engine, rules, NOW)
    writer.running = False
    writer.join()
    print(
        f"retention, batches of {batch_size} ids: {report.seconds:.1f} s, {report.batches} writes,"
        f" longest {report.longest_write * 1000:.0f} ms; completed -{report.completed_deleted:,},"
        f" failed -{report.failed_deleted:,}, pages -{report.pages_deleted:,}"
    )
    if report.compaction:
        print(f"  compaction: {report.compaction.vacuum}; {report.compaction.actions}")
    print(f"  crawl writes meanwhile: {_latencies(writer.waits)}")
    for path in (report.failed_file, report.pages_file):
        if path:
            print(f"  {path.name}: {path.stat().st_size / 1e6:.1f} MB")


def _replay(engine: Engine) -> None:
    for dry in (True, False):
        plan = replay(engine, 1, "replay.test", NOW - 60 * DAY, dry_run=dry, now=NOW)
        print(
            f"replay {'dry run' if dry else 'run'}: {plan.pages:,} pages, {plan.requeue:,}"
            f" re-queued, {plan.missing:,} missing, in {plan.seconds:.2f} s"
        )


if __name__ == "__main__":
    sys.exit(main())
