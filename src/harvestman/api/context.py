"""What every route reads: the stores, the scheduler, the limiter and the settings."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import Request

from harvestman.api.auth import Principal, Role, VerifiedTokens
from harvestman.api.logins import SignInLimit
from harvestman.api.paging import CountCache
from harvestman.api.ratelimit import Limiter
from harvestman.api.safety import UrlGuard
from harvestman.api.settings import ApiSettings

if TYPE_CHECKING:
    from harvestman.api.breakers import BreakerStates
    from harvestman.config import Settings
    from harvestman.jobs.events import SourceEvents
    from harvestman.jobs.scheduler import Scheduler
    from harvestman.store import ServiceStore
    from harvestman.store.jobs.db import JobStore

T = TypeVar("T")


@dataclass(slots=True)
class ApiContext:
    settings: ApiSettings
    crawler_settings: Settings
    sql_store: ServiceStore  # the store's doors (``store.doors``)
    job_store: JobStore
    scheduler: Scheduler | None
    limiter: Limiter
    jwt_secret: str
    tokens: VerifiedTokens  # verified with jwt_secret
    guard: UrlGuard
    logins: SignInLimit  # on sql_store
    source_events: SourceEvents | None = None
    breakers: BreakerStates | None = None  # with Redis: the states workers publish
    counts: CountCache = field(default_factory=lambda: CountCache(5.0))
    crawl_ids: dict[str, int] = field(default_factory=dict)  # by name, once found
    started_at: float = field(default_factory=time.time)
    shutdown: asyncio.Event = field(default_factory=asyncio.Event)

    def limit_for(self, role: Role) -> int:
        return {
            Role.ANONYMOUS: self.settings.rate_anonymous,
            Role.USER: self.settings.rate_user,
            Role.ADMIN: self.settings.rate_admin,
        }[role]

    async def user_may_sign(self, principal: Principal) -> bool:
        """Whether a signed-in user's token is still good (enabled, issued since the last
        password change)."""
        assert principal.user is not None
        return await self.read(
            self.sql_store.accounts.token_is_current, principal.user, principal.issued_at
        )

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a synchronous read of the crawl store off the event loop."""
        return await self.sql_store.in_thread(fn, *args)


def context_of(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.ctx
    return ctx
