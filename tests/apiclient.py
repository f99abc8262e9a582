"""An in-process API over a real SQLite store, with tokens for each role (API tests)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI

from harvestman.api.app import create_app
from harvestman.api.auth import Role, create_token
from harvestman.api.settings import ApiSettings
from harvestman.config import Settings
from harvestman.store import SqlStore
from harvestman.store.jobs.db import JobStore
from support.scheduling import make_scheduler

SECRET = "5c1e0a7f3b9d4e26a8f07b13c4d95e2f61a8b3c7"
GENEROUS = {
    "rate_anonymous": 10_000,
    "rate_user": 10_000,
    "rate_admin": 10_000,
    "rate_seed": 10_000,
}


@dataclass
class Api:
    app: FastAPI
    client: httpx.AsyncClient
    store: SqlStore
    jobs: JobStore
    admin: dict[str, str]
    user: dict[str, str]

    async def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.client.post(path, headers=self.admin, **kwargs)

    async def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.client.get(path, headers=self.user, **kwargs)


def bearer(role: Role, subject: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {create_token(SECRET, role, subject=subject)}"}


def api_settings(**overrides: Any) -> ApiSettings:
    values: dict[str, Any] = {
        "jwt_secret": SECRET,
        "allow_networks": ["127.0.0.0/8"],
        **GENEROUS,
        "sse_interval": 0.05,
    }
    values.update(overrides)
    return ApiSettings(**values)


@contextlib.asynccontextmanager
async def running_api(
    settings: Settings, *, scheduler: bool = False, **overrides: Any
) -> AsyncIterator[Api]:
    """The app over a fresh store; ``scheduler``: a Scheduler object (not running) is wired in."""
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        async with JobStore(store.engine) as job_store:
            sched = None
            if scheduler:
                from harvestman.jobs.runner import CrawlRunner

                sched = make_scheduler(job_store, CrawlRunner(settings, store))
            app = create_app(
                settings,
                sql_store=store,
                job_store=job_store,
                scheduler=sched,
                api_settings=api_settings(**overrides),
            )
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
                yield Api(app, client, store, job_store, bearer(Role.ADMIN), bearer(Role.USER))
