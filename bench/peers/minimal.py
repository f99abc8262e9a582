"""The smallest honest crawler: aiohttp + selectolax + Protego, a seen set, nothing stored.

It is the yardstick ``bench/compare.py`` sets Harvestman against: what a crawl of the benchmark's
site costs when nothing is stored, validated or recorded. It obeys robots.txt (fetched once per
seed host before the crawl; a disallowed URL is counted as blocked, never fetched), follows
``<a href>`` links on the seeds' hosts (scheme, host and port), drops fragments and ``utm_*``
parameters, stops at ``--max-depth`` link hops from a seed, and keeps ``--concurrency`` requests
in flight. At the end it prints one JSON line: pages fetched with status 200, blocked URLs,
failures; ``--report FILE`` also writes the URLs (for the page-set check).

    python bench/peers/minimal.py http://127.0.0.1:PORT/ --concurrency 64 --max-depth 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import aiohttp
from protego import Protego
from selectolax.lexbor import LexborHTMLParser

USER_AGENT = "minimal-bench-crawler/1.0"


def normalize(url: str) -> str:
    """``url`` without its fragment and ``utm_*`` parameters (one page, one URL)."""
    parts = urlsplit(url)
    query = parts.query
    if "utm_" in query:
        kept = [
            (k, v) for k, v in parse_qsl(query, keep_blank_values=True) if not k.startswith("utm_")
        ]
        query = urlencode(kept)
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", query, ""))


class Crawl:
    def __init__(self, seeds: list[str], concurrency: int, max_depth: int) -> None:
        self.seeds = [normalize(seed) for seed in seeds]
        self.scope = {urlsplit(seed).netloc for seed in self.seeds}
        self.concurrency = concurrency
        self.max_depth = max_depth
        self.robots: dict[str, Protego] = {}
        self.seen: set[str] = set()
        self.queue: asyncio.Queue[tuple[str, int]] = asyncio.Queue()
        self.pages: list[str] = []
        self.blocked: list[str] = []
        self.failed: dict[str, int] = {}

    def offer(self, url: str, depth: int) -> None:
        if url in self.seen:
            return
        self.seen.add(url)
        if not self.robots[urlsplit(url).netloc].can_fetch(url, USER_AGENT):
            self.blocked.append(url)
            return
        self.queue.put_nowait((url, depth))

    def links(self, base: str, body: bytes) -> list[str]:
        found = []
        for node in LexborHTMLParser(body).css("a[href]"):
            href = node.attributes.get("href")
            if not href:
                continue
            url = urljoin(base, href.strip())
            parts = urlsplit(url)
            if parts.scheme in ("http", "https") and parts.netloc in self.scope:
                found.append(normalize(url))
        return found

    async def fetch_robots(self, session: aiohttp.ClientSession, netloc: str) -> None:
        scheme = next(urlsplit(s).scheme for s in self.seeds if urlsplit(s).netloc == netloc)
        async with session.get(f"{scheme}://{netloc}/robots.txt") as response:
            text = await response.text() if response.status == 200 else ""
        self.robots[netloc] = Protego.parse(text)

    async def worker(self, session: aiohttp.ClientSession) -> None:
        while True:
            url, depth = await self.queue.get()
            try:
                async with session.get(url) as response:
                    body = await response.read()
                    status = response.status
                    html = "html" in response.headers.get("Content-Type", "")
                if status != 200:
                    self.failed[str(status)] = self.failed.get(str(status), 0) + 1
                    continue
                self.pages.append(url)
                if html and depth < self.max_depth:
                    for link in self.links(url, body):
                        self.offer(link, depth + 1)
            except (aiohttp.ClientError, TimeoutError) as exc:
                name = type(exc).__name__
                self.failed[name] = self.failed.get(name, 0) + 1
            finally:
                self.queue.task_done()

    async def run(self) -> None:
        connector = aiohttp.TCPConnector(limit=self.concurrency, limit_per_host=self.concurrency)
        timeout = aiohttp.ClientTimeout(total=30)
        headers = {"User-Agent": USER_AGENT}
        async with aiohttp.ClientSession(
            connector=connector, timeout=timeout, headers=headers
        ) as session:
            await asyncio.gather(*(self.fetch_robots(session, netloc) for netloc in self.scope))
            for seed in self.seeds:
                self.offer(seed, 0)
            workers = [asyncio.create_task(self.worker(session)) for _ in range(self.concurrency)]
            await self.queue.join()
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", nargs="+")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--max-depth", type=int, default=20)
    parser.add_argument("--report", type=Path, default=None, help="write the URLs here (JSON)")
    args = parser.parse_args()
    crawl = Crawl(args.seeds, args.concurrency, args.max_depth)
    asyncio.run(crawl.run())
    counts = {"pages": len(crawl.pages), "blocked": len(crawl.blocked), "failed": crawl.failed}
    print(json.dumps(counts), flush=True)
    if args.report is not None:
        args.report.write_text(json.dumps({"pages": crawl.pages, "blocked": crawl.blocked}))
    return 0 if not crawl.failed else 1


if __name__ == "__main__":
    sys.exit(main())
