"""``harvestman serve`` and ``harvestman token create`` (mounted by ``harvestman.cli``)."""

from __future__ import annotations

import sys
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from harvestman.api.settings import ApiSettings
    from harvestman.config import Settings
from harvestman.errors import ConfigError, HarvestmanError

token_app = typer.Typer(help="API bearer tokens.", no_args_is_help=True)


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def serve(
    host: Annotated[str, typer.Option("--host", help="Interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port")] = 8060,
    dev: Annotated[
        bool, typer.Option("--dev", help="Development mode: a built-in JWT secret is allowed")
    ] = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    no_scheduler: Annotated[
        bool, typer.Option("--no-scheduler", help="Serve the API only; run no jobs here")
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=0,
            max=64,
            help="In-process crawl workers (serve_workers; unset: 1 on SQLite, 0 otherwise)",
        ),
    ] = None,
) -> None:
    """Run the API, the scheduler and its maintenance sweeps, and crawl workers, in one
    process."""
    from harvestman.api.auth import resolve_secret
    from harvestman.api.settings import ApiSettings
    from harvestman.cli.stores import load_settings

    if dev and not is_loopback(host):
        raise _fail(f"--dev signs with a published secret: it listens on loopback only, not {host}")
    settings = load_settings(config, db, database_url, serve_workers=workers)
    try:
        api_settings = ApiSettings.from_settings(settings, dev=dev)
        resolve_secret(api_settings.jwt_secret, dev=dev)  # refuse to start before binding
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    from harvestman.logconfig import configure_logging

    configure_logging(settings.log_format, settings.log_level)
    try:
        _run(_serve(settings, api_settings, host, port, not no_scheduler))
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    except HarvestmanError as exc:
        raise _fail(str(exc), 1) from None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is this machine only.

    >>> [is_loopback(h) for h in ("127.0.0.1", "::1", "localhost", "0.0.0.0", "10.1.2.3")]
    [True, True, True, False, False]
    """
    import ipaddress

    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _run(coro: Coroutine[Any, Any, None]) -> None:
    """On uvloop when installed (the ``speed`` extra): with httptools, which uvicorn then
    picks, a request costs ``serve`` about a third less CPU than on asyncio and h11."""
    try:
        import uvloop
    except ImportError:
        import asyncio

        asyncio.run(coro)
        return
    uvloop.run(coro)


async def _serve(
    settings: Settings, api_settings: ApiSettings, host: str, port: int, run_scheduler: bool
) -> None:
    import uvicorn

    from harvestman.api.app import create_app
    from harvestman.cli.stores import schema_cache
    from harvestman.crawl.workers import CrawlWorkers
    from harvestman.jobs.events import make_source_events
    from harvestman.jobs.runner import CrawlRunner
    from harvestman.jobs.wiring import build_scheduler
    from harvestman.store import SqlStore

    # A new SQLite store is a copy of the schema template, as for a crawl (store/template.py).
    async with SqlStore(settings.database_url, schema_template=schema_cache(settings)) as store:
        await store.prepare_schema()
        async with store.jobs() as job_store, _executions_queue(settings) as queue:
            events = make_source_events(api_settings.redis_url, api_settings.redis_prefix)
            scheduler = build_scheduler(
                settings, job_store, CrawlRunner(settings, store), events=events
            )
            if queue is not None:  # executions run on the workers: the leader publishes them
                from harvestman.jobs.dispatch import Dispatcher

                scheduler.dispatcher = Dispatcher(
                    job_store,
                    queue,
                    instance_id=scheduler.instance_id,
                    max_queued=settings.broker_max_queued,
                    republish_after=settings.broker_republish_seconds,
                )
            crawl_workers = CrawlWorkers.from_settings(settings, store, store.is_embedded)
            app = create_app(
                settings,
                sql_store=store,
                job_store=job_store,
                scheduler=scheduler,
                api_settings=api_settings,
                run_scheduler=run_scheduler,
                crawl_workers=crawl_workers if crawl_workers.count else None,
            )
            proxies = api_settings.trusted_proxies
            config = uvicorn.Config(
                app,
                host=host,
                port=port,
                log_level=settings.log_level.lower(),
                log_config=None,  # its records go through our handler (configure_logging)
                lifespan="on",
                # uvicorn believes X-Forwarded-For from 127.0.0.1 unless told otherwise, and
                # the client it names is who the rate limits count: only listed proxies.
                proxy_headers=bool(proxies),
                forwarded_allow_ips=list(proxies) if proxies else [],
            )
            try:
                await uvicorn.Server(config).serve()
            finally:
                await events.close()


def _executions_queue(settings: Settings) -> Any:
    """The broker's executions queue when ``broker_url`` is set (an async context manager)."""
    import contextlib

    if not settings.broker_url:
        return contextlib.nullcontext(None)
    from harvestman.jobs.broker import ExecutionQueue

    return ExecutionQueue(
        settings.broker_url,
        settings.broker_queue_prefix,
        prefetch=settings.broker_prefetch,
        publish_timeout=settings.broker_publish_timeout,
    )


@token_app.command("create")
def token_create(
    role: Annotated[str, typer.Option("--role", help="admin or user")] = "user",
    subject: Annotated[
        str | None, typer.Option("--subject", help="Who holds it [default: the role]")
    ] = None,
    days: Annotated[
        float | None,
        typer.Option("--days", help="Valid for this many days [default: api_token_days, 30]"),
    ] = None,
    dev: Annotated[bool, typer.Option("--dev", help="Sign with the dev secret")] = False,
    config: ConfigOption = None,
) -> None:
    """Print a bearer token signed with the api_jwt_secret setting (HARVESTMAN_API_JWT_SECRET)."""
    from harvestman.api.auth import Role, create_token, resolve_secret
    from harvestman.cli.stores import load_settings

    if role not in (Role.ADMIN.value, Role.USER.value):
        raise _fail("--role must be admin or user")
    try:
        settings = load_settings(config)
        secret = resolve_secret(settings.api_jwt_secret, dev=dev)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    days = settings.api_token_days if days is None else days
    if not 0 < days <= 3650:
        raise _fail("--days must be between 0 and 3650")
    sys.stdout.write(create_token(secret, Role(role), subject=subject, days=days) + "\n")


# Last, not first: importing harvestman.cli runs its command registration, which imports this
# module's serve and token_app; Typer reads these annotations only when it builds the command.
from harvestman.cli.options import ConfigOption, DatabaseUrlOption, DbOption  # noqa: E402
