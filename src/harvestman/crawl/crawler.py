"""The crawler: leases requests, runs each through the pipeline, writes outcomes in batches.

One dispatcher takes ready requests from the frontier (which owns politeness) and starts a task
per request, at most ``concurrency`` at a time. Each task ends in an ``Outcome``; outcomes and
the URLs their pages revealed are written to the store in batches by the writer, which then
tells the frontier about new work. Nothing the crawl knows lives only in memory: a killed
process loses the requests in flight, whose leases expire (or are recovered at once on the next
start). What each request passes through is built by :mod:`harvestman.crawl.wiring`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import traceback
from collections.abc import Callable, Sequence

from harvestman.config import Settings
from harvestman.coord import Coordinator, LocalCoordinator, WorkerStatus
from harvestman.crawl.fetching import HopCheck, PageFetcher
from harvestman.crawl.frontier import Frontier
from harvestman.crawl.handler import RequestHandler
from harvestman.crawl.hosts import HostSlots
from harvestman.crawl.liveness import Liveness, worker_identity
from harvestman.crawl.run import CrawlRun, CrawlStore
from harvestman.crawl.wiring import Wiring
from harvestman.crawl.writer import PagesCallback
from harvestman.errors import StoreError, UrlError
from harvestman.extract.plugins import ParserRegistry
from harvestman.records import CrawlCounts, CrawlRequest, NewUrl, Outcome
from harvestman.render import Renderer
from harvestman.resilience import CircuitBreakers, StallWatchdog
from harvestman.stats import Stats

log = logging.getLogger(__name__)


class Crawler:
    """Crawls one namespace of a store from its seeds until the frontier is empty.

    ``on_pages`` is called (on the event loop) with every batch of outcomes once it is stored.
    A worker (``worker_mode``) takes work from the store that others add; it stops when told
    to, or, with ``exit_when_done``, when no row of the crawl is pending or in progress
    anywhere. ``coordinator`` may be replaced until :meth:`run`.
    """

    def __init__(
        self,
        settings: Settings,
        store: CrawlStore,
        seeds: Sequence[str] = (),
        *,
        on_pages: PagesCallback | None = None,
        coordinator: Coordinator | None = None,
        worker_mode: bool = False,
        exit_when_done: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.coordinator: Coordinator = coordinator or LocalCoordinator()
        self.worker_mode = worker_mode
        self.exit_when_done = exit_when_done
        self.clock = clock
        self.stats = Stats()
        self._run = CrawlRun(store, self.stats, clock)
        self._tasks: set[asyncio.Task[None]] = set()
        # Settings go to the wiring, their one reader; the crawler takes what it built.
        self.wiring = Wiring(settings, self._run, on_pages=on_pages, tasks=self._tasks)
        self.crawl_name = self.wiring.crawl_name
        self.worker_id = worker_identity()
        self.seeds: list[str] = []
        self.rejected_seeds: list[tuple[str, str]] = []
        for seed in seeds:
            try:
                self.seeds.append(self.wiring.normalizer.normalize(seed))
            except UrlError as exc:
                self.rejected_seeds.append((seed, exc.reason))
        self._dispatcher: asyncio.Task[None] | None = None
        self._current_host: str | None = None
        self._started_at = 0.0
        self._running = asyncio.Event()  # cleared while the watchdog waits for the network
        self._running.set()
        self._watchdog: StallWatchdog | None = None
        self.stopped_early = False

    # -- public -------------------------------------------------------------------------------

    @property
    def crawl_id(self) -> int:
        return self._run.crawl_id

    @property
    def parsers(self) -> ParserRegistry | None:
        """The site parsers loaded (None: none, or parsers are off)."""
        return self.wiring.parsers.registry if self.wiring.parsers is not None else None

    @property
    def breakers(self) -> CircuitBreakers | None:
        return self.wiring.breaker.breakers if self.wiring.breaker is not None else None

    @property
    def renderer(self) -> Renderer | None:
        return self.wiring.render.renderer if self.wiring.render is not None else None

    def stop(self) -> None:
        """Stop soon and cleanly: no new requests; in-flight ones are abandoned and released."""
        self.stopped_early = True
        if self._dispatcher is not None:
            self._dispatcher.cancel()

    def status(self) -> WorkerStatus:
        return WorkerStatus(
            worker_id=self.worker_id,
            hostname=socket.gethostname(),
            pid=os.getpid(),
            crawl=self.crawl_name,
            started_at=self._started_at,
            heartbeat_at=self.clock(),
            pages=self.stats["fetch/pages"],
            rate=round(self.stats.rate("fetch/pages"), 2),
            current_host=self._current_host,
            health=self._watchdog.status.state.value if self._watchdog else "ok",
        )

    async def run(self) -> CrawlCounts:
        """Crawl until nothing is left (or ``max_pages``/``stop``); return the store's counts."""
        store, wiring, run = self.store, self.wiring, self._run
        now = self.clock()
        self._started_at = now
        run.crawl_id = await store.crawls.ensure_crawl(self.crawl_name, self.seeds)
        if wiring.archive_location is not None:  # so an export finds the bodies
            await store.crawls.set_archive_location(run.crawl_id, wiring.archive_location)
        await self._load_scope()
        liveness = wiring.liveness(self.worker_id, self.status)
        await liveness.recover(now)
        await liveness.register(now)
        rows = [wiring.discovery.seed_row(seed) for seed in self.seeds]
        await store.frontier.add_urls(run.crawl_id, rows, now)
        # What a 304 cannot reveal again (its links) comes due by its own visited TTL.
        expired = await store.frontier.make_expired_due(
            run.crawl_id, now, wiring.discovery.max_depth
        )
        if expired:
            log.info("%d stored URLs are due again (visited TTL)", expired)
        if wiring.budget is not None:
            wiring.budget.fetched_before = (await store.crawls.counts(run.crawl_id)).fetched
        run.frontier = wiring.frontier(self.worker_id)
        wiring.writer.coordinator = self.coordinator
        cookie_jar = await wiring.session.load()
        workers = wiring.page_workers()
        with contextlib.ExitStack() as keep:
            handler = wiring.handler(wiring.exchange_steps(keep), wiring.images(keep), workers)
            async with wiring.fetcher(cookie_jar) as fetcher, workers or contextlib.nullcontext():
                pages = wiring.page_fetcher(fetcher)
                run.robots = wiring.robots(pages, self.coordinator)
                check_hop = wiring.redirect_check(run.robots)
                await self._crawl(liveness, handler, pages, check_hop)
        return await store.crawls.counts(run.crawl_id)

    # -- the run ------------------------------------------------------------------------------

    async def _crawl(
        self, liveness: Liveness, handler: RequestHandler, fetcher: PageFetcher, check_hop: HopCheck
    ) -> None:
        wiring, frontier = self.wiring, self._run.frontier
        writer = wiring.writer
        hosts = wiring.host_slots(frontier, self.coordinator)
        await wiring.controls.refresh(frontier)  # a paused host is not leased at the start
        await frontier.start()
        if self.worker_mode:
            # Seeds added (POST /api/frontier/seed) between reading the scope and the pending
            # hosts are pending now: without them in scope, their links would be dropped.
            await self._load_scope()
        watchdog = self._watchdog = liveness.watchdog(
            lambda: not frontier.is_finished(), self._running.clear, self._running.set
        )
        writer.touch = watchdog.touch
        flusher = asyncio.create_task(writer.loop(), name="crawl-flush")
        heartbeat = asyncio.create_task(liveness.loop(self.coordinator), name="crawl-heartbeat")
        controls = asyncio.create_task(wiring.controls.loop(frontier), name="crawl-controls")
        watching = asyncio.create_task(watchdog.run(), name="crawl-watchdog")
        dispatcher = self._dispatcher = asyncio.create_task(
            self._dispatch(frontier, handler, fetcher, check_hop, hosts), name="crawl-dispatch"
        )
        if self.stopped_early:  # stop() came before there was a dispatcher to cancel
            dispatcher.cancel()
        try:
            await asyncio.wait({dispatcher, flusher, watching}, return_when="FIRST_COMPLETED")
            if flusher.done() or watching.done():  # the store failed for good: stop all
                dispatcher.cancel()
                self.stopped_early = True
            if watching.done():
                for task in self._tasks:
                    task.cancel()
                watching.result()  # raises StoreUnavailable
            if not dispatcher.cancelled() and dispatcher.done():
                dispatcher.result()  # re-raise a dispatcher failure
            if self.stopped_early or dispatcher.cancelled():
                for task in self._tasks:
                    task.cancel()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
        finally:
            dispatcher.cancel()
            heartbeat.cancel()
            controls.cancel()
            watching.cancel()
            writer.close()
            try:
                await flusher
            finally:
                await frontier.close()
                await wiring.session.save()
                await liveness.leave(self.coordinator)
                if wiring.render is not None:
                    await wiring.render.close()

    async def _dispatch(
        self,
        frontier: Frontier,
        handler: RequestHandler,
        fetcher: PageFetcher,
        check_hop: HopCheck,
        hosts: HostSlots,
    ) -> None:
        writer, budget = self.wiring.writer, self.wiring.budget
        slots = asyncio.Semaphore(self.wiring.concurrency)
        # Fetched-but-unwritten outcomes are lost (and fetched again) if the process dies:
        # keep at most two batches of them.
        backlog = 2 * writer.batch_size
        while True:
            if budget is not None and budget.reached(frontier.in_flight):
                if not frontier.in_flight:
                    log.info("reached max pages (%d)", budget.max_pages)
                    return
                # Requests in flight may yet end as retries or robots denials, not fetches.
                writer.flushed.clear()
                await writer.flushed.wait()
                continue
            await self._running.wait()  # the watchdog pauses us while the network is down
            while writer.backlog > backlog:  # the store is behind: let it catch up
                await writer.wait_flushed()
            await slots.acquire()
            request = await frontier.next()
            if request is None:
                slots.release()
                if self.worker_mode and not await self._others_done():
                    await asyncio.sleep(self.wiring.refresh_interval)
                    await self._refresh()
                    continue
                return
            if not await hosts.acquire(request):  # another worker has the host
                slots.release()
                continue
            self._current_host = request.host
            task = asyncio.create_task(
                self._process(request, slots, handler, fetcher, check_hop, hosts)
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _process(
        self,
        request: CrawlRequest,
        slots: asyncio.Semaphore,
        handler: RequestHandler,
        fetcher: PageFetcher,
        check_hop: HopCheck,
        hosts: HostSlots,
    ) -> None:
        result: tuple[Outcome, list[NewUrl]] | None
        try:
            result = await handler.handle(request, fetcher, check_hop, hosts)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug must not stop the crawl; it is logged and recorded
            log.exception("internal error while crawling %s", request.url)
            failed = Outcome.failed(
                request,
                exc,
                self.clock() + self.wiring.outcomes.visited_ttl,
                error=f"{type(exc).__name__}: {exc}",
            )
            failed.stack_trace = traceback.format_exc()
            result = (failed, [])
        finally:
            slots.release()
        if result is not None:
            self.wiring.writer.queue(*result)

    # -- other workers ------------------------------------------------------------------------

    async def _load_scope(self) -> None:
        seeds = await self.store.crawls.crawl_seeds(self._run.crawl_id)
        self.wiring.discovery.scope = self.wiring.scope(seeds)
        await self.wiring.admit_origins(seeds)

    async def _refresh(self) -> None:
        """Learn the work other workers (or `harvestman seed`) added, and the crawl's scope."""
        try:
            for host, due in (await self.store.frontier.pending_hosts(self._run.crawl_id)).items():
                self._run.frontier.add_work(host, due)
            await self._load_scope()
        except StoreError as exc:
            log.warning("could not refresh the frontier from the store: %s", exc)

    async def _others_done(self) -> bool:
        """True when this worker may exit: asked to, and nothing is pending or leased anywhere."""
        if not self.exit_when_done:
            return False
        try:
            by_status = (await self.store.crawls.counts(self._run.crawl_id)).by_status
        except StoreError:
            return False
        return not by_status.get("pending") and not by_status.get("in_progress")
