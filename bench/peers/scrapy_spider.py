"""Scrapy's side of ``bench/compare.py``: a CrawlSpider over the benchmark's site, nothing stored.

Run with the Python of the Scrapy virtualenv that ``compare.py`` installs (not the project's).
Settings are Scrapy's defaults except what the comparison fixes for every crawler: robots.txt
obeyed, ``--concurrency`` requests in flight (also per host), no download delay, no
AutoThrottle, the crawl stops at ``--max-depth`` link hops. Links are ``<a href>`` on the seeds'
hosts; ``utm_*`` parameters are dropped (the site links some pages with them: the same page),
as a user of Scrapy would with ``process_value``. The order is breadth-first (``DEPTH_PRIORITY``
and FIFO queues, Scrapy's documented setting for it): depth-first with a depth limit misses links
first met too deep. Each response with status 200 is counted; at
the end one JSON line gives pages, blocked (robots.txt) and failures, and ``--report FILE``
writes the URLs for the page-set check.

    bench/out/venvs/scrapy/bin/python bench/peers/scrapy_spider.py http://127.0.0.1:PORT/
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from scrapy.crawler import CrawlerProcess
from scrapy.http import Request, Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


def drop_utm(url: str) -> str:
    parts = urlsplit(url)
    if "utm_" not in parts.query:
        return url
    kept = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not k.startswith("utm_")
    ]
    return urlunsplit(parts._replace(query=urlencode(kept)))


class SiteSpider(CrawlSpider):
    name = "bench"
    pages: list[str]

    def __init__(self, seeds: list[str], *args: Any, **kwargs: Any) -> None:
        self.start_urls = seeds
        # Offsite filtering is by host name: the seeds' (127.0.0.1) keeps localhost out.
        self.allowed_domains = sorted({urlsplit(seed).hostname or "" for seed in seeds})
        self.rules = (
            Rule(
                LinkExtractor(tags=("a",), attrs=("href",), process_value=drop_utm),
                callback="count",
                follow=True,
            ),
        )
        self.pages = []
        super().__init__(*args, **kwargs)

    async def start(self) -> AsyncIterator[Any]:
        # Scrapy's own start requests skip the duplicate filter, so that the root, linked from
        # every page, would be fetched twice.
        for url in self.start_urls:
            yield Request(url)

    def parse_start_url(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        return self.count(response)

    def count(self, response: Response) -> Iterator[Any]:
        if response.status == 200:
            self.pages.append(response.url)
        return iter(())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", nargs="+")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--max-depth", type=int, default=20)
    parser.add_argument("--report", type=Path, default=None, help="write the URLs here (JSON)")
    args = parser.parse_args()
    process = CrawlerProcess(
        settings={
            "ROBOTSTXT_OBEY": True,
            "CONCURRENT_REQUESTS": args.concurrency,
            "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
            "DOWNLOAD_DELAY": 0,
            "RANDOMIZE_DOWNLOAD_DELAY": False,
            "AUTOTHROTTLE_ENABLED": False,
            "DEPTH_LIMIT": args.max_depth,
            # Breadth-first, as the docs advise for broad crawls and as the expected page set is
            # computed: depth-first with a depth limit drops links first seen too deep.
            "DEPTH_PRIORITY": 1,
            "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
            "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
            "LOG_LEVEL": "INFO",
            "TELNETCONSOLE_ENABLED": False,
        }
    )
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, seeds=args.seeds)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    spider = crawler.spider
    pages: list[str] = spider.pages if isinstance(spider, SiteSpider) else []
    blocked = int(stats.get("robotstxt/forbidden", 0))
    failed = {
        key: value
        for key, value in stats.items()
        if key.startswith(("downloader/exception_type_count/", "spider_exceptions/"))
        or (key.startswith("downloader/response_status_count/") and not key.endswith("/200"))
    }
    print(json.dumps({"pages": len(pages), "blocked": blocked, "failed": failed}), flush=True)
    if args.report is not None:
        args.report.write_text(json.dumps({"pages": pages, "blocked": blocked}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
