"""Seeding a crawl from a big seeds file: rate, CPU and peak RSS of the seeding process.

Writes a seeds file of N URLs over K hosts (127.0.0.1, one port each), then runs, each in a
child process measured with ``os.wait4`` (user + system CPU, peak RSS):

1. ``harvestman seed --seeds-file F`` into a fresh SQLite store: the seeding alone;
2. unless ``--no-crawl``: ``harvestman crawl --seeds-file F --max-pages M`` into another fresh
   store, with K small HTTP servers on those ports (every page a tiny HTML page without
   links), printing when the first page request reached a server (the crawl starts fetching
   only once the whole file is in the frontier) and the run's figures;
3. with ``--small``: the same crawl seeded with K URLs, for the peak RSS to compare with.

    .venv/bin/python bench/seeds_bench.py --urls 2000000 --max-pages 5000
"""

from __future__ import annotations

import argparse
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = b"<html><head><title>seeded</title></head><body><p>a seeded page</p></body></html>"


@dataclass
class Usage:
    wall: float
    user: float
    system: float
    peak_rss_mb: float
    status: int

    @property
    def cpu(self) -> float:
        return self.user + self.system


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def write_seeds(path: Path, urls: int, ports: list[int], bad: int) -> None:
    """``urls`` distinct URLs spread over ``ports``, plus ``bad`` malformed lines."""
    with path.open("w", encoding="utf-8") as out:
        out.write("# seeds for bench/seeds_bench.py\n")
        for i in range(urls):
            port = ports[i % len(ports)]
            out.write(f"http://127.0.0.1:{port}/item/{i}?ref=bench&colour={i % 7}\n")
            if bad and i % (urls // bad or 1) == 0:
                out.write(f"ftp://127.0.0.1:{port}/not-http/{i}\n")


class FirstRequest:
    """When a server first saw a page request (robots.txt aside), and how many it saw."""

    def __init__(self) -> None:
        self.at: float | None = None
        self.count = 0
        self.lock = threading.Lock()

    def seen(self, path: str) -> None:
        if path == "/robots.txt":
            return
        with self.lock:
            self.count += 1
            if self.at is None:
                self.at = time.monotonic()


def serve(ports: list[int], first: FirstRequest) -> list[ThreadingHTTPServer]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            first.seen(self.path)
            status, body = (404, b"") if self.path == "/robots.txt" else (200, PAGE)
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    servers = []
    for port in ports:
        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    return servers


def measure(command: list[str], log: Path) -> tuple[Usage, float]:
    """Run ``command``; its usage, and the monotonic time it started at."""
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=out)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    return (
        Usage(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss / 1024, process.returncode),
        started,
    )


def frontier_counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT status, count(*) FROM urls GROUP BY status").fetchall())


def report(title: str, usage: Usage, urls: int | None = None) -> None:
    print(f"== {title}")
    print(f"wall             {usage.wall:.1f} s (exit {usage.status})")
    print(f"CPU              {usage.cpu:.1f} s (user {usage.user:.1f} + sys {usage.system:.1f})")
    if urls:
        print(f"seeding rate     {urls / usage.cpu:,.0f} URLs per CPU second")
    print(f"peak RSS         {usage.peak_rss_mb:.0f} MB")


def crawl(
    args: argparse.Namespace, seeds: Path, db: Path, work: Path, ports: list[int], title: str
) -> None:
    first = FirstRequest()
    servers = serve(ports, first)
    try:
        command = [
            *harvestman(args), "crawl", "--seeds-file", str(seeds), "--db", str(db),
            "--max-pages", str(args.max_pages), "--delay", "0", "--per-host-concurrency", "8",
            "--concurrency", "64", "--no-progress",
        ]  # fmt: skip
        usage, started = measure(command, work / f"{db.stem}.log")
    finally:
        for server in servers:
            server.shutdown()
    report(title, usage)
    if first.at is not None:
        print(f"first fetch      {first.at - started:.1f} s after the start")
    print(f"pages served     {first.count}")
    print(f"frontier         {frontier_counts(db)}")


def harvestman(args: argparse.Namespace) -> list[str]:
    return [sys.executable, "-m", "harvestman.cli"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=2_000_000, help="URLs in the seeds file")
    parser.add_argument("--hosts", type=int, default=10, help="distinct 127.0.0.1 ports")
    parser.add_argument("--bad", type=int, default=10, help="malformed lines in the file")
    parser.add_argument("--max-pages", type=int, default=5000, help="the crawl's --max-pages")
    parser.add_argument("--no-crawl", action="store_true", help="measure the seeding only")
    parser.add_argument("--crawl-only", action="store_true", help="skip the seed command")
    parser.add_argument("--small", action="store_true", help="also crawl from --hosts seeds")
    parser.add_argument("--work", type=Path, default=None, help="keep files here")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="seeds-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    ports = free_ports(args.hosts)
    seeds = work / "seeds.txt"
    write_seeds(seeds, args.urls, ports, args.bad)
    size = seeds.stat().st_size / 1e6
    print(f"seeds file       {args.urls:,} URLs + {args.bad} bad lines, {size:.0f} MB, {work}")

    if args.crawl_only:
        crawl(args, seeds, work / "crawl.db", work, ports, "harvestman crawl --seeds-file")
        return 0
    db = work / "seed.db"
    upgrade = subprocess.run([*harvestman(args), "db", "upgrade", "--db", str(db)], check=False)
    if upgrade.returncode:
        return 1
    command = [*harvestman(args), "seed", "--seeds-file", str(seeds), "--db", str(db)]
    usage, _ = measure(command, work / "seed.log")
    report("harvestman seed --seeds-file", usage, args.urls)
    print(f"frontier         {frontier_counts(db)}")
    if not args.no_crawl:
        crawl(args, seeds, work / "crawl.db", work, ports, "harvestman crawl --seeds-file")
    if args.small:
        small = work / "small.txt"
        write_seeds(small, args.hosts, ports, 0)
        crawl(args, small, work / "small.db", work, ports, f"the same crawl, {args.hosts} seeds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
