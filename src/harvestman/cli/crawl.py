"""``crawl``, ``worker``, ``seed`` and ``status``: the commands that run or feed a crawl."""

from __future__ import annotations

import itertools
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from harvestman.cli.exits import err, usage_error
from harvestman.cli.options import (
    ConcurrencyOption,
    ConfigOption,
    DatabaseUrlOption,
    DbOption,
    JsonOption,
    KindOption,
    NameOption,
    PerHostConcurrencyOption,
    ReadCrawlOption,
    RedisOption,
    VerboseOption,
)
from harvestman.cli.runtime import collect_after_start, log, run, setup_logging
from harvestman.cli.stores import open_store

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Iterator

    from harvestman.config import Settings
    from harvestman.crawl.crawler import Crawler
    from harvestman.crawl.seeding import SeedLoader, SeedReport
    from harvestman.store import SqlStore

PRIORITIES = {"high": 3, "normal": 2, "low": 1}


@collect_after_start
def crawl(
    urls: Annotated[list[str] | None, typer.Argument(help="Seed URLs", show_default=False)] = None,
    seeds_file: Annotated[
        Path | None, typer.Option("--seeds-file", help="File with one seed URL per line")
    ] = None,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: NameOption = None,
    max_pages: Annotated[
        int | None, typer.Option("--max-pages", help="Stop after this many fetches (0: no limit)")
    ] = None,
    max_depth: Annotated[
        int | None, typer.Option("--max-depth", help="Link hops from a seed [default: 3]")
    ] = None,
    concurrency: ConcurrencyOption = None,
    delay: Annotated[
        float | None,
        typer.Option("--delay", help="Seconds between requests to a host without Crawl-delay [1]"),
    ] = None,
    per_host_concurrency: PerHostConcurrencyOption = None,
    allow_domain: Annotated[
        list[str] | None, typer.Option("--allow-domain", help="Also crawl this domain")
    ] = None,
    include: Annotated[
        list[str] | None, typer.Option("--include", help="Only URLs matching this regex")
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option("--exclude", help="Skip URLs matching this regex")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Seconds per request [30]")
    ] = None,
    user_agent: Annotated[str | None, typer.Option("--user-agent", help="User-Agent")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Append fetched pages here as JSONL")
    ] = None,
    kind: KindOption = "page",
    warc: Annotated[
        Path | None, typer.Option("--warc", help="Also write every exchange to this WARC file")
    ] = None,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Live progress display")
    ] = True,
    images: Annotated[
        bool | None,
        typer.Option("--images/--no-images", help="Download product images into the archive [no]"),
    ] = None,
    verbose: VerboseOption = 0,
) -> None:
    """Crawl from seed URLs into the store; run it again to resume."""
    from harvestman.export import parse_kinds

    setup_logging(verbose)
    try:
        kinds = parse_kinds(kind)
    except ValueError as exc:
        raise usage_error(f"--kind: {exc}") from None
    with open_store(
        config, db, database_url,
        crawl_name=name,
        crawl_max_pages=max_pages,
        crawl_max_depth=max_depth,
        crawl_concurrency=concurrency,
        frontier_delay=delay,
        frontier_per_host_concurrency=per_host_concurrency,
        crawl_allow_domains=allow_domain or None,
        crawl_include=include or None,
        crawl_exclude=exclude or None,
        fetch_timeout=timeout,
        fetch_user_agent=user_agent,
        warc_path=str(warc) if warc else None,
        crawl_images=images,
    ) as (settings, store):  # fmt: skip
        file_seeds = read_seeds(seeds_file)
        live = progress and sys.stderr.isatty()
        code = run(_crawl(settings, store, urls or [], file_seeds, output, live, kinds))
    raise typer.Exit(code)


def read_seeds(seeds_file: Path | None) -> Iterator[str] | None:
    """The lines of ``seeds_file``, read lazily (blank lines and ``#`` comments skipped)."""
    from harvestman.crawl.seeding import seed_lines

    return seed_lines(seeds_file) if seeds_file is not None else None


def _seed_loader(settings: Settings, store: SqlStore, priority: int | None = None) -> SeedLoader:
    """A loader that reports each rejected line as it comes."""
    from harvestman.crawl.seeding import SeedLoader

    def rejected(line: str, reason: str) -> None:
        err.print(f"[yellow]skipped seed[/yellow] {line!r}: {reason}")

    return SeedLoader(settings, store, priority=priority, on_rejected=rejected)


async def _start_seeding(
    settings: Settings, store: SqlStore, lines: Iterator[str], crawler: Crawler
) -> asyncio.Task[SeedReport]:
    """Load the first chunk of ``lines`` now and the rest while ``crawler`` crawls.

    The crawl fetches at once instead of after the whole file: it runs as a worker of its own
    crawl (it looks for new work when its frontier runs dry, its scope reloaded with it) and
    may end only once the file is loaded; a failed load stops it.
    """
    import asyncio
    import time

    loader, now = _seed_loader(settings, store), time.time()
    while not loader.report.added:  # a first chunk with a good seed (or the whole file)
        chunk = list(itertools.islice(lines, settings.seeds_chunk_size))
        if not chunk:
            break
        await loader.load(chunk, now)
    crawler.worker_mode, crawler.exit_when_done = True, False
    loading = asyncio.create_task(loader.load(lines, now), name="crawl-seeds")

    def loaded(task: asyncio.Task[SeedReport]) -> None:
        crawler.exit_when_done = True
        if task.cancelled() or task.exception() is not None:
            crawler.stop()

    loading.add_done_callback(loaded)
    return loading


async def _crawl(
    settings: Settings,
    store: SqlStore,
    seeds: list[str],
    file_seeds: Iterator[str] | None,
    output: Path | None,
    live: bool,
    kinds: tuple[str, ...],
) -> int:
    import asyncio
    import contextlib

    from harvestman.crawl.crawler import Crawler
    from harvestman.display import CrawlProgress, summary_table
    from harvestman.export import page_summary

    out = output.open("ab") if output else None
    async with store:
        await store.prepare_schema()

        def write_pages(outcomes: Any) -> None:
            if out is not None:
                for outcome in outcomes:
                    line = page_summary(outcome, kinds)
                    if line is not None:
                        out.write(line)

        crawler = Crawler(settings, store, seeds, on_pages=write_pages)
        for seed, reason in crawler.rejected_seeds:
            err.print(f"[yellow]skipped seed[/yellow] {seed!r}: {reason}")
        loading = None
        if file_seeds is not None:  # streamed: the file is never in memory as a whole
            loading = await _start_seeding(settings, store, file_seeds, crawler)
        crawl_id = await store.crawls.find_crawl(settings.crawl_name)
        if not crawler.seeds and crawl_id is None:
            err.print("[red]error:[/red] no valid seed URL and no crawl to resume in this store")
            return 2
        loop = asyncio.get_running_loop()
        interrupted = False

        def on_signal() -> None:
            nonlocal interrupted
            if interrupted:  # a second Ctrl-C: leave now; leases expire and come back
                os._exit(130)
            interrupted = True
            err.print("[yellow]stopping: finishing writes (Ctrl-C again to quit at once)[/yellow]")
            crawler.stop()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        display = CrawlProgress(crawler, err) if live else None
        try:
            if display is not None:
                display.start()
            counts = await crawler.run()
            if loading is not None:
                if interrupted:  # what is not loaded yet is, when the command runs again
                    loading.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await loading  # a failed load raises here
        finally:
            if loading is not None and not loading.done():
                loading.cancel()
            if display is not None:
                await display.stop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            if out is not None:
                out.close()
        err.print(summary_table(crawler, counts))
        budget = crawler.wiring.budget
        if budget is not None and budget.fetched_before >= budget.max_pages:
            err.print(
                f"[yellow]nothing fetched:[/yellow] crawl {settings.crawl_name!r} already holds "
                f"{budget.fetched_before} fetches and --max-pages ({budget.max_pages}) counts "
                "every run's; raise it, or crawl into a new --name or --db"
            )
        return 130 if interrupted else 0


@collect_after_start
def worker(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    redis_url: RedisOption = None,
    config: ConfigOption = None,
    name: NameOption = None,
    concurrency: ConcurrencyOption = None,
    delay: Annotated[
        float | None, typer.Option("--delay", help="Seconds between requests to a host [1]")
    ] = None,
    per_host_concurrency: PerHostConcurrencyOption = None,
    exit_when_done: Annotated[
        bool,
        typer.Option(
            "--exit-when-done/--keep-running",
            help="Exit once nothing is pending or leased anywhere (default: keep waiting for work)",
        ),
    ] = False,
    verbose: VerboseOption = 0,
) -> None:
    """Crawl together with other workers on one database (and one Redis): run one per machine."""
    setup_logging(max(verbose, 1))
    with open_store(
        config, db, database_url,
        redis_url=redis_url,
        crawl_name=name,
        crawl_concurrency=concurrency,
        frontier_delay=delay,
        frontier_per_host_concurrency=per_host_concurrency,
    ) as (settings, store):  # fmt: skip
        from harvestman.logconfig import configure_logging

        configure_logging(settings.log_format, "DEBUG" if verbose > 1 else settings.log_level)
        code = run(_work(settings, store, exit_when_done))
    raise typer.Exit(code)


async def _work(settings: Settings, store: SqlStore, exit_when_done: bool) -> int:
    import asyncio

    from harvestman.crawl.workers import work

    async with store:
        await store.check_schema()  # a worker never migrates: that is `harvestman db upgrade`
        loop = asyncio.get_running_loop()
        stopping = False
        crawlers: list[Any] = []
        consumers: list[Any] = []

        def on_signal() -> None:
            nonlocal stopping
            if stopping:
                os._exit(130)
            stopping = True
            log.warning("stopping: finishing writes and releasing leases")
            for crawler in crawlers:
                crawler.stop()
            for consumer in consumers:
                consumer.stop()

        def started(crawler: Any) -> None:
            crawlers.append(crawler)
            log.info("worker %s on %s", crawler.worker_id, _safe_url(settings.database_url))
            if stopping:
                crawler.stop()

        def consuming(consumer: Any) -> None:
            consumers.append(consumer)
            if stopping:
                consumer.stop()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        if settings.broker_url:  # job executions from the broker, beside the frontier crawl
            counts = await _crawl_and_consume(settings, store, exit_when_done, started, consuming)
        else:
            counts = await work(settings, store, exit_when_done=exit_when_done, started=started)
        log.info("worker %s done: %s", crawlers[0].worker_id, counts.by_status)
        return 0


async def _crawl_and_consume(
    settings: Settings,
    store: SqlStore,
    exit_when_done: bool,
    started: Callable[[Any], None],
    consuming: Callable[[Any], None],
) -> Any:
    """The worker's frontier crawl and the broker's job executions side by side, sharing one
    coordinator (Redis's host gate keeps every host's delay across both). A failed frontier
    crawl stops the consumer; otherwise both run until a signal stops them."""
    import asyncio

    from harvestman.coord.choice import coordinator_for
    from harvestman.crawl.liveness import worker_identity
    from harvestman.crawl.workers import work
    from harvestman.jobs.consumer import consumer_for

    coordinator = coordinator_for(settings, store, worker_identity())
    try:
        async with consumer_for(settings, store, coordinator) as consumer:
            consuming(consumer)
            crawling = asyncio.create_task(
                work(settings, store, exit_when_done=exit_when_done, started=started,
                     coordinator=coordinator)
            )  # fmt: skip
            crawling.add_done_callback(
                lambda done: (
                    consumer.stop()
                    if not done.cancelled() and done.exception() is not None
                    else None
                )
            )
            log.info("worker: consuming job executions")
            await consumer.run()  # until a signal: executions keep coming
            return await crawling
    finally:
        await coordinator.close()


def _safe_url(url: str) -> str:
    from harvestman.store.dialect import safe_url

    return safe_url(url)


def seed(
    urls: Annotated[
        list[str] | None, typer.Argument(help="URLs to add", show_default=False)
    ] = None,
    seeds_file: Annotated[
        Path | None, typer.Option("--seeds-file", help="File with one URL per line")
    ] = None,
    priority: Annotated[str, typer.Option("--priority", help="high, normal or low")] = "high",
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: NameOption = None,
) -> None:
    """Add seed URLs to a crawl's frontier (their hosts join its scope)."""
    if priority not in PRIORITIES:
        raise usage_error(f"--priority must be one of {', '.join(PRIORITIES)}")
    with open_store(config, db, database_url, crawl_name=name) as (settings, store):
        lines = itertools.chain(urls or [], read_seeds(seeds_file) or ())
        report = run(_seed(settings, store, lines, PRIORITIES[priority]))
    err.print(f"seeded {report.added} URLs into crawl {settings.crawl_name!r}")
    raise typer.Exit(0 if report.added or not report.rejected else 2)


async def _seed(
    settings: Settings, store: SqlStore, lines: Iterator[str], priority: int
) -> SeedReport:
    import time

    async with store:
        await store.check_schema()
        return await _seed_loader(settings, store, priority).load(lines, time.time())


def status(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    redis_url: RedisOption = None,
    config: ConfigOption = None,
    name: ReadCrawlOption = None,
    as_json: JsonOption = False,
) -> None:
    """The frontier, the live workers with their hosts and rates, and per-host state."""
    from harvestman.cli.stores import choose_crawl

    with open_store(
        config, db, database_url, must_exist=True, redis_url=redis_url, crawl_name=name
    ) as (settings, store):
        crawl_name, crawl_id = choose_crawl(store, name)
        report = run(_status(settings, store, crawl_id, crawl_name))
    if as_json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        from harvestman.display import render_status

        Console().print(render_status(report))


async def _status(
    settings: Settings, store: SqlStore, crawl_id: int, crawl_name: str
) -> dict[str, Any]:
    import asyncio
    import time
    from dataclasses import asdict

    async with store:
        counts = await store.crawls.counts(crawl_id)
        now = time.time()
        live: list[dict[str, Any]] = []
        source = "store"
        counters: dict[str, int] = {}
        if settings.redis_url:
            from harvestman.coord.choice import coordinator_for

            coordinator: Any = coordinator_for(settings, store, "status")  # Redis: .available
            try:
                live = [asdict(w) for w in await coordinator.workers()]
                counters = await coordinator.counters(str(crawl_id))
                source = "redis" if coordinator.available else "store"
            finally:
                await coordinator.close()
        if source == "store":
            for row in await store.registry.worker_rows():
                if row["heartbeat_at"] >= now - settings.worker_heartbeat_timeout:
                    live.append(
                        row["info"] or {"worker_id": row["id"], "hostname": row["hostname"]}
                    )
        hosts = await asyncio.to_thread(store.reports.host_states, crawl_id)
    return {
        "crawl": crawl_name,
        "urls": counts.by_status,
        "pages": counts.pages,
        "workers": live,
        "workers_source": source,
        "counters": counters,  # shared crawl counters (Redis): outcomes by status, new URLs
        "pages_per_second": round(sum(w.get("rate", 0.0) for w in live), 2),
        "hosts": hosts,
    }
