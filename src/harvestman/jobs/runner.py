"""Runs one execution of a job: the crawler on the job's source, measured.

- **Settings for the source**: the service's settings with the source's namespace
  (``Source.crawl``, named after the source when it was created: ``my-shop-12``; ``source-<id>``
  for sources made before migration 0024; the source's frontier and pages, kept across runs),
  its max depth (0: 3), crawl
  delay, per-run page budget and scope rules, and the crawl options it turns on or off (main
  text, feeds, pagination, archives, near-duplicates, stored text).
- **Seeds**: the job's URL, then the source's start URLs. They are made due again before each
  run, so a recurring job re-fetches its start pages (with the stored ETag / Last-Modified) and
  follows their links to what is new or due; the rest of the namespace keeps its visited TTL.
  A forced run ("Run now": ``FORCED`` in the execution's metadata) makes every completed or
  failed row of the namespace due (``make_known_due``): each known page is asked for again
  with its stored ETag / Last-Modified, so a 304 costs no body, and a changed child is found
  whatever its own re-crawl interval.
  A run that resumes an execution another worker began (a broker's takeover: more than one
  of the execution's ``holders``) goes on from the namespace as it is.
- **Result**: fetches finished (``items_crawled``), pages stored (``items_indexed``), the
  process CPU time and peak RSS while the run lasted (shared with anything else the process
  does meanwhile), the error and its stack trace when the crawl raised, and the SHA-256 of each
  start page's text for adaptive scheduling (a 304 counts as the content last stored).
- **Failure**: the run is ``failed`` (so the job's retries and back-off apply) when the crawl
  raised, or when every start URL's row ended the run without a page: failed after its
  retries (connection refused, DNS, 5xx; its host given up) or blocked (robots.txt
  unreachable or denying it).

Log lines are captured by the scheduler's ``LogCapture`` around the call: every task the crawler
starts inherits the execution's context. While they are, each fetched URL gets a line
(``jobs.urllines``, the first ``job_log_url_lines``). The counters (fetched, stored, failed) are
the scheduler's ``RunProgress`` of the execution (``jobs.progress``), which it stores while the
run goes; both are fed by the crawl's ``on_pages``, once per stored batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from harvestman.config import SOURCE_OPTIONS, Settings, with_values
from harvestman.crawl.crawler import Crawler
from harvestman.errors import UrlError
from harvestman.jobs.progress import RunProgress, current_progress
from harvestman.jobs.records import (
    DEEP_CRAWL_WARNING,
    FORCED,
    Execution,
    ExecutionResult,
    ExecutionStatus,
    Job,
    Source,
)
from harvestman.jobs.urllines import UrlLines
from harvestman.records import Outcome, UrlStatus
from harvestman.store import ServiceStore
from harvestman.store.jobs.handover import HOLDERS
from harvestman.store.jobs.start_pages import StartState
from harvestman.urls import UrlNormalizer, url_hash

log = logging.getLogger(__name__)


def namespace(source: Source) -> str:
    """The crawl namespace of a source: fixed when it was created, stable across renames."""
    return source.crawl


def job_seeds(job: Job, source: Source) -> list[str]:
    """The job's URL first, then the source's start URLs, without repeats."""
    return list(dict.fromkeys([job.url, *source.start_urls]))


def source_settings(settings: Settings, source: Source, *, fetched_before: int = 0) -> Settings:
    """``settings`` for a crawl of ``source``, validated as a whole (ConfigError names what
    they refuse). ``max_pages`` is per run, so the budget counts on from the fetches the
    namespace already holds (the crawler counts them all). Each of the source's options sets
    its setting (``config.SOURCE_OPTIONS``)."""
    if source.max_depth > DEEP_CRAWL_WARNING:
        log.warning(
            "source %r: max depth %d is above %d, the crawl may grow very large",
            source.name,
            source.max_depth,
            DEEP_CRAWL_WARNING,
        )
    update_: dict[str, Any] = {
        "crawl_name": namespace(source),
        "crawl_max_depth": source.effective_max_depth,
        "crawl_max_pages": _budget(source, fetched_before),
        "crawl_allow_domains": list(source.scope.allow_domains),
        "crawl_include": list(source.scope.include),
        "crawl_exclude": list(source.scope.exclude),
        # The spec's per-source limit; a plain crawl has its own (none by default).
        "frontier_ingest_rate": settings.source_ingest_rate,
    }
    if source.crawl_delay is not None:
        update_["frontier_delay"] = source.crawl_delay
    for option, value in source.options.given().items():
        update_[SOURCE_OPTIONS[option]] = value
    return with_values(settings, update_)


def _budget(source: Source, fetched_before: int) -> int:
    """``crawl_max_pages`` for a run of ``source`` (0: no limit)."""
    return fetched_before + source.max_pages if source.max_pages else 0


class ResourceMeter:
    """CPU time and peak RSS of the process while a block runs (RSS sampled periodically)."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.cpu_ms = 0
        self.peak_mb = 0.0
        self._cpu_start = 0.0
        self._peak = 0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ResourceMeter:
        self._cpu_start = time.process_time()
        self._peak = _rss_bytes()
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._peak = max(self._peak, _rss_bytes())
        self.cpu_ms = round((time.process_time() - self._cpu_start) * 1000)
        self.peak_mb = round(self._peak / (1024 * 1024), 1)

    async def _sample(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self._peak = max(self._peak, _rss_bytes())


def _normalized(seeds: Sequence[str], normalizer: UrlNormalizer) -> list[str]:
    """The seeds as the crawler will normalize them (invalid ones it reports itself)."""
    normalized = []
    for seed in seeds:
        with contextlib.suppress(UrlError):
            normalized.append(normalizer.normalize(seed))
    return normalized


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # the process's high water
        return peak if sys.platform == "darwin" else peak * 1024


class CrawlRunner:
    """Runs executions with the ``Crawler`` on ``store`` (the crawl store: the same
    database as the jobs' tables, or another)."""

    def __init__(
        self,
        settings: Settings,
        store: ServiceStore,
        *,
        clock: Callable[[], float] = time.time,
        crawler_factory: Callable[..., Crawler] = Crawler,
    ) -> None:
        self.settings = settings
        self.store = store
        self.start_pages = store.start_pages
        self.clock = clock
        self.crawler_factory = crawler_factory

    async def run(
        self, job: Job, source: Source, execution: Execution, stop: asyncio.Event
    ) -> ExecutionResult:
        start: dict[str, str] = {}  # url hash -> normalized start URL
        seen: dict[str, Outcome] = {}  # url hash -> the start URL's final outcome
        # The scheduler's counters of this execution (stored while it runs), or our own.
        progress = current_progress() or RunProgress(started_at=self.clock())
        url_lines = UrlLines.for_run(self.settings.job_log_url_lines)
        result = ExecutionResult(status=ExecutionStatus.COMPLETED)
        async with ResourceMeter() as meter:
            try:
                seeds = job_seeds(job, source)
                # The source's settings, its URL rules (trailing slash) for the seeds included;
                # only the page budget waits for the count of what the namespace holds.
                settings = source_settings(self.settings, source)
                normalizer = UrlNormalizer.from_settings(settings)
                start.update((url_hash(url), url) for url in _normalized(seeds, normalizer))
                crawl_id = await self.store.crawls.ensure_crawl(namespace(source))
                holders = execution.metadata.get(HOLDERS)
                if holders:  # handed over by a broker: its lock history goes with the result
                    result.metadata[HOLDERS] = holders
                # Start URLs fetched before become pending again now (in-progress ones are
                # leased by a crawl still running and are left to it), unless this run
                # resumes one another worker began: it made them due and may have fetched them.
                if len(holders or []) <= 1:
                    await self.start_pages.make_due(crawl_id, list(start), self.clock())
                    if execution.metadata.get(FORCED):
                        known = await self.store.frontier.make_known_due(
                            crawl_id, self.clock(), source.effective_max_depth
                        )
                        log.info("run asked for by hand: %d known URLs are due again", known)
                # Counted after the start pages are due again, as the crawler counts.
                before = (await self.store.crawls.counts(crawl_id)).fetched
                if source.max_pages:
                    settings = with_values(
                        settings, {"crawl_max_pages": _budget(source, fetched_before=before)}
                    )

                def on_pages(outcomes: Sequence[Outcome]) -> None:
                    progress.observe(outcomes)
                    if url_lines is not None:
                        url_lines.observe(outcomes)
                    for outcome in outcomes:
                        if outcome.status is UrlStatus.PENDING:  # a retry comes later
                            continue
                        if outcome.request.url_hash in start:
                            seen[outcome.request.url_hash] = outcome

                crawler = self.crawler_factory(
                    settings, self.store, seeds, on_pages=on_pages, clock=self.clock
                )
                result.metadata.update(
                    namespace=settings.crawl_name,
                    seeds=crawler.seeds,
                    rejected_seeds=[list(pair) for pair in crawler.rejected_seeds],
                )
                watcher = asyncio.create_task(_stop_on(stop, crawler))
                try:
                    await crawler.run()
                finally:
                    watcher.cancel()
                    if url_lines is not None:
                        url_lines.close()
                result.metadata["stopped_early"] = crawler.stopped_early
                result.start_hashes = await self._start_hashes(crawl_id, start, seen)
                failed = None
                if not crawler.stopped_early:
                    states = await self.start_pages.states(crawl_id, list(start))
                    failed = start_failure(start, states)
                if failed is not None:
                    log.error("job %d: %s", job.id, failed)
                    result.status = ExecutionStatus.FAILED
                    result.error_message = failed
            except Exception as exc:
                log.exception("job %d: the crawl failed", job.id)
                result.status = ExecutionStatus.FAILED
                result.error_message = f"{type(exc).__name__}: {exc}"
                result.stack_trace = "".join(traceback.format_exception(exc))
        result.items_crawled = progress.fetched
        result.items_indexed = progress.stored
        result.cpu_time_ms = meter.cpu_ms
        result.memory_peak_mb = meter.peak_mb
        return result

    async def _start_hashes(
        self, crawl_id: int, start: dict[str, str], seen: dict[str, Outcome]
    ) -> dict[str, str | None]:
        """Each start URL's content hash in this run; None when it was not fetched or has no
        text to hash. A 304 stands for the content stored by the last full fetch."""
        stored: dict[str, str | None] = {}
        if any(o.status_code == 304 for o in seen.values()):
            stored = await self.start_pages.content_hashes(crawl_id, list(start))
        hashes: dict[str, str | None] = {}
        for digest, url in start.items():
            outcome = seen.get(digest)
            if outcome is None or outcome.status is not UrlStatus.COMPLETED:
                hashes[url] = None
            elif outcome.status_code == 304:
                hashes[url] = stored.get(digest)
            else:
                hashes[url] = outcome.content_hash
        return hashes


def start_failure(start: dict[str, str], states: dict[str, StartState]) -> str | None:
    """Why the run failed when every start URL's row ended it without a page (failed, or
    blocked: robots.txt unreachable or denying), else None. Read from the store, not from the
    run's outcomes: a host given up fails its pending rows in one write, without an outcome
    each. A start URL still pending or leased (past the page budget, or taken by another run)
    leaves the verdict to the others' success.

    >>> failed = StartState(UrlStatus.FAILED, "NetworkError", "refused")
    >>> start_failure({"h": "http://a.test/"}, {"h": failed})
    'every start URL failed: http://a.test/: NetworkError: refused'
    >>> start_failure({"h": "http://a.test/"}, {"h": failed._replace(status=UrlStatus.PENDING)})
    """
    ended = (UrlStatus.FAILED, UrlStatus.BLOCKED)
    if not start or any(
        digest not in states or states[digest].status not in ended for digest in start
    ):
        return None
    reasons = [
        f"{url}: {states[digest].error_class}: {states[digest].error}"
        for digest, url in start.items()
    ]
    return ("every start URL failed: " + "; ".join(reasons))[:2000]


async def _stop_on(stop: asyncio.Event, crawler: Crawler) -> None:
    await stop.wait()
    crawler.stop()
