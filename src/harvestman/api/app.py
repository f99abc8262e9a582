"""The FastAPI application of ``harvestman serve``.

``create_app`` takes open stores (and optionally a scheduler) and returns the app; the
lifespan runs the scheduler beside the API when asked (``run_scheduler``) and stops it, the
SSE streams and the rate limiter on shutdown. OpenAPI is at ``/openapi.json``, the docs at
``/docs``; the dashboard (``harvestman/web``, static files) at ``/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response
from starlette.types import Scope

from harvestman import __version__
from harvestman.api import errors
from harvestman.api.auth import VerifiedTokens, resolve_secret
from harvestman.api.context import ApiContext
from harvestman.api.headers import HarvestmanApi, add_docs
from harvestman.api.intake import RequestIntake
from harvestman.api.logins import SignInLimit
from harvestman.api.paging import CountCache
from harvestman.api.params import Anonymous
from harvestman.api.ratelimit import Limiter, MemoryLimiter, RedisLimiter
from harvestman.api.responses import SafeJSONResponse
from harvestman.api.routes import aliases as alias_routes
from harvestman.api.routes import controls as control_routes
from harvestman.api.routes import (
    crawl,
    events,
    executions,
    health,
    jobs,
    metrics,
    sources,
    workers,
)
from harvestman.api.routes import crawls as crawl_list_routes
from harvestman.api.routes import errors as error_routes
from harvestman.api.routes import frontier as frontier_routes
from harvestman.api.routes import login as login_routes
from harvestman.api.routes import pages as page_routes
from harvestman.api.routes import parsers as parser_routes
from harvestman.api.routes import products as product_routes
from harvestman.api.routes import scheduler as scheduler_routes
from harvestman.api.routes import search as search_routes
from harvestman.api.routes import storage as storage_routes
from harvestman.api.safety import UrlGuard
from harvestman.api.settings import ApiSettings
from harvestman.guard import NetworkGuard
from harvestman.urls import UrlNormalizer

if TYPE_CHECKING:
    from harvestman.api.breakers import BreakerStates
    from harvestman.config import Settings
    from harvestman.crawl.workers import CrawlWorkers
    from harvestman.jobs.events import SourceEvents
    from harvestman.jobs.scheduler import Scheduler
    from harvestman.store import ServiceStore
    from harvestman.store.jobs.db import JobStore

log = logging.getLogger(__name__)

WEB_DIR = Path(__file__).resolve().parent.parent / "web"
# The dashboard loads nothing from elsewhere and runs no inline script: page titles it shows
# come from crawled sites, so a slip in escaping must still not run their code.
DASHBOARD_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        "frame-ancestors 'none'; form-action 'self'"
    ),
    "Cache-Control": "no-cache",
}  # and the headers every answer has (headers.SecurityHeaders)


def make_limiter(settings: ApiSettings) -> Limiter:
    """Redis sliding windows when Redis is configured, else in memory."""
    if settings.redis_url:
        return RedisLimiter(settings.redis_url, settings.rate_window, prefix=settings.redis_prefix)
    return MemoryLimiter(settings.rate_window)


def _source_events(
    settings: ApiSettings, scheduler: Scheduler | None, given: SourceEvents | None
) -> SourceEvents:
    """The events a source toggle publishes: the scheduler's own when it has them, else a
    Redis stream (Redis configured) or in-process events, which the scheduler then follows."""
    from harvestman.jobs.events import make_source_events

    events = given or (scheduler.events if scheduler is not None else None)
    if events is None:
        events = make_source_events(settings.redis_url, settings.redis_prefix)
    if scheduler is not None and scheduler.events is None:
        scheduler.events = events
    return events


def _breaker_states(settings: ApiSettings) -> BreakerStates | None:
    if not settings.redis_url:
        return None
    from harvestman.api.breakers import BreakerStates

    return BreakerStates(settings.redis_url, settings.redis_prefix)


def create_app(
    settings: Settings,
    *,
    sql_store: ServiceStore,
    job_store: JobStore,
    scheduler: Scheduler | None = None,
    api_settings: ApiSettings | None = None,
    run_scheduler: bool = False,
    limiter: Limiter | None = None,
    source_events: SourceEvents | None = None,
    crawl_workers: CrawlWorkers | None = None,
) -> FastAPI:
    """The API over open stores.

    ``api_settings`` default to ``ApiSettings.from_settings(settings)``; a missing or default
    JWT secret outside dev mode raises ConfigError here, so the service refuses to start.
    ``source_events`` default to the scheduler's, else to ones made for the settings.
    ``run_scheduler`` runs ``scheduler.run()`` for the app's lifetime, and so do the
    ``crawl_workers`` (``serve --workers N``), both under one TaskGroup, stopped on shutdown.
    """
    api_settings = api_settings or ApiSettings.from_settings(settings)
    if api_settings.redis_url is None and settings.redis_url:
        api_settings.redis_url = settings.redis_url
    secret = resolve_secret(api_settings.jwt_secret, dev=api_settings.dev)
    ctx = ApiContext(
        settings=api_settings,
        crawler_settings=settings,
        sql_store=sql_store,
        job_store=job_store,
        scheduler=scheduler,
        limiter=limiter or make_limiter(api_settings),
        jwt_secret=secret,
        tokens=VerifiedTokens(secret),
        guard=UrlGuard(
            NetworkGuard(api_settings.allow_networks),
            UrlNormalizer.from_settings(settings),
            settings.pattern_max_length,
        ),
        source_events=_source_events(api_settings, scheduler, source_events),
        counts=CountCache(api_settings.count_cache_seconds),
        logins=SignInLimit(sql_store, api_settings.login_failures, api_settings.rate_window),
        breakers=_breaker_states(api_settings),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runs_scheduler = run_scheduler and scheduler is not None

        async def background() -> None:
            async with asyncio.TaskGroup() as group:
                if runs_scheduler and scheduler is not None:
                    group.create_task(scheduler.run(), name="scheduler")
                if crawl_workers is not None:
                    group.create_task(crawl_workers.run(), name="crawl-workers")

        task = None
        if runs_scheduler or crawl_workers is not None:
            task = asyncio.create_task(background(), name="serve-background")
        try:
            yield
        finally:
            ctx.shutdown.set()
            if runs_scheduler and scheduler is not None:
                scheduler.stop()
            if crawl_workers is not None:
                crawl_workers.stop()
            if task is not None:
                await task
            await ctx.limiter.close()
            await ctx.counts.close()
            if ctx.breakers is not None:
                await ctx.breakers.close()
            if ctx.source_events is not None and source_events is None:
                await ctx.source_events.close()

    app = HarvestmanApi(
        title="Harvestman",
        version=__version__,
        description="The crawl service: sources, recurring jobs, the scheduler, the crawl store.",
        lifespan=lifespan,
        default_response_class=SafeJSONResponse,
        docs_url=None,  # add_docs: the pages with their own security policy
        redoc_url=None,
    )
    app.state.ctx = ctx
    errors.install(app)
    app.add_middleware(
        RequestIntake,
        max_body_bytes=api_settings.max_body_bytes,
        max_json_depth=api_settings.max_json_depth,
        max_text_length=api_settings.max_text_length,
    )
    # FastAPI tries the routes in this order: the product list, the busiest read, goes first
    # (behind a dozen routers its matching was ~0.15 ms of a ~2 ms request). No other router
    # has a path under /api/products.
    routers = (
        product_routes,
        health,
        sources,
        jobs,
        executions,
        scheduler_routes,
        crawl,
        crawl_list_routes,
        events,
        metrics,
        parser_routes,
        error_routes,
        search_routes,
        login_routes,
        storage_routes,
        control_routes,
        workers,
        frontier_routes,
        page_routes,
        alias_routes,
    )
    for module in routers:
        app.include_router(module.router)
    _add_dashboard(app)
    add_docs(app)
    return app


def _add_dashboard(app: FastAPI) -> None:
    """``/``: the dashboard's page, its assets under ``/dashboard/``, and the whoami it signs
    in with."""

    @app.get("/api/v1/auth/whoami", tags=["auth"])
    async def whoami(principal: Anonymous) -> dict[str, str | None]:
        """The caller's role and the token's subject (anonymous without a token)."""
        return {"role": principal.role.value, "subject": principal.subject}

    @app.get("/", include_in_schema=False)
    async def dashboard() -> FileResponse:
        return FileResponse(WEB_DIR / "index.html", headers=DASHBOARD_HEADERS)

    app.mount("/dashboard", DashboardFiles(directory=WEB_DIR), name="dashboard")


class DashboardFiles(StaticFiles):
    """The dashboard's files, each with the dashboard's security headers: its page is also
    reachable as ``/dashboard/index.html``, and must not be framed or run foreign code there
    either."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(DASHBOARD_HEADERS)
        return response
