"""Per-client rate limits: a sliding window of ``limit`` requests per ``window`` seconds.

``MemoryLimiter`` keeps each client's request times in this process; ``RedisLimiter`` keeps
them in a Redis sorted set per client, checked and updated by one Lua script, so every
``serve`` instance shares the count. Only accepted requests are counted. A refusal is an
ApiError 429 with ``Retry-After`` (whole seconds until the oldest counted request leaves the
window). If Redis does not answer, the limiter falls back to memory rather than refuse.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from harvestman.api.errors import ApiError

log = logging.getLogger(__name__)

Clock = Callable[[], float]


class Limiter(Protocol):
    async def check(self, key: str, limit: int) -> None:
        """Count one request of ``key``; ApiError 429 when ``limit`` is reached."""
        ...

    async def close(self) -> None: ...


def _refuse(retry_after: float, limit: int, window: float) -> ApiError:
    seconds = max(1, math.ceil(retry_after))
    return ApiError(
        429,
        f"rate limit of {limit} requests per {window:g} s exceeded",
        details={"limit": limit, "window_seconds": window, "retry_after": seconds},
        headers={"Retry-After": str(seconds)},
    )


class MemoryLimiter:
    """A sliding-window log per key, in memory (one process)."""

    def __init__(self, window: float = 60.0, *, clock: Clock = time.monotonic) -> None:
        self.window = window
        self.clock = clock
        self._hits: dict[str, deque[float]] = {}

    async def check(self, key: str, limit: int) -> None:
        now = self.clock()
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= limit:
            raise _refuse(hits[0] + self.window - now, limit, self.window)
        hits.append(now)
        if len(self._hits) > 100_000:  # forget idle clients rather than grow without end
            self._forget(now)

    def _forget(self, now: float) -> None:
        for key in [k for k, v in self._hits.items() if not v or v[-1] <= now - self.window]:
            del self._hits[key]

    async def close(self) -> None:
        self._hits.clear()


# KEYS[1] the client's sorted set; ARGV: now (ms), window (ms), limit, member.
# Returns {1, 0} when counted, {0, ms until the oldest request leaves the window} when refused.
_SCRIPT = """
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
if redis.call('ZCARD', key) >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return {0, tonumber(oldest[2]) + window - now}
end
redis.call('ZADD', key, now, ARGV[4])
redis.call('PEXPIRE', key, window)
return {1, 0}
"""


class RedisLimiter:
    """The same window in Redis (``redis.asyncio``), shared by every instance."""

    def __init__(
        self,
        redis_url: str,
        window: float = 60.0,
        *,
        prefix: str = "harvestman",
        clock: Clock = time.time,
    ) -> None:
        import redis.asyncio as redis

        self.window = window
        self.prefix = prefix
        self.clock = clock
        self._redis: Any = redis.Redis.from_url(redis_url, socket_timeout=1.0)
        self._script = self._redis.register_script(_SCRIPT)
        self._fallback = MemoryLimiter(window)
        self._degraded = False

    async def check(self, key: str, limit: int) -> None:
        from redis.exceptions import RedisError

        now_ms = int(self.clock() * 1000)
        try:
            allowed, wait_ms = await self._script(
                keys=[f"{self.prefix}:ratelimit:{key}"],
                args=[now_ms, int(self.window * 1000), limit, f"{now_ms}-{uuid.uuid4().hex[:8]}"],
            )
        except (RedisError, OSError) as exc:
            if not self._degraded:
                log.warning("rate limits: Redis unavailable, counting in memory: %s", exc)
                self._degraded = True
            await self._fallback.check(key, limit)
            return
        self._degraded = False
        if not int(allowed):
            raise _refuse(int(wait_ms) / 1000, limit, self.window)

    async def close(self) -> None:
        await self._redis.aclose()
