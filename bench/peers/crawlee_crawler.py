"""Crawlee for Python's side of ``bench/compare.py``: a ParselCrawler over the benchmark's site.

Run with the Python of the Crawlee virtualenv that ``compare.py`` installs (not the project's).
Crawlee's defaults except what the comparison fixes for every crawler: memory storage (nothing on
disk), robots.txt respected (``respect_robots_txt_file``), ``--concurrency`` requests in flight
(minimum, desired and maximum, so that the autoscaled pool does not start low), the crawl stops
at ``--max-depth`` link hops. Links are ``enqueue_links()``'s defaults (``<a href>``, same host
name); Crawlee's own URL normalisation drops fragments and ``utm_*`` parameters. Each page
handled is counted; at the end one JSON line gives pages, blocked (robots.txt) and failures, and
``--report FILE`` writes the URLs for the page-set check.

    bench/out/venvs/crawlee/bin/python bench/peers/crawlee_crawler.py http://127.0.0.1:PORT/
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path

from crawlee import ConcurrencySettings
from crawlee.crawlers import BasicCrawlingContext, ParselCrawler, ParselCrawlingContext
from crawlee.storage_clients import MemoryStorageClient


async def crawl(args: argparse.Namespace) -> dict[str, object]:
    pages: list[str] = []
    blocked: set[str] = set()  # Crawlee reports a disallowed URL once per link to it
    failed: list[str] = []
    crawler = ParselCrawler(
        storage_client=MemoryStorageClient(),
        respect_robots_txt_file=True,
        max_crawl_depth=args.max_depth,
        concurrency_settings=ConcurrencySettings(
            min_concurrency=args.concurrency,
            desired_concurrency=args.concurrency,
            max_concurrency=args.concurrency,
        ),
        configure_logging=False,
    )

    @crawler.router.default_handler
    async def handle(context: ParselCrawlingContext) -> None:
        pages.append(context.request.url)
        await context.enqueue_links()

    @crawler.on_skipped_request
    async def skipped(url: str, reason: str) -> None:
        if reason == "robots_txt":
            blocked.add(url)

    @crawler.failed_request_handler
    async def failure(context: BasicCrawlingContext, error: Exception) -> None:
        failed.append(f"{context.request.url}: {type(error).__name__}")

    await crawler.run(args.seeds)
    return {"pages": pages, "blocked": sorted(blocked), "failed": failed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", nargs="+")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--max-depth", type=int, default=20)
    parser.add_argument("--report", type=Path, default=None, help="write the URLs here (JSON)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    result = asyncio.run(crawl(args))
    pages, blocked, failed = result["pages"], result["blocked"], result["failed"]
    assert isinstance(pages, list)
    assert isinstance(blocked, list)
    assert isinstance(failed, list)
    print(json.dumps({"pages": len(pages), "blocked": len(blocked), "failed": failed[:10]}))
    if args.report is not None:
        args.report.write_text(json.dumps({"pages": pages, "blocked": blocked}))
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
