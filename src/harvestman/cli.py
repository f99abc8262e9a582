"""The ``harvestman`` command: crawl, export, stats, db."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from harvestman.errors import STALL_EXIT_CODE, ConfigError, HarvestmanError, StoreUnavailable

if TYPE_CHECKING:
    from harvestman.config import Settings
    from harvestman.store import SqlStore

# Every command imports what it runs on (SQLAlchemy, aiohttp, pydantic, ...) inside its body:
# importing them here cost each call, `--help` included, ~0.6 s before its first line of work.
# Typer reads the parameter annotations at start-up, so those stay on cheap types (Path, str).

# The variable harvestman.config reads the settings file from; spelled out here so that
# declaring --config does not import the settings model (pydantic); a test checks they agree.
CONFIG_ENV = "HARVESTMAN_CONFIG"

app = typer.Typer(
    name="harvestman",
    help="A polite, resumable web crawler.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="Database schema migrations (Alembic).", no_args_is_help=True)
app.add_typer(db_app, name="db")

err = Console(stderr=True)
log = logging.getLogger("harvestman")

DbOption = Annotated[
    Path | None,
    typer.Option("--db", help="SQLite file of the store [default: ./harvestman.db]"),
]
DatabaseUrlOption = Annotated[
    str | None,
    typer.Option("--database-url", help="SQLAlchemy URL of the store (overrides --db)"),
]
ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="TOML settings file", envvar=CONFIG_ENV)
]
NameOption = Annotated[
    str | None, typer.Option("--name", help="Crawl namespace [default: default]")
]
VerboseOption = Annotated[int, typer.Option("--verbose", "-v", count=True, help="More logging")]


def _setup_logging(verbose: int) -> None:
    from rich.logging import RichHandler

    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(
        level=level,
        format="%(message)s",
        handlers=[RichHandler(console=err, show_path=False, rich_tracebacks=True)],
        force=True,
    )


def _database_url(db: Path | None, database_url: str | None) -> str | None:
    if database_url:
        return database_url
    if db is not None:
        return f"sqlite:///{db}"
    return None


def _settings(config: Path | None, **overrides: Any) -> Settings:
    from harvestman.config import load_settings

    if config is not None:
        os.environ[CONFIG_ENV] = str(config)
    try:
        return load_settings(**overrides)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None


@contextlib.contextmanager
def _errors_exit() -> Iterator[None]:
    """Turn Harvestman errors into a one-line message and exit status 1 (2 for config)."""
    try:
        yield
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    except StoreUnavailable as exc:  # a supervisor restarts us on this status
        err.print(f"[red]error:[/red] the store is unavailable: {exc}")
        raise typer.Exit(STALL_EXIT_CODE) from None
    except HarvestmanError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None


def _read_seeds(urls: list[str], seeds_file: Path | None) -> list[str]:
    seeds = list(urls)
    if seeds_file is not None:
        try:
            lines = seeds_file.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigError(f"cannot read seeds file {seeds_file}: {exc}") from None
        seeds.extend(line.strip() for line in lines if line.strip() and not line.startswith("#"))
    return seeds


@app.command()
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
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", "-c", help="Requests in flight [default: 32]")
    ] = None,
    delay: Annotated[
        float | None,
        typer.Option("--delay", help="Seconds between requests to a host without Crawl-delay [1]"),
    ] = None,
    per_host_concurrency: Annotated[
        int | None, typer.Option("--per-host-concurrency", help="Requests in flight per host [1]")
    ] = None,
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
    warc: Annotated[
        Path | None, typer.Option("--warc", help="Also write every exchange to this WARC file")
    ] = None,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Live progress display")
    ] = True,
    verbose: VerboseOption = 0,
) -> None:
    """Crawl from seed URLs into the store; run it again to resume."""
    _setup_logging(verbose)
    settings = _settings(
        config,
        database_url=_database_url(db, database_url),
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
    )
    with _errors_exit():
        seeds = _read_seeds(urls or [], seeds_file)
        code = _run(_crawl(settings, seeds, output, progress and sys.stderr.isatty()))
    raise typer.Exit(code)


def _tune_malloc() -> None:
    """Keep freed memory in the heap instead of returning it to the OS after every page: Lexbor
    allocates and frees a page's tree each time, and with glibc's defaults that is a few page
    faults a page (measured: 20-60 us of a ~300 us parse). Linux/glibc only; a no-op elsewhere."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 4 * 1024 * 1024)
    libc.mallopt(m_trim_threshold, 64 * 1024 * 1024)


def _run(coro: Any) -> Any:
    _tune_malloc()
    try:
        import uvloop
    except ImportError:
        import asyncio

        return asyncio.run(coro)
    return uvloop.run(coro)


async def _crawl(settings: Settings, seeds: list[str], output: Path | None, live: bool) -> int:
    import asyncio

    from harvestman.crawl import Crawler
    from harvestman.display import CrawlProgress, summary_table
    from harvestman.export import page_summary
    from harvestman.store import SqlStore

    out = output.open("ab") if output else None
    async with SqlStore(settings.database_url) as store:
        if store.engine.dialect.name == "sqlite":
            await store.upgrade()  # the embedded store sets itself up
        else:
            await store.check_schema()

        def write_pages(outcomes: Any) -> None:
            if out is not None:
                for outcome in outcomes:
                    line = page_summary(outcome)
                    if line is not None:
                        out.write(line)

        engine = Crawler(settings, store, seeds, on_pages=write_pages)
        for seed, reason in engine.rejected_seeds:
            err.print(f"[yellow]skipped seed[/yellow] {seed!r}: {reason}")
        crawl_id = await store.find_crawl(settings.crawl_name)
        if not engine.seeds and crawl_id is None:
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
            engine.stop()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        display = CrawlProgress(engine, err) if live else None
        try:
            if display is not None:
                display.start()
            counts = await engine.run()
        finally:
            if display is not None:
                await display.stop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            if out is not None:
                out.close()
        err.print(summary_table(engine, counts))
        return 130 if interrupted else 0


RedisOption = Annotated[
    str | None, typer.Option("--redis-url", help="Redis shared by the workers (optional)")
]


@app.command()
def worker(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    redis_url: RedisOption = None,
    config: ConfigOption = None,
    name: NameOption = None,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", "-c", help="Requests in flight [default: 32]")
    ] = None,
    delay: Annotated[
        float | None, typer.Option("--delay", help="Seconds between requests to a host [1]")
    ] = None,
    per_host_concurrency: Annotated[
        int | None, typer.Option("--per-host-concurrency", help="Requests in flight per host [1]")
    ] = None,
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
    _setup_logging(max(verbose, 1))
    settings = _settings(
        config,
        database_url=_database_url(db, database_url),
        redis_url=redis_url,
        crawl_name=name,
        crawl_concurrency=concurrency,
        frontier_delay=delay,
        frontier_per_host_concurrency=per_host_concurrency,
    )
    with _errors_exit():
        code = _run(_work(settings, exit_when_done))
    raise typer.Exit(code)


def _coordinator(settings: Settings, store: SqlStore, worker_id: str) -> Any:
    from harvestman.coord.store import StoreCoordinator

    if settings.redis_url:
        from harvestman.coord.redis import RedisCoordinator

        return RedisCoordinator(
            settings.redis_url,
            store,
            prefix=settings.redis_prefix,
            worker_id=worker_id,
            seen_ttl=settings.crawl_visited_ttl,
        )
    return StoreCoordinator(store)


async def _work(settings: Settings, exit_when_done: bool) -> int:
    import asyncio

    from harvestman.crawl import Crawler
    from harvestman.store import SqlStore

    async with SqlStore(settings.database_url) as store:
        await store.check_schema()  # a worker never migrates: that is `harvestman db upgrade`
        engine = Crawler(settings, store, worker_mode=True, exit_when_done=exit_when_done)
        coordinator = _coordinator(settings, store, engine.worker_id)
        engine.coordinator = coordinator
        loop = asyncio.get_running_loop()
        stopping = False

        def on_signal() -> None:
            nonlocal stopping
            if stopping:
                os._exit(130)
            stopping = True
            log.warning("stopping: finishing writes and releasing leases")
            engine.stop()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        log.info("worker %s on %s", engine.worker_id, _safe_url(settings.database_url))
        try:
            counts = await engine.run()
        finally:
            await coordinator.close()
        log.info("worker %s done: %s", engine.worker_id, counts.by_status)
        return 0


def _safe_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


@app.command()
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
    levels = {"high": 3, "normal": 2, "low": 1}
    if priority not in levels:
        err.print(f"[red]error:[/red] --priority must be one of {', '.join(levels)}")
        raise typer.Exit(2)
    settings = _settings(config, database_url=_database_url(db, database_url), crawl_name=name)
    with _errors_exit():
        seeds = _read_seeds(urls or [], seeds_file)
        added, rejected = _run(_seed(settings, seeds, levels[priority]))
    for url, reason in rejected:
        err.print(f"[yellow]skipped[/yellow] {url!r}: {reason}")
    err.print(f"seeded {added} URLs into crawl {settings.crawl_name!r}")
    raise typer.Exit(0 if added or not rejected else 2)


async def _seed(
    settings: Settings, seeds: list[str], priority: int
) -> tuple[int, list[tuple[str, str]]]:
    import time

    from harvestman.errors import UrlError
    from harvestman.records import NewUrl
    from harvestman.store import SqlStore
    from harvestman.urls import UrlNormalizer, host_key, url_hash

    normalizer = UrlNormalizer(settings.url_tracking_params, settings.url_max_length)
    good: list[str] = []
    rejected: list[tuple[str, str]] = []
    for url in seeds:
        try:
            good.append(normalizer.normalize(url))
        except UrlError as exc:
            rejected.append((url, exc.reason))
    async with SqlStore(settings.database_url) as store:
        await store.check_schema()
        crawl_id = await store.ensure_crawl(settings.crawl_name, good)
        rows = [NewUrl(u, url_hash(u), host_key(u), 0, priority) for u in good]
        await store.add_urls(crawl_id, rows, time.time())
    return len(good), rejected


@app.command()
def status(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    redis_url: RedisOption = None,
    config: ConfigOption = None,
    name: NameOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """The frontier, the live workers with their hosts and rates, and per-host state."""
    settings = _settings(
        config, database_url=_database_url(db, database_url), redis_url=redis_url, crawl_name=name
    )
    with _errors_exit():
        report = _run(_status(settings))
    if as_json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        from harvestman.display import render_status

        Console().print(render_status(report))


async def _status(settings: Settings) -> dict[str, Any]:
    import asyncio
    import time
    from dataclasses import asdict

    from harvestman.store import SqlStore

    async with SqlStore(settings.database_url) as store:
        await store.check_schema()
        crawl_id = await store.find_crawl(settings.crawl_name)
        if crawl_id is None:
            raise ConfigError(f"no crawl named {settings.crawl_name!r} in this store")
        counts = await store.counts(crawl_id)
        now = time.time()
        live: list[dict[str, Any]] = []
        source = "store"
        counters: dict[str, int] = {}
        if settings.redis_url:
            coordinator = _coordinator(settings, store, "status")
            try:
                live = [asdict(w) for w in await coordinator.workers()]
                counters = await coordinator.counters(str(crawl_id))
                source = "redis" if coordinator.available else "store"
            finally:
                await coordinator.close()
        if source == "store":
            for row in await store.worker_rows():
                if row["heartbeat_at"] >= now - settings.worker_heartbeat_timeout:
                    live.append(
                        row["info"] or {"worker_id": row["id"], "hostname": row["hostname"]}
                    )
        hosts = await asyncio.to_thread(store.host_states, crawl_id)
    return {
        "crawl": settings.crawl_name,
        "urls": counts.by_status,
        "pages": counts.pages,
        "workers": live,
        "workers_source": source,
        "counters": counters,  # shared crawl counters (Redis): outcomes by status, new URLs
        "pages_per_second": round(sum(w.get("rate", 0.0) for w in live), 2),
        "hosts": hosts,
    }


def _mount_service() -> None:
    # The service commands live with the API; importing them here keeps `crawl` start-up light
    # only as long as the API package imports lazily (it does: FastAPI loads on `serve`).
    from harvestman.api.commands import serve, token_app

    app.command(help="Run the crawl service: REST API, dashboard, scheduler.")(serve)
    app.add_typer(token_app, name="token")


_mount_service()

admin_app = typer.Typer(help="Maintenance of shared state.", no_args_is_help=True)
app.add_typer(admin_app, name="admin")


@admin_app.command("rebuild-cache")
def rebuild_cache(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    redis_url: RedisOption = None,
    config: ConfigOption = None,
) -> None:
    """Rebuild Redis' seen-URL sets and robots.txt cache from the store."""
    settings = _settings(config, database_url=_database_url(db, database_url), redis_url=redis_url)
    if not settings.redis_url:
        err.print("[red]error:[/red] no Redis configured (--redis-url or HARVESTMAN_REDIS_URL)")
        raise typer.Exit(2)
    with _errors_exit():
        counts = _run(_rebuild(settings))
    err.print(f"rebuilt: {counts}")


async def _rebuild(settings: Settings) -> dict[str, Any]:
    import asyncio
    import time

    from harvestman.coord.redis import RedisCoordinator
    from harvestman.store import SqlStore

    async with SqlStore(settings.database_url) as store:
        await store.check_schema()
        crawl_ids = await asyncio.to_thread(store.crawl_ids)
        namespaces = {
            str(cid): await asyncio.to_thread(store.url_hashes, cid) for cid in crawl_ids.values()
        }
        now = time.time()
        robots = [
            r
            for r in await asyncio.to_thread(store.robots_records)
            if r.robots_fetched_at is not None and r.robots_fetched_at + settings.robots_ttl > now
        ]
        coordinator = RedisCoordinator(
            settings.redis_url or "", store, prefix=settings.redis_prefix,
            seen_ttl=settings.crawl_visited_ttl,
        )  # fmt: skip
        try:
            return await coordinator.rebuild(namespaces, robots, settings.robots_ttl)
        finally:
            await coordinator.close()


@app.command()
def export(
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="jsonl, csv, es (bulk NDJSON) or warc")
    ] = "jsonl",
    what: Annotated[
        str, typer.Option("--what", help="pages, products or records (site parsers')")
    ] = "pages",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File to write [default: stdout]")
    ] = None,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: NameOption = None,
) -> None:
    """Write every stored page (product, parser record) of a crawl, streaming; WARC from the
    raw archive."""
    from harvestman.export import FORMATS, WHAT, export_pages
    from harvestman.store import SqlStore

    if fmt not in (*FORMATS, "warc"):
        err.print(
            f"[red]error:[/red] unknown format {fmt!r}; choose one of {', '.join(FORMATS)}, warc"
        )
        raise typer.Exit(2)
    if what not in WHAT:
        err.print(f"[red]error:[/red] --what must be one of {', '.join(WHAT)}")
        raise typer.Exit(2)
    settings = _settings(config, database_url=_database_url(db, database_url), crawl_name=name)
    with _errors_exit():
        store = SqlStore(settings.database_url)
        crawl_id = _existing_crawl(store, settings)
        if fmt == "warc":
            n = _export_warc(store, crawl_id, settings, output)
            err.print(f"exported {n} pages")
            return
        target = output.open("wb") if output else sys.stdout.buffer
        try:
            n = export_pages(store, crawl_id, fmt, target, what=what)
        finally:
            if output:
                target.close()
            store.engine.dispose()
    err.print(f"exported {n} {what}")


def _export_warc(store: SqlStore, crawl_id: int, settings: Settings, output: Path | None) -> int:
    from harvestman.archive import RawArchive, export_warc
    from harvestman.crawl import raw_blobs

    if output is None:
        raise ConfigError("--format warc needs --output FILE (.warc or .warc.gz)")
    with RawArchive(raw_blobs(settings)) as archive:
        report = export_warc(store.iter_pages(crawl_id), archive, output)
    if report.skipped or report.missing:
        err.print(f"skipped {report.skipped} pages without an archived body, {report.missing} lost")
    return report.written


dead_app = typer.Typer(
    help="Failed URLs (the dead letters): list and re-queue.", no_args_is_help=True
)
app.add_typer(dead_app, name="dead-letter")


@dead_app.command("list")
def dead_list(
    host: Annotated[str | None, typer.Option("--host", help="Only URLs of this host")] = None,
    error_class: Annotated[
        str | None, typer.Option("--error-class", help="Only URLs that failed with this error")
    ] = None,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: NameOption = None,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 50,
) -> None:
    """URLs that failed for good, with their error."""
    from harvestman.store.failures import dead_letters

    with _stored_crawl(config, db, database_url, name) as (store, crawl_id):
        rows, total = dead_letters(
            store.engine, crawl_id, host=host, error_class=error_class, limit=limit
        )
    for row in rows:
        typer.echo(f"{row['url']}\t{row['error_class']}\t{row['error']}")
    err.print(f"{len(rows)} of {total} failed URLs shown")


@dead_app.command("requeue")
def dead_requeue(
    error_class: Annotated[
        str | None, typer.Option("--error-class", help="Only URLs that failed with this error")
    ] = None,
    host: Annotated[str | None, typer.Option("--host", help="Only URLs of this host")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count, change nothing")] = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: NameOption = None,
) -> None:
    """Put failed URLs back into the frontier (retries reset); the next crawl fetches them."""
    import time

    from harvestman.store.failures import requeue_dead_letters

    with _stored_crawl(config, db, database_url, name) as (store, crawl_id):
        n = requeue_dead_letters(
            store.engine, crawl_id, time.time(), host=host, error_class=error_class,
            dry_run=dry_run,
        )  # fmt: skip
    err.print(f"{'would re-queue' if dry_run else 're-queued'} {n} URLs")


@app.command()
def errors(
    category: Annotated[
        str | None, typer.Option("--category", help="network, http, parse, validation, storage")
    ] = None,
    error_type: Annotated[
        str | None, typer.Option("--type", help="An error class, e.g. FetchTimeout")
    ] = None,
    host: Annotated[str | None, typer.Option("--host", help="Only errors of this host")] = None,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: NameOption = None,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 50,
) -> None:
    """The newest errors a crawl recorded, by category."""
    from harvestman.store.failures import error_rows

    with _stored_crawl(config, db, database_url, name) as (store, crawl_id):
        rows = error_rows(
            store.engine, crawl_id=crawl_id, category=category, error_class=error_type,
            host=host, limit=limit,
        )  # fmt: skip
    for row in rows:
        typer.echo(f"{row['category']}\t{row['error_class']}\t{row['task']}\t{row['message']}")


@contextlib.contextmanager
def _stored_crawl(
    config: Path | None, db: Path | None, database_url: str | None, name: str | None
) -> Iterator[tuple[SqlStore, int]]:
    """The store and the id of an existing crawl, errors turned into exit statuses."""
    from harvestman.store import SqlStore

    settings = _settings(config, database_url=_database_url(db, database_url), crawl_name=name)
    with _errors_exit():
        store = SqlStore(settings.database_url)
        try:
            yield store, _existing_crawl(store, settings)
        finally:
            store.engine.dispose()


@app.command()
def maintenance(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Apply the retention rules (export, then delete old rows) and compact the store."""
    import time

    from harvestman.lifecycle import RetentionRules, apply_retention
    from harvestman.store import SqlStore
    from harvestman.store import migrate as migrations

    settings = _settings(config, database_url=_database_url(db, database_url))
    rules = RetentionRules.from_settings(settings)
    with _errors_exit():
        store = SqlStore(settings.database_url)
        try:
            migrations.check_current(store.engine)
            report = apply_retention(store.engine, rules, time.time())
        finally:
            store.engine.dispose()
    err.print(report)


def _sqlite_path(settings: Settings) -> Path:
    from sqlalchemy.engine import make_url

    url = make_url(settings.database_url)
    if url.get_backend_name() != "sqlite" or not url.database:
        raise ConfigError("backup and restore are for the SQLite store; PostgreSQL: see "
                          "docs/OPERATIONS.md (pg_dump / pg_restore)")  # fmt: skip
    return Path(url.database)


@app.command()
def backup(
    out: Annotated[Path, typer.Argument(help="The backup file to write")],
    overwrite: Annotated[bool, typer.Option("--overwrite")] = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """A consistent online copy of the SQLite store (safe while a crawl writes)."""
    from harvestman.lifecycle import backup_sqlite

    settings = _settings(config, database_url=_database_url(db, database_url))
    with _errors_exit():
        report = backup_sqlite(_sqlite_path(settings), out, overwrite=overwrite)
    err.print(report)


@app.command()
def restore(
    source: Annotated[Path, typer.Argument(help="A backup made by `harvestman backup`")],
    force: Annotated[bool, typer.Option("--force", help="Replace an existing store")] = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Restore the SQLite store from a backup (refused while any process has it open)."""
    from harvestman.lifecycle import restore_sqlite
    from harvestman.store import SqlStore
    from harvestman.store import migrate as migrations

    settings = _settings(config, database_url=_database_url(db, database_url))
    with _errors_exit():
        report = restore_sqlite(source, _sqlite_path(settings), force=force)
        store = SqlStore(settings.database_url)
        try:
            migrations.check_current(store.engine)
        finally:
            store.engine.dispose()
    err.print(report)


@app.command()
def replay(
    domain: Annotated[str, typer.Option("--domain", help="Host whose pages to re-process")],
    since: Annotated[str, typer.Option("--since", help="36h, 7d, an ISO date, or epoch")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count, change nothing")] = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: NameOption = None,
) -> None:
    """Re-queue stored pages of a domain fetched since T (after a parser change)."""
    import time

    from harvestman.lifecycle import parse_since
    from harvestman.lifecycle import replay as replay_pages

    now = time.time()
    try:
        since_at = parse_since(since, now=now)
    except ValueError as exc:
        err.print(f"[red]error:[/red] --since: {exc}")
        raise typer.Exit(2) from None
    with _stored_crawl(config, db, database_url, name) as (store, crawl_id):
        plan = replay_pages(store.engine, crawl_id, domain, since_at, dry_run=dry_run, now=now)
    err.print(plan)


def _existing_crawl(store: SqlStore, settings: Settings) -> int:
    import asyncio

    from harvestman.store import migrate as migrations

    migrations.check_current(store.engine)
    crawl_id = asyncio.run(_find(store, settings.crawl_name))
    if crawl_id is None:
        raise ConfigError(f"no crawl named {settings.crawl_name!r} in {settings.database_url}")
    return crawl_id


async def _find(store: SqlStore, name: str) -> int | None:
    async with store:
        return await store.find_crawl(name)


@app.command()
def stats(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: NameOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Print what the store holds for a crawl: URLs by status, pages, statuses, errors, hosts."""
    from harvestman.store import SqlStore

    settings = _settings(config, database_url=_database_url(db, database_url), crawl_name=name)
    with _errors_exit():
        store = SqlStore(settings.database_url)
        try:
            crawl_id = _existing_crawl(store, settings)
            report = store.report(crawl_id)
        finally:
            store.engine.dispose()
    if as_json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        from harvestman.display import render_report

        Console().print(render_report(report))


@app.command()
def search(
    query: Annotated[str, typer.Argument(help='Words (all needed), "a phrase", a OR b, -word')],
    what: Annotated[str, typer.Option("--what", help="pages or products")] = "pages",
    domain: Annotated[
        str | None, typer.Option("--domain", help="One host (example.com: also www.)")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Fetched (products: changed) since: 7d, ISO")
    ] = None,
    until: Annotated[str | None, typer.Option("--until", help="... and before this")] = None,
    min_price: Annotated[float | None, typer.Option("--min-price", min=0)] = None,
    max_price: Annotated[float | None, typer.Option("--max-price", min=0)] = None,
    currency: Annotated[str | None, typer.Option("--currency", help="ISO 4217, e.g. EUR")] = None,
    availability: Annotated[
        list[str] | None, typer.Option("--availability", help="in_stock, out_of_stock, ...")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100)] = 20,
    offset: Annotated[int, typer.Option("--offset", min=0, max=999)] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a hit (JSONL)")] = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Only this crawl [default: every crawl]")
    ] = None,
) -> None:
    """Full-text search of stored pages (or products), best first."""
    import time
    from decimal import Decimal

    from harvestman.errors import QueryError
    from harvestman.lifecycle import parse_since
    from harvestman.search import require_query, search_pages, search_products
    from harvestman.search.terminal import hit_record, render_hits
    from harvestman.store import SqlStore
    from harvestman.store import migrate as migrations

    def usage(message: str) -> typer.Exit:
        err.print(f"[red]error:[/red] {message}")
        return typer.Exit(2)

    try:
        require_query(query)
        now = time.time()
        at = {k: None if v is None else parse_since(v, now=now) for k, v in
              {"since": since, "until": until}.items()}  # fmt: skip
    except QueryError as exc:
        raise usage(f"bad query: {exc.reason}") from None
    except ValueError:
        raise usage("--since/--until: use an age (36h, 7d), an ISO date or epoch") from None
    product_only = (min_price, max_price, currency, availability)
    if what not in ("pages", "products") or (what == "pages" and any(product_only)):
        raise usage("--what is pages or products; prices and availability need products")
    settings = _settings(config, database_url=_database_url(db, database_url), crawl_name=name)
    with _errors_exit():
        store = SqlStore(settings.database_url)
        try:
            crawl_id = _existing_crawl(store, settings) if name else None
            migrations.check_current(store.engine)
            if what == "pages":
                result: Any = search_pages(store.engine, crawl_id, query, domain=domain,
                                           limit=limit, offset=offset, **at)  # fmt: skip
            else:
                result = search_products(
                    store.engine, crawl_id, query, domain=domain, currency=currency,
                    min_price=None if min_price is None else Decimal(str(min_price)),
                    max_price=None if max_price is None else Decimal(str(max_price)),
                    availability=availability, limit=limit, offset=offset, **at,
                )  # fmt: skip
        finally:
            store.engine.dispose()
    if as_json:
        import orjson

        for hit in result.hits:
            sys.stdout.buffer.write(orjson.dumps(hit_record(hit)) + b"\n")
    else:
        Console().print(render_hits(result, offset))


@db_app.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision")] = "head",
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Migrate the schema up (to the newest revision by default)."""
    from harvestman.store import SqlStore
    from harvestman.store import migrate as migrations

    settings = _settings(config, database_url=_database_url(db, database_url))
    with _errors_exit():
        store = SqlStore(settings.database_url)
        migrations.upgrade(store.engine, revision)
        err.print(f"schema at {migrations.current_revision(store.engine)}")


@db_app.command("downgrade")
def db_downgrade(
    revision: Annotated[str, typer.Argument(help="Target revision, e.g. -1 or base")],
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Migrate the schema down to REVISION."""
    from harvestman.store import SqlStore
    from harvestman.store import migrate as migrations

    settings = _settings(config, database_url=_database_url(db, database_url))
    with _errors_exit():
        store = SqlStore(settings.database_url)
        migrations.downgrade(store.engine, revision)
        err.print(f"schema at {migrations.current_revision(store.engine) or 'base'}")


@db_app.command("current")
def db_current(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Print the schema revision of the database and of the code."""
    from harvestman.store import SqlStore
    from harvestman.store import migrate as migrations

    settings = _settings(config, database_url=_database_url(db, database_url))
    with _errors_exit():
        store = SqlStore(settings.database_url)
        current = migrations.current_revision(store.engine)
        head = migrations.head_revision(store.engine)
    typer.echo(f"database: {current or 'empty'}\ncode:     {head}")
    if current != head:
        typer.echo("run `harvestman db upgrade` to migrate")


if __name__ == "__main__":  # pragma: no cover
    app()
