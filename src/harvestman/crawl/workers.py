"""Crawl workers: one worker's run (``harvestman worker``), and ``serve``'s in-process ones.

A worker crawls the store's frontier of ``crawl_name`` as others fill it (``harvestman seed``,
``POST /api/frontier/seed``, the dashboard), politely shared through its coordinator (Redis's
when configured, else the store's host gate). ``work`` is that one run, the same for the
``worker`` command and for ``serve``: ``CrawlWorkers`` keeps ``count`` of them running beside
the API under a TaskGroup, starts a failed one again after ``restart_delay``, and stops them
all (leases given back) when ``stop`` is called.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from harvestman.coord.choice import coordinator_for
from harvestman.coord.interfaces import Coordinator
from harvestman.crawl.crawler import Crawler
from harvestman.errors import HarvestmanError
from harvestman.records import CrawlCounts

if TYPE_CHECKING:
    from harvestman.config import Settings
    from harvestman.store import Store

log = logging.getLogger(__name__)


async def work(
    settings: Settings,
    store: Store,
    *,
    exit_when_done: bool = False,
    started: Callable[[Crawler], None] | None = None,
    coordinator: Coordinator | None = None,
) -> CrawlCounts:
    """Crawl as a worker on an open store until stopped (or, with ``exit_when_done``, until
    nothing is pending or leased anywhere); ``started`` gets the crawler before it runs, to
    stop it later. A ``coordinator`` passed in is shared with the caller, who closes it;
    without one the run opens and closes its own."""
    crawler = Crawler(settings, store, worker_mode=True, exit_when_done=exit_when_done)
    owned = coordinator is None
    crawler.coordinator = coordinator or coordinator_for(settings, store, crawler.worker_id)
    if started is not None:
        started(crawler)
    try:
        return await crawler.run()
    finally:
        if owned:
            await crawler.coordinator.close()


class CrawlWorkers:
    """``count`` in-process crawl workers on ``store`` (``harvestman serve --workers N``).

    ``run`` returns once ``stop`` was called and every worker gave its leases back. A worker
    whose run fails (the store away, a bug) is logged and started again after
    ``restart_delay`` seconds; the others go on.
    """

    def __init__(
        self, settings: Settings, store: Store, count: int, *, restart_delay: float = 5.0
    ) -> None:
        self.settings = settings
        self.store = store
        self.count = count
        self.restart_delay = restart_delay
        self.crawlers: list[Crawler] = []  # the running ones
        self._stopping = asyncio.Event()

    @classmethod
    def from_settings(cls, settings: Settings, store: Store, embedded: bool) -> CrawlWorkers:
        """``serve_workers`` of them; when unset, one on an embedded (SQLite) store, where no
        other process is expected to crawl, and none on PostgreSQL, whose deployments run
        ``harvestman worker`` on machines of their own."""
        count = settings.serve_workers
        if count is None:
            count = 1 if embedded else 0
        return cls(settings, store, count, restart_delay=settings.serve_worker_restart_delay)

    @property
    def worker_ids(self) -> list[str]:
        return [crawler.worker_id for crawler in self.crawlers]

    def stop(self) -> None:
        """Stop every worker soon and cleanly (in-flight requests are released)."""
        self._stopping.set()
        for crawler in self.crawlers:
            crawler.stop()

    async def run(self) -> None:
        if self.count:
            log.info(
                "%d in-process crawl worker%s on crawl %r",
                self.count,
                "" if self.count == 1 else "s",
                self.settings.crawl_name,
            )
        async with asyncio.TaskGroup() as group:
            for n in range(self.count):
                group.create_task(self._keep_running(), name=f"crawl-worker-{n + 1}")

    async def _keep_running(self) -> None:
        while not self._stopping.is_set():
            running: Crawler | None = None

            def started(crawler: Crawler) -> None:
                nonlocal running
                running = crawler
                self.crawlers.append(crawler)
                if self._stopping.is_set():  # stop came while it was being built
                    crawler.stop()

            try:
                await work(self.settings, self.store, started=started)
            except HarvestmanError as exc:
                log.warning(
                    "in-process crawl worker stopped: %s; again in %g s", exc, self.restart_delay
                )
            except Exception:  # a bug: logged with its traceback; serve and the others go on
                log.exception("in-process crawl worker failed; again in %g s", self.restart_delay)
            finally:
                if running is not None:
                    self.crawlers.remove(running)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.restart_delay)
