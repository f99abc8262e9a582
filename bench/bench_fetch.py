"""Requests/s of ``Fetcher.fetch`` on a 20 KB page from a local aiohttp server in another process.

Prints, for sequential and for 64-concurrent fetches, the wall-clock rate and the client's own
CPU time per request, next to a bare ``aiohttp`` get + read loop doing the same, so the cost of
the fetcher's layer (limits, redirect handling, timeout, result object) is visible. The two
alternate over several rounds so that load from elsewhere on the machine hits both alike; the
best round of each is printed.

Run: ``.venv/bin/python bench/bench_fetch.py [--seconds 1] [--rounds 3] [--uvloop]``
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp import web

from harvestman.crawl.fetch import Fetcher

PAGE = (b"<html><head><title>bench</title></head><body>" + b"<p>lorem ipsum</p>" * 1110)[
    :20_000
] + b"</body></html>"

Fetch = Callable[[str], Awaitable[int]]


def serve() -> None:
    """The server side: print the port, then serve until stdin closes."""

    async def page(request: web.Request) -> web.Response:
        return web.Response(body=PAGE, content_type="text/html", charset="utf-8")

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/page/{n}", page)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        print(runner.addresses[0][1], flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await runner.cleanup()

    install_uvloop()
    asyncio.run(main())


def install_uvloop() -> bool:
    try:
        import uvloop
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True


async def run(
    fetch: Fetch, base: str, concurrency: int, seconds: float
) -> tuple[int, float, float]:
    """Fetch for ``seconds`` with ``concurrency`` workers; return (requests, wall s, CPU s)."""
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker(index: int) -> None:
        nonlocal done
        n = index
        while time.perf_counter() < deadline:
            size = await fetch(f"{base}/page/{n}")
            assert size == len(PAGE), size
            done += 1
            n += concurrency

    wall, cpu = time.perf_counter(), time.process_time()
    async with asyncio.TaskGroup() as group:
        for index in range(concurrency):
            group.create_task(worker(index))
    return done, time.perf_counter() - wall, time.process_time() - cpu


async def measure(base: str, seconds: float, rounds: int) -> None:
    async with (
        Fetcher(user_agent="harvestman-bench/1.0") as fetcher,
        aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=256), auto_decompress=False
        ) as session,
    ):

        async def harvestman_fetch(url: str) -> int:
            return len((await fetcher.fetch(url)).body)

        async def bare_fetch(url: str) -> int:
            async with session.get(url) as response:
                return len(await response.read())

        fetches: dict[str, Fetch] = {"aiohttp bare": bare_fetch, "Fetcher": harvestman_fetch}
        for fetch in fetches.values():
            await run(fetch, base, 64, 0.3)  # warm the pool
        best: dict[tuple[str, int], tuple[float, float, int]] = {}
        for _ in range(rounds):
            for concurrency in (1, 64):
                for label, fetch in fetches.items():
                    done, wall, cpu = await run(fetch, base, concurrency, seconds)
                    key = (label, concurrency)
                    if key not in best or done / wall > best[key][0]:
                        best[key] = (done / wall, cpu / done * 1e6, done)
        for (label, concurrency), (rate, cpu_us, done) in sorted(best.items()):
            print(
                f"{label:<13} concurrency {concurrency:>2}: {rate:7.0f} req/s, "
                f"client CPU {cpu_us:5.0f} µs/req ({done} requests)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds, best kept")
    parser.add_argument("--uvloop", action="store_true", help="client on uvloop")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        loop = "uvloop" if args.uvloop and install_uvloop() else "asyncio"
        print(f"page {len(PAGE)} bytes; server: aiohttp in another process; client: {loop}")
        asyncio.run(measure(f"http://127.0.0.1:{port}", args.seconds, args.rounds))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
