"""Circuit-breaker states as the workers publish them in Redis, for the domains list.

Workers sharing a Redis keep every open (or half-open) breaker in one hash,
``<prefix>:breakers`` (``RedisCoordinator.put_breakers``); a closed breaker is deleted from it.
Without Redis, breakers live in each crawl's memory and the API does not know them: ``None``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger(__name__)


class BreakerStates:
    """Reads breaker records for some hosts: one HMGET a page of domains."""

    def __init__(self, redis_url: str, prefix: str) -> None:
        import redis.asyncio as aioredis

        self._redis: Any = aioredis.from_url(
            redis_url, socket_timeout=1.0, socket_connect_timeout=1.0, decode_responses=True
        )
        self._key = f"{prefix}:breakers"

    async def of(self, hosts: list[str]) -> dict[str, str] | None:
        """``host -> state`` (``closed`` when no record is held); None when Redis fails."""
        from redis.exceptions import RedisError

        if not hosts:
            return {}
        try:
            raw = await self._redis.hmget(self._key, hosts)
        except RedisError as exc:
            log.warning("breaker states unavailable: %s", exc)
            return None
        states = {}
        for host, value in zip(hosts, raw, strict=True):
            try:
                states[host] = json.loads(value)["state"] if value else "closed"
            except (ValueError, KeyError, TypeError):
                states[host] = "unknown"
        return states

    async def close(self) -> None:
        await self._redis.aclose()
