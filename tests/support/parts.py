"""The parts gates and steps are given, made real for a test: a migrated SQLite store, a crawl
in it, a (not started) frontier and the crawl's run state, a fetcher for a real site."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from harvestman.crawl.analysis import AnalysisSpec, PageAnalyzer
from harvestman.crawl.discovery import Discovery
from harvestman.crawl.fetch import FetchResult, RetryPolicy
from harvestman.crawl.frontier import Frontier
from harvestman.crawl.outcomes import Outcomes
from harvestman.crawl.run import CrawlRun
from harvestman.crawl.work import PageWork
from harvestman.extract.products import DEFAULT_MAX_PRICE
from harvestman.records import CrawlRequest
from harvestman.stats import Stats
from harvestman.store import SqlStore
from harvestman.urls import Scope, host_key, url_hash

# An analysis that computes everything a step may read: the verdict, the fingerprint, the
# product scan and the text.
FULL_ANALYSIS = AnalysisSpec(
    validate_min_bytes=500, near_duplicates=True, products_max_price=DEFAULT_MAX_PRICE
)


@dataclass
class Parts:
    store: SqlStore
    run: CrawlRun
    outcomes: Outcomes
    discovery: Discovery
    now: list[float]  # the injected clock's time: move it by hand


@contextlib.asynccontextmanager
async def crawl_parts(
    tmp_path: Path, seeds: list[str], *, max_depth: int = 3, visited_ttl: float = 1000.0
) -> AsyncIterator[Parts]:
    """A run of a crawl of ``seeds`` in a fresh SQLite store, its clock at 1000.0."""
    now = [1000.0]
    clock: Callable[[], float] = lambda: now[0]  # noqa: E731
    async with SqlStore(f"sqlite:///{tmp_path / 'parts.db'}") as store:
        await store.upgrade()
        stats = Stats()
        run = CrawlRun(store, stats, clock)
        run.crawl_id = await store.ensure_crawl("parts", seeds)
        run.frontier = Frontier(store.frontier, run.crawl_id, "tester", delay=0.0, clock=clock)
        outcomes = Outcomes(stats, clock, visited_ttl=visited_ttl, retry=RetryPolicy(1, 0.01))
        discovery = Discovery(stats, max_depth=max_depth, seen_cache_size=1000)
        discovery.scope = Scope(seeds)
        yield Parts(store, run, outcomes, discovery, now)


def request_for(url: str, *, depth: int = 0, attempts: int = 0, kind: str = "page") -> CrawlRequest:
    return CrawlRequest(1, url, url_hash(url), host_key(url), depth, 1, attempts, kind=kind)


def html_response(url: str, body: str | bytes, status: int = 200) -> FetchResult:
    raw = body.encode() if isinstance(body, str) else body
    headers = {"Content-Type": "text/html; charset=utf-8"}
    return FetchResult(url, url, status, headers, raw, "text/html", "utf-8")


def page_work(
    parts: Parts, url: str, body: str | bytes, *, depth: int = 0, spec: AnalysisSpec = FULL_ANALYSIS
) -> PageWork:
    """An analyzed HTML page as the pipeline hands it to its steps."""
    result = html_response(url, body)
    request = request_for(url, depth=depth)
    record = parts.outcomes.page_record(request, result)
    analysis = PageAnalyzer(spec).analyze(
        url, result.status, result.headers, result.body, result.charset
    )
    record.title, record.content_hash = analysis.page.title, analysis.page.content_hash
    return PageWork(request, result, record, analysis)
