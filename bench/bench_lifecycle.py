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

``--export N`` measures the exports instead: a store of N pages (with their frontier rows) and N
products (two images each) is exported by ``harvestman export`` in a child process per format
(jsonl, csv, es; pages, then products), and the child's peak RSS is printed beside that of an
export of 1,000 pages: constant memory shows as the same peak at both sizes.

    python bench/bench_lifecycle.py --export 1000000 [--postgres URL]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from sqlalchemy import Engine, Table, create_engine, insert, text

from harvestman.store import dialect, migrate
from harvestman.store.lifecycle.replay import replay
from harvestman.store.lifecycle.retention import RetentionRules, apply_retention
from harvestman.store.lifecycle.sqlitebackup import backup_sqlite, restore_sqlite
from harvestman.store.schema import crawled_pages, crawls, images, products, urls

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
    parser.add_argument("--export", type=int, help="measure exports of a store of N pages")
    args = parser.parse_args()
    if args.export:
        OUT.mkdir(parents=True, exist_ok=True)
        return _exports(args.export, args.postgres)
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


def fill_products(engine: Engine, crawl: int, n: int) -> None:
    """``n`` products on pages of the crawl, two images each, with every field set."""
    batch: list[dict[str, object]] = []
    for i in range(n):
        batch.append(
            {"id": i + 1, "crawl_id": crawl, "url_hash": f"{i:064x}", "position": 0,
             "page_url": f"http://shop.test/p/{i}", "product_url": f"http://shop.test/p/{i}",
             "name": f"Product {i}", "description": "d" * 300, "price": f"{i % 1000}.99",
             "currency": "EUR", "availability": "in_stock", "rating": "4.50",
             "review_count": i % 100, "brand": "Brand", "category": "Kitchen", "sku": f"S{i}",
             "gtin": None, "source": "json-ld", "parser": "harvestman.products@1",
             "errors": None, "content_hash": "c" * 64, "created_at": NOW, "updated_at": NOW}
        )  # fmt: skip
        if len(batch) == 10_000:
            _flush_products(engine, batch)
            batch = []
    _flush_products(engine, batch)


def _flush_products(engine: Engine, batch: list[dict[str, object]]) -> None:
    if not batch:
        return
    pictures = [
        {"product_id": row["id"], "position": k, "url": f"http://shop.test/i/{row['id']}-{k}.jpg",
         "alt": "a picture", "width": 800, "height": 600}
        for row in batch for k in range(2)
    ]  # fmt: skip
    with engine.begin() as conn:
        conn.execute(insert(products), batch)
        conn.execute(insert(images), pictures)


def _export_rss(url: str, fmt: str, what: str, out: Path) -> tuple[int, float, float, str]:
    """Run ``harvestman export`` in a child; its exit status, peak RSS in MB, seconds, and its
    RSS at each quarter of the run (flat from the first quarter on: constant memory).

    The peak is the child's VmHWM read from /proc while it runs (the last read before it exits):
    the child's ``ru_maxrss`` would count this process's memory too, as a forked child's high
    water mark outlives its exec.
    """
    began = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "harvestman.cli", "export", "--format", fmt, "--what", what,
         "--output", str(out), "--database-url", url, "--name", "bench"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    status = Path(f"/proc/{child.pid}/status")
    peak_kb = 0
    rss_kb: list[int] = []
    while child.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak_kb = max(peak_kb, int(line.split()[1]))
                elif line.startswith("VmRSS:"):
                    rss_kb.append(int(line.split()[1]))
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.1)
    code = child.wait()
    quarters = "/".join(
        f"{rss_kb[min(len(rss_kb) - 1, len(rss_kb) * q // 4)] / 1024:.0f}" for q in (1, 2, 3, 4)
    ) if rss_kb else "-"  # fmt: skip
    return code, peak_kb / 1024, time.perf_counter() - began, quarters


def _exports(n: int, postgres: str | None) -> None:
    sizes = [1000, n] if n > 1000 else [n]
    for size in sizes:
        if postgres:
            schema = f"bench_{uuid.uuid4().hex[:8]}"
            admin = create_engine(postgres.replace("postgresql://", "postgresql+psycopg://", 1))
            with admin.begin() as conn:
                conn.execute(text(f"CREATE SCHEMA {schema}"))
            url = f"{postgres}?options=-csearch_path%3D{schema}"
        else:
            url = f"sqlite:///{OUT / f'export-{size}.db'}"
        # A SQLite store filled by an earlier run is reused (filling a million rows is slow).
        filled = OUT / f"export-{size}.done"
        try:
            if postgres or not filled.exists():
                (OUT / f"export-{size}.db").unlink(missing_ok=True)
                engine = dialect.make_engine(url)
                migrate.upgrade(engine)
                began = time.perf_counter()
                crawl = fill(engine, size, size)
                fill_products(engine, crawl, size)
                engine.dispose()
                if not postgres:
                    filled.touch()
                print(f"store of {size:,} pages and {size:,} products filled in"
                      f" {time.perf_counter() - began:.0f} s")  # fmt: skip
            for what in ("pages", "products"):
                for fmt in ("jsonl", "csv", "es"):
                    out = OUT / f"{what}-{size}.{fmt}"
                    code, rss, took, quarters = _export_rss(url, fmt, what, out)
                    mb = out.stat().st_size / 1e6 if out.exists() else 0.0
                    print(
                        f"  export {what:8} {fmt:5}: exit {code}, peak RSS {rss:6.1f} MB"
                        f" (by quarter {quarters} MB), {took:6.1f} s, {mb:7.1f} MB written"
                    )
                    out.unlink(missing_ok=True)
        finally:
            if postgres:
                with admin.begin() as conn:
                    conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
                admin.dispose()


if __name__ == "__main__":
    sys.exit(main())
