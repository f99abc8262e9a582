"""Outcomes and new URLs go to the store in batches; the frontier then learns of new work.

A batch is written when ``batch_size`` outcomes wait, every ``flush_interval`` seconds, or at
once while the frontier starves (nothing buffered, leasing or due: at a crawl's start and end,
the next work is the links of the outcomes waiting here). A failed write is retried (the store
may be restarting) until the crawl closes, when it gives up after ``FLUSH_RETRIES``: the leases
expire and the URLs come back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from harvestman.coord import Coordinator, LocalCoordinator
from harvestman.crawl.ingest import IngestLimit
from harvestman.crawl.run import CrawlRun
from harvestman.errors import StoreError, StoreRejected
from harvestman.records import NewUrl, Outcome, UrlStatus
from harvestman.stats import StatsHistory

log = logging.getLogger(__name__)

PagesCallback = Callable[[Sequence[Outcome]], None]

FLUSH_RETRIES = 5


class BatchWriter:
    """Collects outcomes and new URLs and writes them in batches (see the module docstring)."""

    def __init__(
        self,
        run: CrawlRun,
        *,
        batch_size: int,
        flush_interval: float,
        history: StatsHistory | None,
        on_pages: PagesCallback | None,
        ingest: IngestLimit | None = None,
    ) -> None:
        self.run = run
        self.ingest = ingest  # new URLs over its rate are written due later
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.history = history
        self.on_pages = on_pages
        self.coordinator: Coordinator = LocalCoordinator()
        self.outcomes: list[Outcome] = []
        self.new_urls: list[NewUrl] = []
        self.final_outcomes = 0  # outcomes that end a request (not retries), for the budget
        self.host_urls: Counter[str] = Counter()  # URLs found per host (archive discovery)
        self.closing = False
        self.flush_now = asyncio.Event()
        self.flushed = asyncio.Event()
        self.touch: Callable[[], None] = lambda: None  # the watchdog's: the crawl made progress

    def queue(self, outcome: Outcome, new_urls: list[NewUrl]) -> None:
        self.touch()
        self.outcomes.append(outcome)
        if new_urls:
            self.new_urls.extend(new_urls)
        if outcome.status is not UrlStatus.PENDING:
            self.final_outcomes += 1
        if outcome.status is UrlStatus.FAILED:
            self.run.stats.inc("fetch/failed")
        elif outcome.status is UrlStatus.COMPLETED:
            self.run.stats.inc("fetch/pages")
        if len(self.outcomes) >= self.batch_size or (
            self.run.has_frontier and self.run.frontier.starved
        ):
            self.flush_now.set()

    def starved(self) -> None:
        """The frontier has nothing to hand out: what waits here is all that can bring work."""
        if self.outcomes or self.new_urls:
            self.flush_now.set()

    def add_urls(self, rows: list[NewUrl]) -> None:
        """URLs found outside a request's outcome (sitemaps of robots.txt, archives)."""
        self.new_urls.extend(rows)

    async def add_bounded(self, rows: list[NewUrl], limit: int) -> None:
        """Add ``rows`` and wait until fewer than ``limit`` new URLs wait here: a producer of
        many URLs (a sitemap's batches) holds no more than a batch, the store the rest."""
        self.new_urls.extend(rows)
        while len(self.new_urls) >= limit:
            await self.wait_flushed()

    @property
    def backlog(self) -> int:
        return len(self.outcomes)

    async def wait_flushed(self) -> None:
        """Until the next batch is written (asking for it now)."""
        self.flushed.clear()
        self.flush_now.set()
        await self.flushed.wait()

    async def loop(self) -> None:
        """Write batches until the crawl closes and nothing is left."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.flush_interval):
                    await self.flush_now.wait()
            self.flush_now.clear()
            await self.flush()
            if self.closing and not self.outcomes and not self.new_urls:
                return

    def close(self) -> None:
        self.closing = True
        self.flush_now.set()

    async def flush(self) -> None:
        run = self.run
        outcomes, self.outcomes = self.outcomes, []
        new_urls, self.new_urls = self.new_urls, []
        if outcomes or new_urls:
            coordinator = self.coordinator
            namespace = str(run.crawl_id)
            if new_urls and coordinator.shared:  # others may know them already
                unseen = await coordinator.unseen(namespace, [u.url_hash for u in new_urls])
                new_urls = [u for u, fresh in zip(new_urls, unseen, strict=True) if fresh]
            now = run.clock()
            if self.ingest is not None and new_urls:
                deferred = self.ingest.admit(new_urls, now)
                if deferred:
                    run.stats.inc("frontier/deferred", deferred)
            attempt = 0
            while True:
                try:
                    rejected = await run.store.outcomes.record(
                        run.crawl_id, outcomes, new_urls, now
                    )
                    break
                except StoreError as exc:
                    attempt += 1
                    if self.closing and attempt >= FLUSH_RETRIES:
                        # Shutting down: give up; the leases expire and the URLs come back.
                        raise
                    wait = min(30.0, 0.5 * 2**attempt)
                    log.warning("store write failed (%s); retrying in %.1f s", exc, wait)
                    await asyncio.sleep(wait)
            if rejected:  # counted as what the store kept: dead letters, not pages
                outcomes = [self._dead_lettered(o, rejected) for o in outcomes]
            if self.history is not None:  # counted once stored, written once a minute
                self.history.add(outcomes, new_urls, now)
            if coordinator.shared:  # only once the store has them
                if new_urls:
                    await coordinator.mark_seen(namespace, [u.url_hash for u in new_urls])
                await coordinator.add_counters(namespace, counts_of(outcomes, new_urls))
            self._after(outcomes, new_urls, now)
        self.flushed.set()
        if self.history is not None and self.history.is_due(run.clock(), closing=self.closing):
            await self._write_history()

    def _dead_lettered(self, outcome: Outcome, rejected: Mapping[int, str]) -> Outcome:
        message = rejected.get(outcome.request.id)
        if message is None:
            return outcome
        stats = self.run.stats
        if outcome.status is UrlStatus.COMPLETED:
            stats.inc("fetch/pages", -1)
        if outcome.status is not UrlStatus.FAILED:
            stats.inc("fetch/failed")
        if outcome.status is UrlStatus.PENDING:
            self.final_outcomes += 1
        stats.inc("store/dead_lettered")
        return Outcome.failed(outcome.request, StoreRejected(message), outcome.next_crawl_at)

    async def _write_history(self) -> None:
        """One additive upsert of the pending minutes; on a store error they wait for the next."""
        assert self.history is not None
        buckets = self.history.take(self.run.clock())
        try:
            await self.run.store.outcomes.add_stats(self.run.crawl_id, buckets)
        except StoreError as exc:
            log.warning("stats history write failed (%s); kept for the next one", exc)
            self.history.give_back(buckets)

    def _after(self, outcomes: list[Outcome], new_urls: list[NewUrl], now: float) -> None:
        frontier = self.run.frontier
        hosts = Counter(row.host for row in new_urls)
        self.host_urls.update(hosts)
        first_due = dict.fromkeys(hosts, math.inf)
        for row in new_urls:
            due = now if row.due_at is None else row.due_at
            if due < first_due[row.host]:
                first_due[row.host] = due
        for host, due in first_due.items():
            frontier.add_work(host, due)
        for outcome in outcomes:
            if outcome.status is UrlStatus.PENDING:
                frontier.add_work(outcome.request.host, outcome.next_crawl_at)
        frontier.settle(len(outcomes))
        self.run.stats.inc("store/outcomes", len(outcomes))
        self.run.stats.inc("store/new_urls", len(new_urls))
        if self.on_pages is not None and outcomes:
            self.on_pages(outcomes)


def counts_of(outcomes: Sequence[Outcome], new_urls: Sequence[NewUrl]) -> dict[str, int]:
    """A written batch as crawl counters: outcomes by status, and new URLs."""
    counts = Counter(outcome.status.value for outcome in outcomes)
    counts["new_urls"] = len(new_urls)
    return {name: n for name, n in counts.items() if n}
