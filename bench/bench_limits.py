"""Seconds the fetcher and the sitemap parser spend refusing hostile input.

The tests assert that each limit holds by what it reads (bytes decoded, bytes fed to expat,
handlers left unfinished); how fast it holds is measured here. Each case runs ``--rounds`` times
and the best and worst are printed, next to the bound the tests once asserted on a stopwatch:

- ``fetch gzip bomb``: 1 GiB of zeros in ~1 MiB of gzip, cut at the 10 MiB cap (was < 2 s);
- ``fetch declared 100 MiB``: a Content-Length over the cap, refused on the header (< 1 s);
- ``fetch timeout 0.5 s``: a handler that answers after 5 s (0.5-1.5 s);
- ``sitemap gzip bomb``: 1 GiB of white space in gzip members, cut at 50 MiB (< 5 s);
- ``sitemap billion laughs``: an entity declaration, refused (< 0.1 s);
- ``sitemap 20 MiB comment``: an XML token past 1 MiB, refused (< 2 s).

Run: ``.venv/bin/python bench/bench_limits.py [--rounds 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import struct
import time
import zlib
from collections.abc import Awaitable, Callable

from aiohttp import web

from harvestman.crawl.fetch import Fetcher
from harvestman.discovery.sitemaps import parse_sitemap
from harvestman.errors import BodyTooLarge, FetchTimeout

MIB = 1024 * 1024
SITEMAP = "https://example.com/sitemap.xml"


def gzip_zeros(inflated: int) -> bytes:
    """A gzip stream of ``inflated`` zero bytes: one self-contained 1 MiB block repeated."""
    zeros = bytes(MIB)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.flush()[:-8]
    crc = 0
    for _ in range(inflated // MIB):
        crc = zlib.crc32(zeros, crc)
    return head + block * (inflated // MIB - 1) + end + struct.pack("<II", crc, inflated)


def laughs() -> bytes:
    entities = ['<!ENTITY lol "lol">'] + [
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'
        for i in range(1, 10)
    ]
    return (
        f'<?xml version="1.0"?><!DOCTYPE urlset [{"".join(entities)}]>'
        "<urlset><url><loc>https://example.com/&lol9;</loc></url></urlset>"
    ).encode()


async def site(bomb: bytes) -> tuple[web.AppRunner, str]:
    async def bombed(request: web.Request) -> web.Response:
        return web.Response(body=bomb, headers={"Content-Encoding": "gzip"})

    async def declared(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_length = 100 * MIB
        await response.prepare(request)
        await response.write(b" " * 1000)
        await asyncio.sleep(5)
        return response

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.Response(text="too late")

    app = web.Application()
    app.router.add_get("/bomb", bombed)
    app.router.add_get("/declared", declared)
    app.router.add_get("/slow", slow)
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


async def timed(call: Callable[[], Awaitable[object]], rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return times


async def main(rounds: int) -> None:
    runner, base = await site(gzip_zeros(1024 * MIB))
    results: dict[str, list[float]] = {}
    try:
        async with Fetcher(user_agent="bench", timeout=0.5) as fetcher:

            async def refused(path: str, error: type[Exception]) -> None:
                try:
                    await fetcher.fetch(base + path)
                except error:
                    return
                raise AssertionError(f"{path} was not refused")

            results["fetch gzip bomb"] = await timed(lambda: refused("/bomb", BodyTooLarge), rounds)
            results["fetch declared 100 MiB"] = await timed(
                lambda: refused("/declared", BodyTooLarge), rounds
            )
            results["fetch timeout 0.5 s"] = await timed(
                lambda: refused("/slow", FetchTimeout), rounds
            )
    finally:
        await runner.cleanup()

    member = gzip.compress(b" " * MIB, 9)
    head = gzip.compress(
        b"<?xml version='1.0'?><urlset><url><loc>https://example.com/a</loc></url>"
    )
    documents = {
        "sitemap gzip bomb": head + member * 1024,
        "sitemap billion laughs": laughs(),
        "sitemap 20 MiB comment": b"<urlset><!--" + b"x" * (20 * MIB),
    }
    for name, body in documents.items():

        async def parse(body: bytes = body) -> None:
            parse_sitemap(body, SITEMAP)

        results[name] = await timed(parse, rounds)

    for name, times in results.items():
        print(f"{name:26} best {min(times):7.3f} s   worst {max(times):7.3f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args().rounds))
