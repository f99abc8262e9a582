"""The one place that reads ``Settings`` for a crawl: it builds the components that are on,
in their order, and hands plain values to everything below it.

The crawl's components form one ordered list (``Wiring.components``); what a component does
is found from what it is (the protocols of :mod:`harvestman.crawl.work`,
:mod:`harvestman.crawl.gates` and :mod:`harvestman.crawl.session`), so a component with several
roles is listed once and takes its place in each role in the list's order::

    component          roles (setting that turns it on)
    robots.txt         gate
    circuit breaker    gate, health observer, shared state (breaker_enabled)
    validate           page step (validate_pages)
    stored text        page step (store_text)
    near-duplicates    page step (near_duplicates)
    products           page step (extract_products)
    image links        page step (crawl_images)
    site parsers       page step; a gate too with a parser in several versions (parsers)
    feeds              page step (discovery_feeds)
    links              page step
    pagination         gate, page step, health observer, session rules (discovery_pagination)
    WARC               exchange step, opened for the run (warc_path)
    render             exchange step (render_enabled)
    raw archive        exchange step, opened for the run (archive_enabled)
    main text          exchange step (extract_main_text)

So the gates run robots.txt -> circuit breaker -> parser rollouts -> pagination rules, the page
steps validate -> ... -> pagination, the exchange steps WARC -> render -> raw archive -> main
text. Image rows (``crawl_images``) are handled by the image step instead of the page steps.

Fetching goes through the plain fetcher, or through the proxies (``proxy_urls``) behind the
same ``fetch()``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path

import aiohttp

from harvestman.archive import RawArchive, WarcWriter
from harvestman.archive.images import ImageArchive
from harvestman.archive.location import archive_location
from harvestman.archive.raw import LocalBlobs, S3Blobs
from harvestman.config import Settings
from harvestman.coord import Coordinator, WorkerStatus
from harvestman.crawl.analysis import AnalysisSpec
from harvestman.crawl.archives import ArchiveDiscovery
from harvestman.crawl.budget import Budget
from harvestman.crawl.controls import DomainControls
from harvestman.crawl.discovery import Discovery
from harvestman.crawl.discovery_steps import FeedsStep, LinksStep, PaginationStep
from harvestman.crawl.exchange import MainTextStep, RawArchiveStep, RenderStep, WarcStep
from harvestman.crawl.fetch import Fetcher, RetryPolicy
from harvestman.crawl.fetching import PageFetcher, ProxiedFetcher, RedirectCheck
from harvestman.crawl.frontier import Frontier
from harvestman.crawl.gates import (
    BreakerGate,
    Gate,
    HealthObserver,
    RobotsGate,
    SharedState,
    sitemap_queue,
)
from harvestman.crawl.handler import RequestHandler
from harvestman.crawl.hosts import HostSlots
from harvestman.crawl.images import ImageLinksStep, ImageStep
from harvestman.crawl.ingest import IngestLimit
from harvestman.crawl.liveness import Liveness, WatchdogLimits
from harvestman.crawl.outcomes import Outcomes
from harvestman.crawl.pages import ListingReader, PagePipeline
from harvestman.crawl.pageworkers import PageWorkers
from harvestman.crawl.robots_cache import RobotsCache
from harvestman.crawl.run import CrawlRun
from harvestman.crawl.session import RulesSource, Session
from harvestman.crawl.steps import (
    NearDuplicateStep,
    ParsersStep,
    ProductsStep,
    StoreTextStep,
    ValidateStep,
    product_recrawl,
)
from harvestman.crawl.work import ExchangeStep, RunResource, Step
from harvestman.crawl.writer import BatchWriter, PagesCallback
from harvestman.credentials import ProxyCipher
from harvestman.errors import RedirectRefused
from harvestman.guard import NetworkGuard
from harvestman.proxies import DomainProxyLimiter, ProxyPool
from harvestman.stats import StatsHistory
from harvestman.urls import Scope, UrlNormalizer


class Wiring:
    """Everything one crawler is made of, built from ``settings`` once (see the module
    docstring); what needs the running crawl (the fetcher, the frontier) is built by the
    methods the crawler calls when it starts."""

    def __init__(
        self,
        settings: Settings,
        run: CrawlRun,
        *,
        on_pages: PagesCallback | None,
        tasks: set[asyncio.Task[None]],
    ) -> None:
        self.settings = settings
        self.run = run
        stats, clock = run.stats, run.clock
        # What the crawler's dispatcher reads: the crawler looks no setting up itself.
        self.crawl_name = settings.crawl_name
        self.concurrency = settings.crawl_concurrency
        self.refresh_interval = settings.frontier_refresh_interval
        # One guard for every fetch of the crawl; the seeds' origins are admitted as they load.
        self.guard = NetworkGuard(settings.network_allow)
        self.normalizer = UrlNormalizer.from_settings(settings)
        self.retry = RetryPolicy(settings.fetch_max_retries, settings.fetch_retry_backoff)
        self.outcomes = Outcomes(
            stats, clock, visited_ttl=settings.crawl_visited_ttl, retry=self.retry
        )
        self.discovery = Discovery(
            stats,
            max_depth=settings.crawl_max_depth,
            seen_cache_size=settings.crawl_seen_cache_size,
        )
        history = StatsHistory(settings.stats_history_interval) if settings.stats_history else None
        self.writer = BatchWriter(
            run,
            batch_size=settings.store_batch_size,
            flush_interval=settings.store_flush_interval,
            history=history,
            on_pages=on_pages,
            ingest=IngestLimit.from_settings(settings),
        )
        self.budget = Budget.from_settings(settings, lambda: self.writer.final_outcomes)
        self.breaker = BreakerGate.from_settings(settings, run)
        self.pagination = PaginationStep.from_settings(settings, self.discovery, run)
        self.archives = ArchiveDiscovery.from_settings(
            settings, run, self.discovery, self.writer, tasks
        )
        self.parsers = ParsersStep.from_settings(settings, stats, run)
        # What a page's analysis computes, and the one validator of pages and refusals.
        analysis = AnalysisSpec.from_settings(settings)
        validator = analysis.validator()
        self.validate = ValidateStep.from_settings(settings, run, self.outcomes, validator)
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
        before_fetch = self._before_fetch()
        self.pipeline = PagePipeline(
            [c for c in before_fetch if isinstance(c, Step)],
            self.outcomes,
            ListingReader(
                self.discovery,
                self.outcomes,
                max_depth=settings.sitemap_max_depth,
                max_urls=settings.sitemap_max_urls,
                max_bytes=settings.sitemap_max_bytes,
                feed_poll_interval=settings.feed_poll_interval,
                normalizer=self.normalizer,
                writer=self.writer,
                batch_size=settings.sitemap_batch_size,
                concurrency=settings.sitemap_concurrency,
            ),
            analysis,
            count=stats.inc,
            normalizer=self.normalizer,
            validator=validator,
            recrawl=product_recrawl(settings),
        )
        # Where the raw archive keeps bodies, recorded with the crawl (archive/location.py).
        self.archive_location = archive_location(settings) if settings.archive_enabled else None
        self.render = RenderStep.from_settings(settings, self.pipeline, stats, self.guard)
        self.main_text = MainTextStep.from_settings(settings, stats, clock)
        # The one list (see the module docstring); the render step needs the page steps'
        # pipeline, so the list is put together once that is built.
        self.components: tuple[object, ...] = (*before_fetch, *self._around_exchange())
        self.session = Session(
            run,
            cookies=settings.fetch_cookies,
            proxies=self.proxies,
            rules=[c for c in self.components if isinstance(c, RulesSource)],
            cipher=ProxyCipher(settings.proxy_key) if settings.proxy_key else None,
        )
        self.controls = DomainControls(
            run.store.controls, self.outcomes, ttl=settings.domain_settings_ttl
        )

    def _before_fetch(self) -> list[object]:
        """The gates and page steps that are on, in the list's order."""
        settings, stats = self.settings, self.run.stats
        on_read = None
        if settings.discovery_sitemaps:
            on_read = sitemap_queue(self.discovery.sitemaps, self.writer.add_urls)
        components: list[object | None] = [
            RobotsGate.from_settings(settings, self.run, self.outcomes, on_read),
            self.breaker,
            self.validate,
            StoreTextStep.from_settings(settings),
            NearDuplicateStep.from_settings(settings, stats),
            ProductsStep.from_settings(settings, stats),
            ImageLinksStep.from_settings(settings, self.discovery, self.normalizer, stats),
            self.parsers,
            FeedsStep.from_settings(settings, self.discovery),
            LinksStep.from_settings(settings, self.discovery),
            self.pagination,
        ]
        return [component for component in components if component is not None]

    def _around_exchange(self) -> list[object]:
        """The exchange steps that are on, in the list's order; files open when the run does."""
        settings, stats = self.settings, self.run.stats
        warc = raw = None
        if settings.warc_path:
            path = Path(settings.warc_path)
            writer = WarcWriter(path, gzip=settings.warc_path.endswith(".gz"), append=True)
            warc = WarcStep(writer, settings.fetch_user_agent, stats, self.run.clock)
        if settings.archive_enabled:
            raw = RawArchiveStep(lambda: RawArchive(raw_blobs(settings)), stats)
        components: list[object | None] = [warc, self.render, raw, self.main_text]
        return [component for component in components if component is not None]

    def gates(self) -> list[Gate]:
        return [c for c in self.components if isinstance(c, Gate)]

    def observers(self) -> list[HealthObserver]:
        return [c for c in self.components if isinstance(c, HealthObserver)]

    # -- built when the crawl starts --------------------------------------------------------

    def scope(self, seeds: Sequence[str]) -> Scope:
        settings = self.settings
        return Scope(
            seeds, settings.crawl_allow_domains, settings.crawl_include, settings.crawl_exclude
        )

    def frontier(self, worker_id: str) -> Frontier:
        settings = self.settings
        frontier = Frontier(
            self.run.store.frontier,
            self.run.crawl_id,
            worker_id,
            delay=settings.frontier_delay,
            per_host_concurrency=settings.frontier_per_host_concurrency,
            lease_seconds=settings.frontier_lease_seconds,
            lease_batch=settings.frontier_lease_batch,
            on_host_dry=self.archives.host_ran_dry if self.archives is not None else None,
            clock=self.run.clock,
        )
        frontier.on_starved = self.writer.starved
        return frontier

    def exchange_steps(self, keep: contextlib.ExitStack) -> list[ExchangeStep]:
        """The exchange steps, their files opened for the run in ``keep``."""
        for component in self.components:
            if isinstance(component, RunResource):
                component.open(keep)
        return [c for c in self.components if isinstance(c, ExchangeStep)]

    def fetcher(self, cookie_jar: aiohttp.CookieJar | None) -> Fetcher:
        settings = self.settings
        return Fetcher(
            user_agent=settings.fetch_user_agent,
            user_agents=settings.fetch_user_agents or None,
            cookie_jar=cookie_jar,
            timeout=settings.fetch_timeout,
            max_redirects=settings.fetch_max_redirects,
            max_page_size=settings.fetch_max_page_size,
            max_connections=settings.crawl_concurrency,
            normalizer=self.normalizer,
            guard=self.guard,
        )

    def page_fetcher(self, fetcher: Fetcher) -> PageFetcher:
        """The fetcher pages go through: the proxies when there are any."""
        if self.proxies is None:
            return fetcher
        limiter = DomainProxyLimiter(self.settings.proxy_domain_rate)
        return ProxiedFetcher(fetcher, self.proxies, limiter, self.run.stats, self.run.clock)

    def robots(self, fetcher: PageFetcher, coordinator: Coordinator) -> RobotsCache:
        settings = self.settings
        return RobotsCache(
            self.run.store.hosts,
            fetcher,
            user_agent=settings.fetch_user_agent,
            ttl=settings.robots_ttl,
            max_bytes=settings.robots_max_bytes,
            retry=self.retry,
            coordinator=coordinator,
            clock=self.run.clock,
            check_hop=self._check_robots_hop,
        )

    async def _check_robots_hop(self, url: str) -> None:
        """A robots.txt redirect hop must stay in scope (robots.txt of its own is not asked)."""
        reason = self.discovery.scope.check(url)
        if reason is not None:
            raise RedirectRefused(f"robots.txt redirect to {url} refused: {reason}", url, reason)

    async def admit_origins(self, seeds: Sequence[str]) -> None:
        """A seed (or proxy) someone gave on purpose admits its own origin to the guard, not
        its whole address."""
        for url in (*seeds, *self.settings.proxy_urls):
            await self.guard.admit_url(url)

    def redirect_check(self, robots: RobotsCache) -> RedirectCheck:
        discovery = self.discovery
        return RedirectCheck(lambda: discovery.scope, robots, self.settings.fetch_user_agent)

    def images(self, keep: contextlib.ExitStack) -> ImageStep | None:
        """The image step (crawl_images), its blob store checked and closed with the run."""
        settings = self.settings
        if not settings.crawl_images:
            return None
        archive = ImageArchive(raw_blobs(settings))
        keep.callback(archive.close)
        archive.check()
        return ImageStep(archive, self.run, self.outcomes, max_pixels=settings.image_max_pixels)

    def page_workers(self) -> PageWorkers | None:
        """The page processes (parse_processes; an async context manager that ends them);
        None: pages are analyzed in the crawler's process."""
        settings = self.settings
        if settings.parse_processes < 1:
            return None
        return PageWorkers(
            self.pipeline.spec,  # the page's text comes back when a step on reads it
            self.run.stats,
            processes=settings.parse_processes,
            start_after=settings.parse_processes_after,
            max_queue_wait=settings.parse_processes_max_queue_wait,
        )

    def handler(
        self,
        exchange_steps: Sequence[ExchangeStep],
        images: ImageStep | None = None,
        workers: PageWorkers | None = None,
    ) -> RequestHandler:
        return RequestHandler(
            self.run,
            self.outcomes,
            self.gates(),
            self.observers(),
            exchange_steps,
            self.pipeline,
            listing_max_bytes=self.settings.sitemap_max_bytes,
            hold_host_while_handling=self.render is not None,
            refusals=self.validate,
            images=images,
            image_max_bytes=self.settings.image_max_bytes,
            workers=workers,
        )

    def host_slots(self, frontier: Frontier, coordinator: Coordinator) -> HostSlots:
        settings = self.settings
        return HostSlots(
            frontier,
            coordinator,
            self.run.clock,
            per_host_concurrency=settings.frontier_per_host_concurrency,
            gate_hold=settings.fetch_timeout + 10.0,
        )

    def liveness(self, worker_id: str, status: Callable[[], WorkerStatus]) -> Liveness:
        settings = self.settings
        liveness = Liveness(
            self.run,
            worker_id,
            status,
            heartbeat_interval=settings.worker_heartbeat_interval,
            heartbeat_timeout=settings.worker_heartbeat_timeout,
            lease_seconds=settings.frontier_lease_seconds,
            sweep_interval=settings.frontier_sweep_interval,
            watchdog=WatchdogLimits(
                settings.watchdog_check_url,
                settings.watchdog_stall_seconds,
                settings.watchdog_check_interval,
                settings.watchdog_network_retry,
            ),
        )
        for component in self.components:
            if isinstance(component, SharedState):
                liveness.on_beat.append(component.sync)
        liveness.on_sweep.append(self.session.save)
        return liveness


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
