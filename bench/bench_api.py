"""API latency and idle memory: list endpoints at a steady request rate against `serve`.

    .venv/bin/python bench/bench_api.py --urls 200000 --pages 100000 --jobs 2000 --rate 100

Builds a SQLite store (urls, pages, sources and jobs), starts `serve --dev --no-scheduler` on
it in a subprocess, reads its idle RSS, then sends ``rate`` requests/s for ``seconds`` to each
list endpoint from this process (open loop: requests start on schedule, not when the last one
ends) and prints p50/p99 per endpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import create_engine, insert

SERVE = "import typer; from harvestman.api.commands import serve; typer.run(serve)"


def build(db: Path, n_urls: int, n_pages: int, n_jobs: int) -> None:
    from harvestman.jobs.models import jobs, sources
    from harvestman.store import migrate
    from harvestman.store.schema import crawled_pages, crawls, urls

    engine = create_engine(f"sqlite:///{db}")
    migrate.upgrade(engine)
    now = time.time()
    with engine.begin() as conn:
        conn.execute(insert(crawls).values(id=1, name="default", created_at=now, seeds="[]"))
        for start in range(0, n_urls, 50_000):
            rows = []
            for i in range(start, min(start + 50_000, n_urls)):
                url = f"http://h{i % 500}.example/p/{i}"
                rows.append(
                    {
                        "crawl_id": 1, "url_hash": hashlib.sha256(url.encode()).hexdigest(),
                        "url": url, "host": f"h{i % 500}.example",
                        "status": "completed" if i < n_pages else "pending", "priority": 2,
                        "depth": 1, "next_crawl_at": now, "attempts": 0, "discovered_at": now,
                        "updated_at": now, "kind": "page",
                    }
                )  # fmt: skip
            conn.execute(insert(urls), rows)
        for start in range(0, n_pages, 50_000):
            rows = []
            for i in range(start, min(start + 50_000, n_pages)):
                url = f"http://h{i % 500}.example/p/{i}"
                rows.append(
                    {
                        "crawl_id": 1, "url_hash": hashlib.sha256(url.encode()).hexdigest(),
                        "url": url, "final_url": url, "host": f"h{i % 500}.example",
                        "status_code": 200, "title": f"page {i}", "links_count": 10,
                        "fetched_at": now - i,
                    }
                )  # fmt: skip
            conn.execute(insert(crawled_pages), rows)
        conn.execute(
            insert(sources).values(
                id=1, name="s", start_urls='["http://h0.example/"]', max_depth=0,
                scope="{}", max_pages=0, enabled=True, created_at=now, updated_at=now,
            )
        )  # fmt: skip
        conn.execute(
            insert(jobs),
            [
                {
                    "source_id": 1, "url": f"http://h{i}.example/", "status": "scheduled",
                    "interval_minutes": 60, "interval_type": "minutes", "schedule_enabled": True,
                    "adaptive_scheduling": True, "max_retries": 3, "retry_backoff_seconds": 60,
                    "current_retry_count": 0, "next_run_at": now + (i * 7) % 3600,
                    "is_paused": False, "metadata": json.dumps({}), "created_at": now,
                    "updated_at": now,
                }
                for i in range(n_jobs)
            ],
        )  # fmt: skip
    engine.dispose()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def load(base: str, path: str, rate: float, seconds: float, token: str) -> list[float]:
    latencies: list[float] = []
    errors: list[int] = []
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits) as client:

        async def one() -> None:
            started = time.perf_counter()
            try:
                response = await client.get(path, timeout=60)
                response.raise_for_status()
            except httpx.HTTPError:
                errors.append(1)
                return
            latencies.append((time.perf_counter() - started) * 1000)

        tasks = []
        start = time.perf_counter()
        for i in range(int(rate * seconds)):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one()))
        await asyncio.gather(*tasks)
    if errors:
        print(f"  {path}: {len(errors)} requests failed")
    return sorted(latencies) or [float("nan")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--urls", type=int, default=200_000)
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=2_000)
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    from harvestman.api import Role, create_token

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        t0 = time.perf_counter()
        build(db, args.urls, args.pages, args.jobs)
        print(f"store: {args.urls} urls, {args.pages} pages, {args.jobs} jobs "
              f"built in {time.perf_counter() - t0:.1f} s")  # fmt: skip
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        secret = "bench-secret-" + "x" * 40
        env = {
            **os.environ,
            "HARVESTMAN_DATABASE_URL": f"sqlite:///{db}",
            "HARVESTMAN_API_JWT_SECRET": secret,
            "HARVESTMAN_API_RATE_USER": "1000000",
        }
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, "--port", str(port), "--no-scheduler"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            while True:
                try:
                    httpx.get(f"{base}/openapi.json", timeout=1)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            time.sleep(2)
            print(f"serve idle RSS: {rss_mb(proc.pid):.0f} MB")
            token = create_token(secret, Role.USER)
            paths = (
                "/api/v1/jobs",
                "/api/pages",
                "/api/frontier/urls?status=pending",
                "/api/pages?host=h7.example",
                "/api/v1/jobs?status=scheduled",
            )
            for path in paths:
                lat = asyncio.run(load(base, path, args.rate, args.seconds, token))
                p50, p99 = lat[len(lat) // 2], lat[int(len(lat) * 0.99) - 1]
                print(f"{path:40s} {len(lat)} req at {args.rate:g}/s: "
                      f"p50 {p50:.1f} ms, p99 {p99:.1f} ms")  # fmt: skip
            print(f"serve RSS after load: {rss_mb(proc.pid):.0f} MB")
        finally:
            proc.terminate()
            proc.wait(timeout=20)


if __name__ == "__main__":
    main()
