"""Archive discovery: when a host's frontier runs dry, its archives (``/archive``, date paths)
may know more; at most once per ``min_interval``, and only once the host showed enough URLs
to learn its date paths from."""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import Self

from harvestman.config import Settings
from harvestman.crawl.discovery import Discovery
from harvestman.crawl.run import CrawlRun
from harvestman.crawl.writer import BatchWriter
from harvestman.discovery.archives import ArchiveScheduler, archive_candidates
from harvestman.errors import StoreError

log = logging.getLogger(__name__)


class ArchiveDiscovery:
    """Called by the frontier when a host runs dry (``on_host_dry``)."""

    def __init__(
        self,
        run: CrawlRun,
        discovery: Discovery,
        writer: BatchWriter,
        *,
        min_interval: float,
        low_water: int,
        tasks: set[asyncio.Task[None]],
    ) -> None:
        self.run = run
        self.discovery = discovery
        self.writer = writer
        self.min_interval = min_interval
        self.low_water = low_water
        self.scheduler = ArchiveScheduler(min_interval, low_water)
        self.tasks = tasks  # the crawler's: awaited or cancelled when the crawl ends

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        run: CrawlRun,
        discovery: Discovery,
        writer: BatchWriter,
        tasks: set[asyncio.Task[None]],
    ) -> Self | None:
        if not settings.discovery_archives:
            return None
        return cls(
            run,
            discovery,
            writer,
            min_interval=settings.archives_min_interval,
            low_water=settings.archives_low_water,
            tasks=tasks,
        )

    def host_ran_dry(self, host: str) -> None:
        if self.writer.host_urls[host] < self.low_water:
            return
        if not self.scheduler.due(host, self.run.clock(), 0):
            return
        self.run.frontier.begin_discovery()
        task = asyncio.create_task(self._discover(host))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _discover(self, host: str) -> None:
        try:
            await self._find(host)
        except StoreError as exc:
            log.warning("archive discovery for %s failed: %s", host, exc)
        finally:
            self.run.frontier.end_discovery()

    async def _find(self, host: str) -> None:
        run = self.run
        now = run.clock()
        _, last_run = await run.store.hosts.discovery_state(host)
        if last_run is not None and last_run > now - self.min_interval:
            return  # another run (or worker) did it recently
        seen = await run.store.hosts.sample_urls(run.crawl_id, host)
        candidates = archive_candidates(seen[0], seen, datetime.date.today())
        found = self.discovery.guessed([url for url in candidates if url not in seen], 1, "archive")
        self.writer.add_urls(found)
        run.stats.inc("discovery/archives", len(found))
        await run.store.hosts.save_discovery_state(now, archives_run=[host])
        if found:  # written before the frontier may call the crawl finished
            await self.writer.wait_flushed()
