"""The crawl loop: frontier -> robots -> fetch -> parse -> ingest -> store, concurrently.

One dispatcher takes ready requests from the frontier (which owns politeness) and starts a task
per request, at most ``concurrency`` at a time. Each task ends in an ``Outcome``; outcomes and the
URLs their pages revealed are written to the store in batches by the flusher, which then tells
the frontier about new work. Nothing the crawl knows lives only in memory: a killed process
loses the requests in flight, whose leases expire (or are recovered at once on the next start).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import functools
import logging
import os
import socket
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from harvestman.archive import RawArchive, WarcWriter
from harvestman.archive.location import archive_location
from harvestman.archive.raw import LocalBlobs, S3Blobs
from harvestman.config import Settings
from harvestman.cookies import dump_cookies, load_cookies
from harvestman.coord import Coordinator, LocalCoordinator, WorkerStatus
from harvestman.discovery.archives import ArchiveScheduler, archive_candidates
from harvestman.discovery.listings import feed_row, read_listing, sitemap_rows
from harvestman.discovery.pagination import PaginationPredictor
from harvestman.errors import (
    FetchError,
    HttpStatusError,
    NetworkError,
    RedirectRefused,
    StoreError,
    UrlError,
)
from harvestman.extract.plugins import ParserRegistry
from harvestman.extract.products import Product, scan_products
from harvestman.fetch import Fetcher, FetchResult, RetryPolicy, parse_retry_after
from harvestman.frontier import Frontier, priority_for
from harvestman.guard import NetworkGuard
from harvestman.parse import Page, parse_html
from harvestman.proxies import DomainProxyLimiter, ProxyHealth, ProxyPool, redact_proxy_url
from harvestman.records import CrawlCounts, CrawlRequest, NewUrl, Outcome, PageRecord, UrlStatus
from harvestman.render import Renderer, RenderError, renderer_unavailable
from harvestman.resilience import (
    BreakerRecord,
    BreakerState,
    CircuitBreakers,
    StallWatchdog,
    is_breaker_failure,
    network_check,
)
from harvestman.robots_cache import RobotsCache, robots_root
from harvestman.simhash import NearDuplicateIndex, sample_text, simhash64, to_signed64
from harvestman.stats import Stats, StatsHistory
from harvestman.store import Store
from harvestman.urls import Scope, UrlNormalizer, host_key, url_hash
from harvestman.validate import Validator, Verdict, VerdictStatus

if TYPE_CHECKING:
    from harvestman.extract.maintext import MainTextExtractor

log = logging.getLogger(__name__)

PagesCallback = Callable[[Sequence[Outcome]], None]

_FLUSH_RETRIES = 5


class Engine:
    """Crawls one namespace of a store from its seeds until the frontier is empty.

    ``on_pages`` is called (on the event loop) with every batch of outcomes once it is stored.
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
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
        # A worker takes work from the store that others add; it stops when told to, or, with
        # exit_when_done, when no row of the crawl is pending or in progress anywhere.
        self.worker_mode = worker_mode
        self.exit_when_done = exit_when_done
        self.on_pages = on_pages
        self.clock = clock
        self.stats = Stats()
        # Per-minute counters for the store's stats history (None: not kept).
        self.history = (
            StatsHistory(settings.stats_history_interval) if settings.stats_history else None
        )
        # Settings are read once, here; the hot path sees plain attributes.
        self.crawl_name = settings.crawl_name
        self.max_pages = settings.crawl_max_pages
        self.max_depth = settings.crawl_max_depth
        self.concurrency = settings.crawl_concurrency
        self.max_links = settings.crawl_max_links_per_page
        self.visited_ttl = settings.crawl_visited_ttl
        self.seen_cache_size = settings.crawl_seen_cache_size
        self.batch_size = settings.store_batch_size
        self.flush_interval = settings.store_flush_interval
        self.lease_seconds = settings.frontier_lease_seconds
        self.user_agent = settings.fetch_user_agent
        self.per_host_concurrency = settings.frontier_per_host_concurrency
        self.gate_hold = settings.fetch_timeout + 10.0
        self.heartbeat_interval = settings.worker_heartbeat_interval
        self.heartbeat_timeout = settings.worker_heartbeat_timeout
        self.sweep_interval = settings.frontier_sweep_interval
        self.refresh_interval = settings.frontier_refresh_interval
        self.settings = settings
        # Optional components are built only when enabled (None otherwise).
        self.discover_sitemaps = settings.discovery_sitemaps
        self.discover_feeds = settings.discovery_feeds
        self.feed_poll_interval = settings.feed_poll_interval
        self.pagination = (
            PaginationPredictor(max_page=settings.pagination_max_page)
            if settings.discovery_pagination
            else None
        )
        self.archives = (
            ArchiveScheduler(settings.archives_min_interval, settings.archives_low_water)
            if settings.discovery_archives
            else None
        )
        self._pagination_loaded: set[str] = set()
        self._breaker_changes: dict[str, BreakerState] = {}
        self._breakers_adopted: set[str] = set()
        self._host_urls: Counter[str] = Counter()  # URLs found per host (archive discovery)
        self.breakers = (
            CircuitBreakers(
                settings.breaker_failure_threshold,
                settings.breaker_open_seconds,
                settings.breaker_success_threshold,
                clock=clock,
                on_transition=self._breaker_changed,
            )
            if settings.breaker_enabled
            else None
        )
        self.validator = (
            Validator(min_bytes=settings.validate_min_bytes) if settings.validate_pages else None
        )
        self.hard_cooldown = settings.validate_hard_cooldown
        # One guard for every fetch of the crawl; the seeds' origins are admitted as they load.
        self.guard = NetworkGuard(settings.network_allow)
        self.renderer = self._make_renderer(settings)
        self.extract_products = settings.extract_products
        self.store_text = settings.store_text
        # Site parsers (settings paths and installed entry points): a crawl that loads none has
        # no registry and pays nothing per page. A plugin that fails to load is logged, skipped.
        registry = ParserRegistry.load(settings.parsers) if settings.parsers_enabled else None
        if registry is not None and registry.failures:
            self.stats.inc("parsers/load_failed", len(registry.failures))
        self.parsers = registry if registry else None
        self.main_text = _main_text_extractor(clock) if settings.extract_main_text else None
        self.warc: WarcWriter | None = None
        self.archive: RawArchive | None = None
        self.near_duplicate_distance = settings.near_duplicate_distance
        self.near_duplicates: dict[str, NearDuplicateIndex] | None = (
            {} if settings.near_duplicates else None
        )
        self.proxies = (
            ProxyPool(
                settings.proxy_urls,
                max_consecutive_failures=settings.proxy_max_consecutive_failures,
                probe_after=settings.proxy_probe_after,
                clock=clock,
            )
            if settings.proxy_urls
            else None
        )
        self.proxy_limiter = (
            DomainProxyLimiter(settings.proxy_domain_rate) if self.proxies else None
        )
        self.normalizer = UrlNormalizer(settings.url_tracking_params, settings.url_max_length)
        self.retry = RetryPolicy(settings.fetch_max_retries, settings.fetch_retry_backoff)
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.seeds: list[str] = []
        self.rejected_seeds: list[tuple[str, str]] = []
        for seed in seeds:
            try:
                self.seeds.append(self.normalizer.normalize(seed))
            except UrlError as exc:
                self.rejected_seeds.append((seed, exc.reason))
        self.crawl_id = 0
        self.frontier: Frontier | None = None
        self.scope: Scope | None = None
        self.robots: RobotsCache | None = None
        self.fetcher: Fetcher | None = None
        self._seen: set[str] = set()
        self._outcomes: list[Outcome] = []
        self._new_urls: list[NewUrl] = []
        self._flush_now = asyncio.Event()
        self._flushed = asyncio.Event()
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._dispatcher: asyncio.Task[None] | None = None
        self._fetched_before = 0
        self._final_outcomes = 0
        self._delay_known: set[str] = set()
        self._gate_tokens: dict[int, str] = {}
        self._current_host: str | None = None
        self._started_at = 0.0
        self.cookie_jar: aiohttp.CookieJar | None = None
        self._running = asyncio.Event()  # cleared while the watchdog waits for the network
        self._running.set()
        self.watchdog: StallWatchdog | None = None
        self.stopped_early = False

    # -- public -------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop soon and cleanly: no new requests; in-flight ones are abandoned and released."""
        self.stopped_early = True
        if self._dispatcher is not None:
            self._dispatcher.cancel()

    async def run(self) -> CrawlCounts:
        """Crawl until nothing is left (or ``max_pages``/``stop``); return the store's counts."""
        store = self.store
        now = self.clock()
        self._started_at = now
        self.crawl_id = await store.ensure_crawl(self.crawl_name, self.seeds)
        if self.settings.archive_enabled:  # so an export finds the bodies (archive/location.py)
            await store.set_archive_location(self.crawl_id, archive_location(self.settings))
        await self._load_scope()
        await self._recover(now)
        await store.register_worker(self.worker_id, socket.gethostname(), os.getpid(), now)
        await store.add_urls(self.crawl_id, [self._seed_row(seed) for seed in self.seeds], now)
        self._fetched_before = (await store.counts(self.crawl_id)).fetched
        self.frontier = Frontier(
            store,
            self.crawl_id,
            self.worker_id,
            delay=self.settings.frontier_delay,
            per_host_concurrency=self.settings.frontier_per_host_concurrency,
            lease_seconds=self.lease_seconds,
            lease_batch=self.settings.frontier_lease_batch,
            on_host_dry=self._host_ran_dry if self.archives is not None else None,
            clock=self.clock,
        )
        self.cookie_jar = await self._load_sessions()
        with contextlib.ExitStack() as keep:
            if self.settings.warc_path:
                self.warc = keep.enter_context(
                    WarcWriter(Path(self.settings.warc_path),
                               gzip=self.settings.warc_path.endswith(".gz"), append=True)
                )  # fmt: skip
            if self.settings.archive_enabled:
                self.archive = keep.enter_context(RawArchive(raw_blobs(self.settings)))
            return await self._crawl(store)

    async def _crawl(self, store: Store) -> CrawlCounts:
        async with Fetcher(
            user_agent=self.user_agent,
            user_agents=self.settings.fetch_user_agents or None,
            cookie_jar=self.cookie_jar,
            timeout=self.settings.fetch_timeout,
            max_redirects=self.settings.fetch_max_redirects,
            max_page_size=self.settings.fetch_max_page_size,
            max_connections=self.concurrency,
            normalizer=self.normalizer,
            guard=self.guard,
        ) as fetcher:
            self.fetcher = fetcher
            self.robots = RobotsCache(
                store,
                fetcher,
                user_agent=self.user_agent,
                ttl=self.settings.robots_ttl,
                max_bytes=self.settings.robots_max_bytes,
                retry=self.retry,
                coordinator=self.coordinator,
                clock=self.clock,
                check_hop=self._check_robots_hop,
            )
            await self.frontier.start()
            self.watchdog = self._make_watchdog()
            flusher = asyncio.create_task(self._flush_loop(), name="engine-flush")
            heartbeat = asyncio.create_task(self._heartbeat_loop(), name="engine-heartbeat")
            watchdog = asyncio.create_task(self.watchdog.run(), name="engine-watchdog")
            self._dispatcher = asyncio.create_task(self._dispatch(), name="engine-dispatch")
            try:
                await asyncio.wait(
                    {self._dispatcher, flusher, watchdog}, return_when="FIRST_COMPLETED"
                )
                if flusher.done() or watchdog.done():  # the store failed for good: stop all
                    self._dispatcher.cancel()
                    self.stopped_early = True
                if watchdog.done():
                    for task in self._tasks:
                        task.cancel()
                    watchdog.result()  # raises StoreUnavailable
                if not self._dispatcher.cancelled() and self._dispatcher.done():
                    self._dispatcher.result()  # re-raise a dispatcher failure
                if self.stopped_early or self._dispatcher.cancelled():
                    for task in self._tasks:
                        task.cancel()
                if self._tasks:
                    await asyncio.gather(*self._tasks, return_exceptions=True)
            finally:
                self._dispatcher.cancel()
                heartbeat.cancel()
                watchdog.cancel()
                self._closing = True
                self._flush_now.set()
                try:
                    await flusher
                finally:
                    await self.frontier.close()
                    await self._save_sessions()
                    await self._release_all()
                    if self.renderer is not None:
                        await self.renderer.close()
        return await store.counts(self.crawl_id)

    def _make_renderer(self, settings: Settings) -> Renderer | None:
        """The JavaScript renderer when it is enabled and can run here; else pages that need
        JavaScript are recorded as ``needs_js`` (logged once, so the crawl goes on)."""
        if not (settings.render_enabled and settings.validate_pages):
            return None
        why = renderer_unavailable(settings.render_browser)
        if why is not None:
            log.warning("rendering is enabled but cannot run: %s; pages that need JavaScript "
                        "are recorded as needs_js", why)  # fmt: skip
            return None
        return Renderer(
            browser=settings.render_browser,
            user_agent=self.user_agent,
            concurrency=settings.render_concurrency,
            timeout=settings.render_timeout,
            settle=settings.render_settle,
            guard=self.guard,
            max_bytes=settings.fetch_max_page_size,
        )

    def _make_watchdog(self) -> StallWatchdog:
        settings = self.settings
        url = settings.watchdog_check_url
        return StallWatchdog(
            has_pending_work=lambda: self.frontier is not None and not self.frontier.is_finished(),
            check_store=self.store.check,
            reconnect_store=self.store.reconnect,
            check_network=functools.partial(network_check, url, 10.0),
            pause=self._running.clear,
            resume=self._running.set,
            stall_seconds=settings.watchdog_stall_seconds,
            check_interval=settings.watchdog_check_interval,
            network_retry=settings.watchdog_network_retry,
            clock=self.clock,
        )

    async def _load_sessions(self) -> aiohttp.CookieJar | None:
        """The crawl's cookie jar and the proxies' health, as the store kept them."""
        if self.proxies is not None:
            known = {row["url"]: row for row in await self.store.load_proxies()}
            fields = {f.name for f in dataclasses.fields(ProxyHealth)}
            self.proxies.restore(
                ProxyHealth(**{k: v for k, v in row.items() if k in fields})
                for row in known.values()
            )
        if not self.settings.fetch_cookies:
            return None
        jar = aiohttp.CookieJar(unsafe=True)  # unsafe: keep cookies of IP-address hosts too
        load_cookies(jar, await self.store.load_cookies(self.crawl_id))
        return jar

    def _host_ran_dry(self, host: str) -> None:
        """A host's frontier ran dry: perhaps its archives know more (at most once a day, and
        only once the host showed enough URLs to learn its date paths from)."""
        assert self.archives is not None and self.frontier is not None
        if self._host_urls[host] < self.settings.archives_low_water:
            return
        if not self.archives.due(host, self.clock(), 0):
            return
        self.frontier.begin_discovery()
        task = asyncio.create_task(self._discover_archives(host))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _discover_archives(self, host: str) -> None:
        assert self.frontier is not None
        try:
            await self._find_archives(host)
        except StoreError as exc:
            log.warning("archive discovery for %s failed: %s", host, exc)
        finally:
            self.frontier.end_discovery()

    async def _find_archives(self, host: str) -> None:
        assert self.scope is not None
        now = self.clock()
        _, last_run = await self.store.discovery_state(host)
        if last_run is not None and last_run > now - self.settings.archives_min_interval:
            return  # another run (or worker) did it recently
        seen = await self.store.sample_urls(self.crawl_id, host)
        candidates = archive_candidates(seen[0], seen, datetime.date.today())
        found = self._guessed([url for url in candidates if url not in seen], 1)
        self._new_urls.extend(found)
        self.stats.inc("discovery/archives", len(found))
        await self.store.save_discovery_state(now, archives_run=[host])
        if found:  # written before the frontier may call the crawl finished
            self._flushed.clear()
            self._flush_now.set()
            await self._flushed.wait()

    async def _save_sessions(self) -> None:
        try:
            if self.pagination is not None:
                changed = {
                    host: self.pagination.rules(host) for host in self.pagination.take_changed()
                }
                if changed:
                    await self.store.save_discovery_state(self.clock(), rules=changed)
            if self.cookie_jar is not None:
                await self.store.save_cookies(self.crawl_id, dump_cookies(self.cookie_jar))
            if self.proxies is not None:
                health = [asdict(h) for h in self.proxies.health()]
                await self.store.save_proxies(health, self.clock())
        except StoreError as exc:
            log.warning("could not save cookies and proxy health: %s", exc)

    async def _release_all(self) -> None:
        """Give this worker's leases back and leave (best effort when the store is gone)."""
        try:
            released = await self.store.release(self.worker_id, self.clock())
            await self.store.unregister_workers([self.worker_id])
        except StoreError as exc:
            log.warning("could not release leases (%s): they expire by themselves", exc)
            return
        if released:
            log.info("returned %d unfinished leased URLs to the frontier", released)

    # -- dispatch -----------------------------------------------------------------------------

    async def _dispatch(self) -> None:
        assert self.frontier is not None
        frontier = self.frontier
        slots = asyncio.Semaphore(self.concurrency)
        # Fetched-but-unwritten outcomes are lost (and fetched again) if the process dies:
        # keep at most two batches of them.
        backlog = 2 * self.batch_size
        while True:
            if self.max_pages and self._budget_used() >= self.max_pages:
                if not frontier.in_flight:
                    log.info("reached max pages (%d)", self.max_pages)
                    return
                # Requests in flight may yet end as retries or robots denials, not fetches.
                self._flushed.clear()
                await self._flushed.wait()
                continue
            await self._running.wait()  # the watchdog pauses us while the network is down
            while len(self._outcomes) > backlog:  # the store is behind: let it catch up
                self._flushed.clear()
                self._flush_now.set()
                await self._flushed.wait()
            await slots.acquire()
            request = await frontier.next()
            if request is None:
                slots.release()
                if self.worker_mode and not await self._others_done():
                    await asyncio.sleep(self.refresh_interval)
                    await self._refresh()
                    continue
                return
            if self.coordinator.shared:
                token, wait = await self.coordinator.acquire_host(
                    request.host, self.per_host_concurrency, self.gate_hold
                )
                if token is None:  # another worker has the host: come back when it may be free
                    frontier.requeue(request, not_before=self.clock() + wait)
                    slots.release()
                    continue
                self._gate_tokens[request.id] = token
            self._current_host = request.host
            task = asyncio.create_task(self._process(request, slots))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _budget_used(self) -> int:
        assert self.frontier is not None
        return self._fetched_before + self._final_outcomes + self.frontier.in_flight

    async def _process(self, request: CrawlRequest, slots: asyncio.Semaphore) -> None:
        try:
            result = await self._handle(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug must not stop the crawl; it is logged and recorded
            log.exception("internal error while crawling %s", request.url)
            failed = self._failed(request, f"{type(exc).__name__}: {exc}", type(exc).__name__)
            failed.stack_trace = traceback.format_exc()
            result = (failed, [])
        finally:
            slots.release()
        if result is not None:
            outcome, new_urls = result
            self._queue(outcome, new_urls)

    async def _handle(self, request: CrawlRequest) -> tuple[Outcome, list[NewUrl]] | None:
        """Robots, fetch, parse one request. None: it went back to the frontier's buffer."""
        assert self.frontier is not None and self.robots is not None
        frontier = self.frontier
        host = request.host
        try:
            entry, asked_host = await self.robots.get(host, request.url)
        except BaseException:
            await self._release(request, fetched=False)
            raise
        if host not in self._delay_known:
            self._delay_known.add(host)
            if entry.crawl_delay is not None:
                frontier.set_delay(host, entry.crawl_delay)
        if asked_host:
            self.stats.inc("robots/fetched")
            if self.discover_sitemaps and not entry.unavailable:
                self._queue_sitemaps(request.url, entry.rules.sitemaps)
        if entry.unavailable and not entry.exhausted:
            # Everything is disallowed until robots.txt answers; wait for the retry.
            await self._release(
                request, fetched=asked_host, not_before=entry.expires_at, requeue=True
            )
            return None
        if asked_host and frontier.delay_of(host) > 0:
            # robots.txt used this host's turn; the page waits for the next one (spaced by the
            # delay robots.txt itself may just have set).
            await self._release(request, requeue=True)
            return None
        if entry.unavailable:
            await self._release(request, fetched=asked_host)
            self.stats.inc("robots/unavailable")
            return self._blocked(
                request, "RobotsUnavailable", f"robots.txt unavailable: {entry.error}"
            ), []
        if not entry.rules.is_allowed(request.url, self.user_agent):
            await self._release(request, fetched=asked_host)
            self.stats.inc("robots/denied")
            return self._blocked(request, "RobotsDenied", "disallowed by robots.txt"), []
        if self.pagination is not None and host not in self._pagination_loaded:
            self._pagination_loaded.add(host)
            rules, _ = await self.store.discovery_state(host)
            if rules:
                self.pagination.load(host, rules)
        if self.breakers is not None and not self.breakers.allow(host):
            # The host keeps failing: its URLs wait until the breaker lets a probe through.
            retry_at = self.breakers.retry_at(host) or self.clock() + 1.0
            await self._release(request, fetched=False, not_before=retry_at, requeue=True)
            self.stats.inc("breaker/deferred")
            return None
        return await self._fetch(request)

    async def _fetch(self, request: CrawlRequest) -> tuple[Outcome, list[NewUrl]]:
        assert self.frontier is not None and self.fetcher is not None
        headers = {}
        if request.etag:
            headers["If-None-Match"] = request.etag
        if request.last_modified:
            headers["If-Modified-Since"] = request.last_modified
        started = self.clock()
        try:
            result = await self._fetch_through_proxies(request, headers)
        except FetchError as exc:
            await self._release(request)
            self.stats.inc(f"fetch/error/{type(exc).__name__}")
            self._record_health(request, None, type(exc).__name__)
            return self._fetch_failure(request, exc, started), []
        except UrlError as exc:  # a stored URL the HTTP client cannot request
            await self._release(request, fetched=False)
            return self._failed(request, str(exc), "UrlError"), []
        except BaseException:
            await self._release(request)
            raise
        retry_after = None
        if result.status in (429, 503):
            retry_after = parse_retry_after(result.headers.get("Retry-After"))
        not_before = self.clock() + retry_after if retry_after else 0.0
        if self.renderer is None or result.status >= 400:
            await self._release(request, not_before=not_before)
            return await self._fetched_response(request, result, headers, started, retry_after)
        # A page may need rendering: the host's turn lasts until the browser is done with it.
        try:
            return await self._fetched_response(request, result, headers, started, retry_after)
        finally:
            await self._release(request, not_before=not_before)

    async def _fetched_response(
        self,
        request: CrawlRequest,
        result: FetchResult,
        headers: dict[str, str],
        started: float,
        retry_after: float | None,
    ) -> tuple[Outcome, list[NewUrl]]:
        self._record_health(request, result.status, None)
        archive_path = await self._keep(request, result, headers)
        self.stats.inc("fetch/responses")
        self.stats.inc(f"fetch/status/{result.status}")
        self.stats.inc("fetch/bytes", len(result.body))
        if result.status >= 400:
            exc = HttpStatusError(result.status, request.url, retry_after)
            return self._fetch_failure(request, exc, started, result), []
        outcome, new_urls = self._fetched(request, result, started)
        if self.renderer is not None and _needs_render(outcome):
            outcome, new_urls = await self._render(request, result, started, outcome, new_urls)
        if outcome.page is not None and archive_path is not None:
            outcome.page.archive_path = archive_path
        if self.main_text is not None and _has_content(outcome):
            await self._extract_main_text(outcome, result)
        return outcome, new_urls

    async def _render(
        self,
        request: CrawlRequest,
        result: FetchResult,
        started: float,
        outcome: Outcome,
        new_urls: list[NewUrl],
    ) -> tuple[Outcome, list[NewUrl]]:
        """The page again, as the browser's DOM after its scripts ran; on failure the
        ``needs_js`` record stands, with the reason the render failed."""
        assert self.renderer is not None and outcome.page is not None
        try:
            rendered = await self.renderer.render(result.final_url)
        except RenderError as exc:
            self.stats.inc("render/failed")
            log.warning("%s", exc)
            outcome.page.error = f"{outcome.page.error}; {exc}"[:2000]
            return outcome, new_urls
        self.stats.inc("render/pages")
        again = dataclasses.replace(result, body=rendered.html, charset="utf-8")
        outcome, new_urls = self._fetched(request, again, started)
        if _needs_render(outcome):
            self.stats.inc("render/still_needs_js")
        return outcome, new_urls

    async def _extract_main_text(self, outcome: Outcome, result: FetchResult) -> None:
        """The article text of a stored page, off the event loop (milliseconds of CPU)."""
        assert self.main_text is not None and outcome.page is not None
        found = await asyncio.to_thread(
            self.main_text.extract, result.body, result.final_url, charset=result.charset
        )
        if found.error is not None:
            self.stats.inc("extract/main_text/errors")
            log.warning("main text of %s: %s", result.final_url, found.error)
        elif found.text:
            outcome.page.main_text = found.text
            self.stats.inc("extract/main_text/pages")

    async def _keep(
        self, request: CrawlRequest, result: FetchResult, headers: dict[str, str]
    ) -> str | None:
        """Write the exchange to the WARC and the body to the raw archive, off the event loop.

        Returns the archive path of the body (HTML 2xx only), if it was archived.
        """
        if self.warc is not None:
            sent = {"User-Agent": self.user_agent, "Accept": "text/html", **headers}
            await asyncio.to_thread(
                self.warc.write_exchange, result.final_url, sent, result.status, None,
                result.headers, result.body, self.clock(), truncated=result.truncated,
            )  # fmt: skip
            self.stats.inc("warc/records")
        if self.archive is None or not result.is_html or not 200 <= result.status < 300:
            return None
        try:
            path = await asyncio.to_thread(self.archive.put, result.body, result.content_type)
        except StoreError as exc:  # the page is still recorded; its body is not kept
            self.stats.inc("archive/errors")
            log.warning("could not archive %s: %s", request.url, exc)
            return None
        self.stats.inc("archive/bodies")
        return path

    async def _fetch_through_proxies(
        self, request: CrawlRequest, headers: dict[str, str]
    ) -> FetchResult:
        """Fetch directly, or through the proxies: a proxy that fails is recorded and the
        request goes through the next one (each proxy once)."""
        assert self.fetcher is not None
        max_bytes = self.settings.sitemap_max_bytes if request.kind != "page" else None
        if self.proxies is None:
            return await self.fetcher.fetch(
                request.url, headers=headers, check_hop=self._check_hop, max_bytes=max_bytes
            )
        assert self.proxy_limiter is not None
        tried: list[str] = []
        while True:
            proxy = self.proxies.next(exclude=tried)
            if proxy is None:
                raise NetworkError("no proxy available (all are failing)", request.url)
            tried.append(proxy)
            await self.proxy_limiter.acquire(request.host, proxy)
            started = self.clock()
            try:
                result = await self.fetcher.fetch(
                    request.url, headers=headers, check_hop=self._check_hop,
                    max_bytes=max_bytes, proxy=proxy,
                )  # fmt: skip
            except NetworkError:
                self.proxies.record(proxy, success=False, elapsed=self.clock() - started)
                self.stats.inc("proxy/failure")
                if len(tried) >= len(self.proxies):
                    raise
                continue
            self.proxies.record(proxy, success=True, elapsed=self.clock() - started)
            self.stats.inc("proxy/success")
            return result

    def _record_health(self, request: CrawlRequest, status: int | None, error: str | None) -> None:
        if self.breakers is not None:
            failed = is_breaker_failure(status, error)
            self.breakers.record(request.host, success=not failed)
        if self.pagination is not None and (error is not None or (status or 0) >= 400):
            self.pagination.record_result(request.url, status, 0)

    def _breaker_changed(self, host: str, old: BreakerState, new: BreakerState) -> None:
        if host not in self._breakers_adopted:  # what others told us is not news to share
            self._breaker_changes[host] = new
        self.stats.inc(f"breaker/{new.value}")
        log.warning("circuit breaker for %s: %s -> %s", host, old.value, new.value)

    async def _sync_breakers(self) -> None:
        """Share breaker changes with the other workers and adopt the breakers they opened
        (when workers share a Redis; at most one heartbeat late)."""
        if self.breakers is None or not self.coordinator.shared:
            return
        changes, self._breaker_changes = self._breaker_changes, {}
        records = {host: record.to_dict() for host, record in self.breakers.store.items()}
        await self.coordinator.put_breakers(
            {
                host: None if state is BreakerState.CLOSED else records.get(host)
                for host, state in changes.items()
            }
        )
        fresh_after = self.clock() - self.settings.breaker_open_seconds
        for host, record in (await self.coordinator.get_breakers()).items():
            if host in changes or self.breakers.state(host) is not BreakerState.CLOSED:
                continue
            if record.get("state") != "open" or (record.get("opened_at") or 0) < fresh_after:
                continue  # only a breaker opened within its open period is news
            self._breakers_adopted.add(host)
            self.breakers.store.set(host, BreakerRecord.from_dict(record))
            self.stats.inc("breaker/adopted")

    def _queue_sitemaps(self, url: str, declared: Sequence[str]) -> None:
        """Queue a host's sitemaps (robots.txt's and /sitemap.xml) when robots.txt is read."""
        assert self.scope is not None
        if self.max_depth == 0:  # only the seeds: what a sitemap lists is out of reach
            return
        check = self.scope.check
        for row in sitemap_rows(declared, robots_root(url)):
            if row.url_hash not in self._seen and check(row.url) is None:
                self._seen.add(row.url_hash)
                self._new_urls.append(row)

    async def _release(
        self,
        request: CrawlRequest,
        *,
        fetched: bool = True,
        not_before: float = 0.0,
        requeue: bool = False,
    ) -> None:
        """Free the request's host slot, here and (when shared) for every worker."""
        assert self.frontier is not None
        frontier = self.frontier
        if requeue:
            frontier.requeue(request, not_before=not_before)
        else:
            frontier.release(request, fetched=fetched, not_before=not_before)
        token = self._gate_tokens.pop(request.id, None)
        if token is not None:
            delay = frontier.delay_of(request.host) if fetched else 0.0
            delay = max(delay, not_before - self.clock())
            await self.coordinator.release_host(request.host, token, delay)

    async def _check_hop(self, url: str) -> None:
        """A redirect hop must stay in scope and be allowed by its host's robots.txt."""
        assert self.scope is not None and self.robots is not None
        reason = self.scope.check(url)
        if reason is not None:
            raise RedirectRefused(f"redirect to {url} refused: {reason}", url, reason)
        hop_host = host_key(url)
        entry = self.robots.cached(hop_host) or (await self.robots.get(hop_host, url))[0]
        if entry.unavailable or not entry.rules.is_allowed(url, self.user_agent):
            raise RedirectRefused(f"redirect to {url} refused: robots.txt", url, "robots")

    async def _check_robots_hop(self, url: str) -> None:
        """A robots.txt redirect hop must stay in scope (robots.txt of its own is not asked)."""
        assert self.scope is not None
        reason = self.scope.check(url)
        if reason is not None:
            raise RedirectRefused(f"robots.txt redirect to {url} refused: {reason}", url, reason)

    # -- outcomes -----------------------------------------------------------------------------

    def _fetched(
        self, request: CrawlRequest, result: FetchResult, started: float
    ) -> tuple[Outcome, list[NewUrl]]:
        now = self.clock()
        if result.status == 304:  # unchanged since the stored ETag / Last-Modified
            self.stats.inc("fetch/not_modified")
            return self._outcome(
                request, UrlStatus.COMPLETED, now + self.visited_ttl, status_code=304
            ), []
        record = self._page_record(request, result, started)
        if request.kind != "page":
            return self._fetched_listing(request, result, record)
        new_urls: list[NewUrl] = []
        products: list[Product] | None = None
        extracted: dict[str, list[Any] | None] = {}  # site parsers' records, runs, failures
        if result.is_html and result.body:
            page = parse_html(
                result.body,
                result.final_url,
                charset=result.charset,
                normalizer=self.normalizer,
                max_links=self.max_links,
            )
            self.stats.inc("parse/pages")
            record.charset = page.encoding
            record.content_hash = page.content_hash
            record.title = page.title
            record.description = page.description
            record.canonical = page.canonical
            record.lang = page.lang
            record.links_count = len(page.links)
            if self.validator is not None:
                verdict = self.validator.validate(
                    result.status, result.headers, result.body, page.text
                )
                record.validation_status = verdict.status.value
                if verdict.status is not VerdictStatus.OK:
                    return self._rejected(request, result, record, verdict, page)
            if self.store_text:
                record.text = page.text[: self.settings.store_text_max_chars]
            duplicate_of = self._near_duplicate(request, page, record)
            if self.extract_products and 200 <= result.status < 300:
                scan = scan_products(result.body, result.final_url, charset=result.charset)
                if scan.products:
                    products = scan.products
                    self.stats.inc("extract/products/pages")
                    self.stats.inc("extract/products/found", len(products))
            if self.parsers is not None and 200 <= result.status < 300:
                parsed = self.parsers.parse(result.body, result.final_url, page,
                                            charset=result.charset)  # fmt: skip
                if parsed.runs:
                    extracted.update(records=parsed.records, parser_runs=parsed.runs,
                                     parse_failures=parsed.failures or None)  # fmt: skip
                    self.stats.inc("extract/parsers/pages")
                    self.stats.inc("extract/parsers/records", len(parsed.records))
                    self.stats.inc("extract/parsers/failures", len(parsed.failures))
            if duplicate_of is None:
                new_urls = self._discover(request, page)
            if self.pagination is not None:
                guesses = self.pagination.observe(request.url, page.links)
                guesses += self.pagination.record_result(request.url, result.status, len(new_urls))
                new_urls += self._guessed(guesses, request.depth)
        outcome = self._outcome(
            request,
            UrlStatus.COMPLETED,
            now + self.visited_ttl,
            status_code=result.status,
            content_hash=record.content_hash,
            etag=result.headers.get("ETag"),
            last_modified=result.headers.get("Last-Modified"),
            page=record,
            products=products,
            **extracted,
        )
        return outcome, new_urls

    def _fetched_listing(
        self, request: CrawlRequest, result: FetchResult, record: PageRecord
    ) -> tuple[Outcome, list[NewUrl]]:
        """A sitemap or feed: its entries join the frontier; a broken one is recorded."""
        assert self.scope is not None
        check = self.scope.check
        listing = read_listing(
            result.body,
            result.final_url,
            depth=request.depth,
            max_depth=self.settings.sitemap_max_depth,
            max_urls=self.settings.sitemap_max_urls,
            max_bytes=self.settings.sitemap_max_bytes,
            in_scope=lambda url: check(url) is None,
        )
        self.stats.inc(f"{request.kind}/fetched")
        self.stats.inc(f"{request.kind}/urls", len(listing.urls))
        now = self.clock()
        again = self.feed_poll_interval if request.kind == "feed" else self.visited_ttl
        if listing.errors:
            record.error = "; ".join(listing.errors[:5])[:2000]
        if listing.invalid:
            self.stats.inc(f"{request.kind}/invalid")
            record.error_class = "ListingInvalid"
            outcome = self._outcome(
                request, UrlStatus.FAILED, now + again, status_code=result.status,
                error_class="ListingInvalid", error=record.error, page=record,
            )  # fmt: skip
            return outcome, []
        new_urls = [
            row
            for row in listing.urls
            if (row.kind != "page" or row.depth <= self.max_depth)
            and (row.url_hash not in self._seen or row.lastmod)
        ]
        self._seen.update(row.url_hash for row in new_urls)
        record.links_count = len(listing.urls)
        outcome = self._outcome(
            request, UrlStatus.COMPLETED, now + again, status_code=result.status,
            etag=result.headers.get("ETag"), last_modified=result.headers.get("Last-Modified"),
            page=record,
        )  # fmt: skip
        return outcome, new_urls

    def _rejected(
        self,
        request: CrawlRequest,
        result: FetchResult,
        record: PageRecord,
        verdict: Verdict,
        page: Page,
    ) -> tuple[Outcome, list[NewUrl]]:
        """A garbage page: recorded with its reason, not stored as content.

        Hard (the host refuses us): the host cools down and the URL is tried again after it.
        Soft: a page that needs JavaScript is recorded as ``needs_js`` (no renderer here) and
        its links are not followed; a page that is merely small or textless still leads on.
        """
        now = self.clock()
        reason = "needs_js" if verdict.needs_render else verdict.reason or verdict.status.value
        record.rejection_reason = reason
        record.title = record.description = record.canonical = record.content_hash = None
        record.error_class = "ContentRejected"
        self.stats.inc(f"validate/{verdict.status.value}/{reason}")
        fields = {"status_code": result.status, "error_class": "ContentRejected", "page": record}
        message = f"{verdict.status.value}: {reason}" + (
            f" ({verdict.detail})" if verdict.detail else ""
        )
        record.error = message
        if verdict.status is VerdictStatus.HARD:
            assert self.frontier is not None
            self.frontier.hold(request.host, now + self.hard_cooldown)
            if request.attempts < self.retry.max_retries:
                return self._outcome(
                    request, UrlStatus.PENDING, now + self.hard_cooldown,
                    attempts=request.attempts + 1, error=message, **fields,
                ), []  # fmt: skip
            return self._outcome(
                request, UrlStatus.FAILED, now + self.visited_ttl, error=message, **fields
            ), []
        new_urls = [] if verdict.needs_render else self._discover(request, page)
        return self._outcome(
            request, UrlStatus.COMPLETED, now + self.visited_ttl, error=message, **fields
        ), new_urls

    def _near_duplicate(self, request: CrawlRequest, page: Page, record: PageRecord) -> str | None:
        """The url_hash of an earlier page of the host this one (nearly) repeats, if any."""
        if self.near_duplicates is None or not page.text:
            return None
        fingerprint = simhash64(sample_text(page.text))
        record.simhash = to_signed64(fingerprint)
        index = self.near_duplicates.get(request.host)
        if index is None:
            index = self.near_duplicates[request.host] = NearDuplicateIndex(
                max_distance=self.near_duplicate_distance
            )
        original = index.add(request.url_hash, fingerprint)
        if original is not None and original != request.url_hash:
            record.near_duplicate_of = original
            self.stats.inc("content/near_duplicates")
            return original
        return None

    def _guessed(self, urls: list[str], depth: int) -> list[NewUrl]:
        """Speculative URLs (pagination, archives): low priority, same depth, in scope."""
        assert self.scope is not None
        found = []
        for url in urls:
            digest = url_hash(url)
            if digest in self._seen or self.scope.check(url) is not None:
                continue
            self._seen.add(digest)
            found.append(NewUrl(url, digest, host_key(url), depth, 1))
        self.stats.inc("discovery/guessed", len(found))
        return found

    def _fetch_failure(
        self,
        request: CrawlRequest,
        exc: FetchError,
        started: float,
        result: FetchResult | None = None,
    ) -> Outcome:
        now = self.clock()
        error_class = type(exc).__name__
        status_code = result.status if result is not None else None
        if exc.retryable:
            retry_after = exc.retry_after if isinstance(exc, HttpStatusError) else None
            wait = self.retry.delay(request.attempts + 1, retry_after)
            if wait is not None:
                self.stats.inc("fetch/retries")
                return self._outcome(
                    request,
                    UrlStatus.PENDING,
                    now + wait,
                    attempts=request.attempts + 1,
                    status_code=status_code,
                    error_class=error_class,
                    error=f"{exc} (retry {request.attempts + 1} of {self.retry.max_retries})",
                )
        if result is not None:
            record = self._page_record(request, result, started)
        else:
            record = PageRecord(
                url=request.url,
                final_url=exc.url or request.url,
                host=request.host,
                status_code=None,
                content_type=None,
                content_length=None,
                fetched_at=now,
                crawl_duration_ms=int((now - started) * 1000),
            )
        record.error_class, record.error = error_class, str(exc)
        return self._outcome(
            request,
            UrlStatus.FAILED,
            now + self.visited_ttl,
            status_code=status_code,
            error_class=error_class,
            error=str(exc),
            page=record,
        )

    def _page_record(
        self, request: CrawlRequest, result: FetchResult, started: float
    ) -> PageRecord:
        return PageRecord(
            url=request.url,
            final_url=result.final_url,
            host=request.host,
            status_code=result.status,
            content_type=result.content_type or None,
            content_length=len(result.body),
            fetched_at=self.clock(),
            crawl_duration_ms=int(result.elapsed * 1000),
            charset=result.charset,
            redirects=result.redirects,
            proxy=redact_proxy_url(result.proxy) if result.proxy else None,
        )

    def _blocked(self, request: CrawlRequest, error_class: str, error: str) -> Outcome:
        # Blocked rows become eligible again with the visited TTL, when robots.txt may differ.
        return self._final(request, UrlStatus.BLOCKED, error_class, error)

    def _failed(self, request: CrawlRequest, error: str, error_class: str) -> Outcome:
        return self._final(request, UrlStatus.FAILED, error_class, error)

    def _final(
        self, request: CrawlRequest, status: UrlStatus, error_class: str, error: str
    ) -> Outcome:
        next_at = self.clock() + self.visited_ttl
        return self._outcome(request, status, next_at, error_class=error_class, error=error)

    @staticmethod
    def _outcome(
        request: CrawlRequest,
        status: UrlStatus,
        next_crawl_at: float,
        *,
        attempts: int | None = None,
        **fields: object,
    ) -> Outcome:
        return Outcome(
            request=request,
            status=status,
            next_crawl_at=next_crawl_at,
            attempts=request.attempts if attempts is None else attempts,
            **fields,  # type: ignore[arg-type]
        )

    # -- ingestion ----------------------------------------------------------------------------

    def _seed_row(self, url: str) -> NewUrl:
        digest = url_hash(url)
        self._seen.add(digest)
        return NewUrl(url, digest, host_key(url), 0, priority_for(url, 0, is_seed=True))

    def _discover(self, request: CrawlRequest, page: Page) -> list[NewUrl]:
        """The page's links that are new to this process, in scope and within max depth."""
        depth = request.depth + 1
        if depth > self.max_depth or page.nofollow:
            return []
        assert self.scope is not None
        check_scope = self.scope.check
        seen = self._seen
        if len(seen) > self.seen_cache_size:
            seen.clear()  # only a cache: the store's unique index is the truth
        found: list[NewUrl] = []
        for link in page.links:
            digest = url_hash(link)
            if digest in seen:
                continue
            seen.add(digest)
            if check_scope(link) is not None:
                self.stats.inc("frontier/out_of_scope")
                continue
            found.append(NewUrl(link, digest, host_key(link), depth, priority_for(link, depth)))
        if self.discover_feeds:
            for url in page.feeds:
                digest = url_hash(url)
                if digest not in seen and check_scope(url) is None:
                    seen.add(digest)
                    found.append(feed_row(url, depth))
        self.stats.inc("frontier/discovered", len(found))
        return found

    # -- writing ------------------------------------------------------------------------------

    def _queue(self, outcome: Outcome, new_urls: list[NewUrl]) -> None:
        if self.watchdog is not None:
            self.watchdog.touch()
        self._outcomes.append(outcome)
        if new_urls:
            self._new_urls.extend(new_urls)
        if outcome.status is not UrlStatus.PENDING:
            self._final_outcomes += 1
        if outcome.status is UrlStatus.FAILED:
            self.stats.inc("fetch/failed")
        elif outcome.status is UrlStatus.COMPLETED:
            self.stats.inc("fetch/pages")
        if len(self._outcomes) >= self.batch_size:
            self._flush_now.set()

    async def _flush_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.flush_interval):
                    await self._flush_now.wait()
            self._flush_now.clear()
            await self._flush()
            if self._closing and not self._outcomes and not self._new_urls:
                return

    async def _flush(self) -> None:
        outcomes, self._outcomes = self._outcomes, []
        new_urls, self._new_urls = self._new_urls, []
        if outcomes or new_urls:
            namespace = str(self.crawl_id)
            if new_urls and self.coordinator.shared:  # others may know them already
                unseen = await self.coordinator.unseen(namespace, [u.url_hash for u in new_urls])
                new_urls = [u for u, fresh in zip(new_urls, unseen, strict=True) if fresh]
            now = self.clock()
            attempt = 0
            while True:
                try:
                    await self.store.record(self.crawl_id, outcomes, new_urls, now)
                    break
                except StoreError as exc:
                    attempt += 1
                    if self._closing and attempt >= _FLUSH_RETRIES:
                        # Shutting down: give up; the leases expire and the URLs come back.
                        raise
                    wait = min(30.0, 0.5 * 2**attempt)
                    log.warning("store write failed (%s); retrying in %.1f s", exc, wait)
                    await asyncio.sleep(wait)
            if self.history is not None:  # counted once stored, written once a minute
                self.history.add(outcomes, new_urls, now)
            if self.coordinator.shared:  # only once the store has them
                if new_urls:
                    await self.coordinator.mark_seen(namespace, [u.url_hash for u in new_urls])
                await self.coordinator.add_counters(namespace, _counts_of(outcomes, new_urls))
            self._after_flush(outcomes, new_urls, now)
        self._flushed.set()
        if self.history is not None and self.history.is_due(self.clock(), closing=self._closing):
            await self._write_history()

    async def _write_history(self) -> None:
        """One additive upsert of the pending minutes; on a store error they wait for the next."""
        assert self.history is not None
        buckets = self.history.take(self.clock())
        try:
            await self.store.add_stats(self.crawl_id, buckets)
        except StoreError as exc:
            log.warning("stats history write failed (%s); kept for the next one", exc)
            self.history.give_back(buckets)

    def _after_flush(self, outcomes: list[Outcome], new_urls: list[NewUrl], now: float) -> None:
        assert self.frontier is not None
        frontier = self.frontier
        hosts = Counter(row.host for row in new_urls)
        self._host_urls.update(hosts)
        for host in hosts:
            frontier.add_work(host, now)
        for outcome in outcomes:
            if outcome.status is UrlStatus.PENDING:
                frontier.add_work(outcome.request.host, outcome.next_crawl_at)
        frontier.settle(len(outcomes))
        self.stats.inc("store/outcomes", len(outcomes))
        self.stats.inc("store/new_urls", len(new_urls))
        if self.on_pages is not None and outcomes:
            self.on_pages(outcomes)

    # -- other workers ------------------------------------------------------------------------

    async def _load_scope(self) -> None:
        seeds = await self.store.crawl_seeds(self.crawl_id)
        self.scope = Scope(
            seeds,
            self.settings.crawl_allow_domains,
            self.settings.crawl_include,
            self.settings.crawl_exclude,
        )
        # A seed (or proxy) someone gave on purpose admits its own origin, not its whole address.
        for url in (*seeds, *self.settings.proxy_urls):
            await self.guard.admit_url(url)

    async def _refresh(self) -> None:
        """Learn the work other workers (or `harvestman seed`) added, and the crawl's scope."""
        assert self.frontier is not None
        try:
            for host, due in (await self.store.pending_hosts(self.crawl_id)).items():
                self.frontier.add_work(host, due)
            await self._load_scope()
        except StoreError as exc:
            log.warning("could not refresh the frontier from the store: %s", exc)

    async def _others_done(self) -> bool:
        """True when this worker may exit: asked to, and nothing is pending or leased anywhere."""
        if not self.exit_when_done:
            return False
        try:
            by_status = (await self.store.counts(self.crawl_id)).by_status
        except StoreError:
            return False
        return not by_status.get("pending") and not by_status.get("in_progress")

    # -- liveness -----------------------------------------------------------------------------

    async def _recover(self, now: float) -> None:
        """Return leases of dead workers at once; expired leases of anyone too.

        Dead: a heartbeat older than the timeout, or a process on this machine that is gone.
        """
        me = socket.gethostname()
        dead = [
            worker_id
            for worker_id, hostname, pid, beat in await self.store.workers()
            if worker_id != self.worker_id
            and (beat < now - self.heartbeat_timeout or (hostname == me and not _pid_alive(pid)))
        ]
        recovered = await self.store.recover(now, dead)
        await self.store.unregister_workers(dead)
        if recovered:
            log.info("recovered %d URLs leased by stopped workers", recovered)
        self.stats.inc("frontier/recovered", recovered)

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
            health=self.watchdog.status.state.value if self.watchdog else "ok",
        )

    async def _heartbeat_loop(self) -> None:
        """Beat, extend our leases, and sweep: stale leases and dead workers' leases return."""
        interval = min(self.heartbeat_interval, self.lease_seconds / 4)
        next_sweep = self.clock() + self.sweep_interval
        while True:
            await asyncio.sleep(interval)
            now = self.clock()
            status = self.status()
            try:
                known = await self.store.heartbeat(
                    self.worker_id, now, now + self.lease_seconds, asdict(status)
                )
                if not known:
                    # Others took us for dead (a heartbeat came too late) and returned our
                    # leases: what we finish now may be fetched twice, nothing is lost.
                    log.warning("this worker was taken for dead; registering again")
                    self.stats.inc("worker/revived")
                    await self.store.register_worker(
                        self.worker_id, status.hostname, status.pid, now
                    )
                await self.coordinator.beat(status, self.heartbeat_timeout)
                await self._sync_breakers()
                if now >= next_sweep:
                    next_sweep = now + self.sweep_interval
                    await self._recover(now)
                    await self._save_sessions()
            except StoreError as exc:  # the store is away; the flusher waits for it too
                log.warning("heartbeat failed: %s", exc)


def _counts_of(outcomes: Sequence[Outcome], new_urls: Sequence[NewUrl]) -> dict[str, int]:
    """A written batch as crawl counters: outcomes by status, and new URLs."""
    counts = Counter(outcome.status.value for outcome in outcomes)
    counts["new_urls"] = len(new_urls)
    return {name: n for name, n in counts.items() if n}


def _has_content(outcome: Outcome) -> bool:
    """A completed HTML page stored with its content (parsed, and not rejected)."""
    page = outcome.page
    return (
        outcome.status is UrlStatus.COMPLETED
        and page is not None
        and page.content_hash is not None
        and page.error_class is None
    )


def _needs_render(outcome: Outcome) -> bool:
    """A page that validation found drawn by scripts: a browser may turn it into content."""
    return outcome.page is not None and outcome.page.rejection_reason == "needs_js"


def _main_text_extractor(clock: Callable[[], float]) -> MainTextExtractor:
    # Imported here: trafilatura takes 0.7 s to import, paid only by crawls that use it.
    from harvestman.extract.maintext import MainTextExtractor

    return MainTextExtractor(clock=clock)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def raw_blobs(settings: Settings) -> LocalBlobs | S3Blobs:
    """Where raw bodies go: an S3-compatible bucket when one is set, else a local directory."""
    if settings.archive_s3_bucket:
        return S3Blobs(
            settings.archive_s3_bucket,
            endpoint_url=settings.archive_s3_endpoint_url,
            region=settings.archive_s3_region,
            access_key_id=settings.archive_s3_access_key_id,
            secret_access_key=settings.archive_s3_secret_access_key,
            prefix=settings.archive_s3_prefix,
        )
    return LocalBlobs(Path(settings.archive_dir))
