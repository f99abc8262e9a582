"""The FastAPI application of ``harvestman serve``.

``create_app`` takes open stores (and optionally a scheduler) and returns the app; the
lifespan runs the scheduler beside the API when asked (``run_scheduler``) and stops it, the
SSE streams and the rate limiter on shutdown. OpenAPI is at ``/openapi.json``, the docs at
``/docs``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from fastapi import FastAPI

from harvestman import __version__
from harvestman.api import errors
from harvestman.api.auth import resolve_secret
from harvestman.api.context import ApiContext
from harvestman.api.ratelimit import Limiter, MemoryLimiter, RedisLimiter
from harvestman.api.routes import crawl, events, executions, health, jobs, metrics, sources
from harvestman.api.routes import scheduler as scheduler_routes
from harvestman.api.safety import UrlGuard
from harvestman.api.settings import ApiSettings

if TYPE_CHECKING:
    from harvestman.config import Settings
    from harvestman.jobs import JobStore, Scheduler
    from harvestman.store import SqlStore

log = logging.getLogger(__name__)


def make_limiter(settings: ApiSettings) -> Limiter:
    """Redis sliding windows when Redis is configured, else in memory."""
    if settings.redis_url:
        return RedisLimiter(settings.redis_url, settings.rate_window, prefix=settings.redis_prefix)
    return MemoryLimiter(settings.rate_window)


def create_app(
    settings: Settings,
    *,
    sql_store: SqlStore,
    job_store: JobStore,
    scheduler: Scheduler | None = None,
    api_settings: ApiSettings | None = None,
    run_scheduler: bool = False,
    limiter: Limiter | None = None,
) -> FastAPI:
    """The API over open stores.

    ``api_settings`` default to ``ApiSettings.from_env()``; a missing or default JWT secret
    outside dev mode raises ConfigError here, so the service refuses to start.
    ``run_scheduler`` runs ``scheduler.run()`` for the app's lifetime.
    """
    api_settings = api_settings or ApiSettings.from_env()
    if api_settings.redis_url is None and settings.redis_url:
        api_settings.redis_url = settings.redis_url
    ctx = ApiContext(
        settings=api_settings,
        crawler_settings=settings,
        sql_store=sql_store,
        job_store=job_store,
        scheduler=scheduler,
        limiter=limiter or make_limiter(api_settings),
        jwt_secret=resolve_secret(api_settings.jwt_secret, dev=api_settings.dev),
        guard=UrlGuard(api_settings.allow_networks),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        task = None
        if run_scheduler and scheduler is not None:
            task = asyncio.create_task(scheduler.run(), name="scheduler")
        try:
            yield
        finally:
            ctx.shutdown.set()
            if task is not None and scheduler is not None:
                scheduler.stop()
                await task
            await ctx.limiter.close()

    app = FastAPI(
        title="Harvestman",
        version=__version__,
        description="The crawl service: sources, recurring jobs, the scheduler, the crawl store.",
        lifespan=lifespan,
    )
    app.state.ctx = ctx
    errors.install(app)
    routers = (health, sources, jobs, executions, scheduler_routes, crawl, events, metrics)
    for module in routers:
        app.include_router(module.router)
    return app
