"""Redis coordination for many workers, falling back to the store when Redis is away.

Politeness: a host has ``concurrency`` slot keys and one "next" key. Taking a request means
``SET slot token NX PX hold`` on a free slot while the next key is absent; giving it back deletes
the slot (only if the token still owns it) and sets the next key for ``delay`` ms. So across all
workers a host sees at most ``concurrency`` requests at once and, after each, a pause of its
delay. Both steps are Lua scripts (atomic in Redis). Keys carry a ``{host}`` hash tag so a
host's keys stay on one Redis Cluster slot.

When Redis fails the coordinator says so once, uses the store's gate (``domains.busy_until`` /
``next_allowed_at``, one request at a time per host) and treats every URL as unseen (the store's
unique index still de-duplicates), and tries Redis again every ``retry_seconds``.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError
from redis.typing import EncodableT, FieldT

from harvestman.coord.interfaces import Coordinator, WorkerStatus
from harvestman.coord.store import StoreCoordinator
from harvestman.records import DomainRecord
from harvestman.store import HostRecords

log = logging.getLogger(__name__)

# Seen-set members are the first 20 hex digits (80 bits) of the URL hash: collisions stay
# negligible at billions of URLs and each member costs half the memory of a full hash.
SEEN_DIGITS = 20

_ACQUIRE = """
local wait = redis.call('PTTL', KEYS[1])
if wait > 0 then return wait end
local soonest = -1
for i = 2, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then return -i end
  local ttl = redis.call('PTTL', KEYS[i])
  if ttl > 0 and (soonest < 0 or ttl < soonest) then soonest = ttl end
end
return soonest
"""

_RELEASE = """
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
if tonumber(ARGV[2]) > 0 then redis.call('SET', KEYS[1], '1', 'PX', ARGV[2]) end
return 1
"""

# While every slot of a host is busy we do not know when one frees: poll at most this often.
_BUSY_POLL = 0.05


def _text(value: str | bytes) -> str:
    """A reply as text (the client decodes replies; its types say they may be bytes)."""
    return value if isinstance(value, str) else value.decode()


class RedisCoordinator(Coordinator):
    """Coordination through one Redis, with the store as fallback."""

    shared = True

    def __init__(
        self,
        redis_url: str,
        store: HostRecords,
        *,
        prefix: str = "harvestman",
        worker_id: str = "",
        retry_seconds: float = 5.0,
        seen_ttl: float = 7 * 86400.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.redis = aioredis.from_url(
            redis_url, socket_timeout=2.0, socket_connect_timeout=2.0, decode_responses=True
        )
        self.store = store
        self.prefix = prefix
        self.worker_id = worker_id
        self.retry_seconds = retry_seconds
        self.seen_ttl = seen_ttl
        self.clock = clock
        self.fallbacks = 0
        self._down_until = 0.0
        self._tokens = itertools.count()
        self.fallback = StoreCoordinator(store, clock)
        self._acquire = self.redis.register_script(_ACQUIRE)
        self._release = self.redis.register_script(_RELEASE)

    # -- health -------------------------------------------------------------------------------

    @property
    def available(self) -> bool:
        return self.clock() >= self._down_until

    def _failed(self, exc: Exception) -> None:
        if self._down_until == 0.0:
            log.warning(
                "Redis unavailable (%s): using the store for politeness and de-duplication", exc
            )
        self._down_until = self.clock() + self.retry_seconds
        self.fallbacks += 1

    def _succeeded(self) -> None:
        if self._down_until != 0.0:
            log.warning("Redis is back: coordination returns to it")
            self._down_until = 0.0

    def _key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    # -- politeness ---------------------------------------------------------------------------

    async def acquire_host(
        self, host: str, concurrency: int, hold: float
    ) -> tuple[str | None, float]:
        if self.available:
            token = f"{self.worker_id}:{next(self._tokens)}"
            keys = [self._key("polite", f"{{{host}}}", "next")]
            keys += [self._key("polite", f"{{{host}}}", str(i)) for i in range(max(1, concurrency))]
            try:
                answer = int(await self._acquire(keys=keys, args=[token, int(hold * 1000)]))
            except RedisError as exc:
                self._failed(exc)
            else:
                self._succeeded()
                if answer < 0:  # -index of the slot taken
                    return f"{-answer - 2}|{token}", 0.0
                return None, answer / 1000 if answer > 0 else _BUSY_POLL
        return await self.fallback.acquire_host(host, concurrency, hold)

    async def release_host(self, host: str, token: str, delay: float) -> None:
        if token == "store":
            await self.fallback.release_host(host, token, delay)
            return
        slot, _, owner = token.partition("|")
        keys = [
            self._key("polite", f"{{{host}}}", "next"),
            self._key("polite", f"{{{host}}}", slot),
        ]
        try:
            await self._release(keys=keys, args=[owner, int(delay * 1000)])
        except RedisError as exc:
            self._failed(exc)  # the slot expires by itself after its hold time

    # -- seen URLs ----------------------------------------------------------------------------

    async def unseen(self, namespace: str, hashes: Sequence[str]) -> list[bool]:
        if not hashes or not self.available:
            return [True] * len(hashes)
        try:
            known = await self.redis.smismember(
                self._key("seen", namespace), [h[:SEEN_DIGITS] for h in hashes]
            )
        except RedisError as exc:
            self._failed(exc)
            return [True] * len(hashes)
        self._succeeded()
        return [not flag for flag in known]

    async def mark_seen(self, namespace: str, hashes: Sequence[str]) -> None:
        if not hashes or not self.available:
            return
        key = self._key("seen", namespace)
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.sadd(key, *[h[:SEEN_DIGITS] for h in hashes])
                pipe.expire(key, int(self.seen_ttl))
                await pipe.execute()
        except RedisError as exc:
            self._failed(exc)

    # -- robots.txt ---------------------------------------------------------------------------

    async def get_robots(self, host: str) -> DomainRecord | None:
        if not self.available:
            return None
        try:
            raw = await self.redis.get(self._key("robots", host))
        except RedisError as exc:
            self._failed(exc)
            return None
        return DomainRecord(**json.loads(raw)) if raw else None

    async def put_robots(self, record: DomainRecord, ttl: float) -> None:
        if not self.available or ttl <= 0:
            return
        try:
            await self.redis.set(
                self._key("robots", record.host), json.dumps(asdict(record)), px=int(ttl * 1000)
            )
        except RedisError as exc:
            self._failed(exc)

    # -- workers ------------------------------------------------------------------------------

    async def beat(self, status: WorkerStatus, ttl: float) -> None:
        if not self.available:
            return
        try:
            await self.redis.set(
                self._key("worker", status.worker_id), json.dumps(asdict(status)),
                px=int(ttl * 1000),
            )  # fmt: skip
        except RedisError as exc:
            self._failed(exc)

    async def leave(self, worker_id: str) -> None:
        if not self.available:
            return
        try:
            await self.redis.delete(self._key("worker", worker_id))
        except RedisError as exc:
            self._failed(exc)  # the beat expires by itself

    async def workers(self) -> list[WorkerStatus]:
        try:
            keys = [key async for key in self.redis.scan_iter(self._key("worker", "*"), count=500)]
            values = await self.redis.mget(keys) if keys else []
        except RedisError as exc:
            self._failed(exc)
            return []
        return [WorkerStatus(**json.loads(v)) for v in values if v]

    # -- circuit breakers ---------------------------------------------------------------------

    async def put_breakers(self, changes: dict[str, dict[str, Any] | None]) -> None:
        if not changes or not self.available:
            return
        key = self._key("breakers")
        opened: dict[FieldT, EncodableT] = {
            host: json.dumps(rec) for host, rec in changes.items() if rec is not None
        }
        closed = [host for host, rec in changes.items() if rec is None]
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                if opened:
                    pipe.hset(key, mapping=opened)
                if closed:
                    pipe.hdel(key, *closed)
                await pipe.execute()
        except RedisError as exc:
            self._failed(exc)

    async def get_breakers(self) -> dict[str, dict[str, Any]]:
        if not self.available:
            return {}
        try:
            raw = await self.redis.hgetall(self._key("breakers"))
        except RedisError as exc:
            self._failed(exc)
            return {}
        return {_text(host): json.loads(value) for host, value in raw.items()}

    # -- crawl counters -----------------------------------------------------------------------

    async def add_counters(self, namespace: str, counters: dict[str, int]) -> None:
        if not counters or not self.available:
            return
        key = self._key("counters", namespace)
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                for name, n in counters.items():
                    pipe.hincrby(key, name, n)
                await pipe.execute()
        except RedisError as exc:
            self._failed(exc)

    async def counters(self, namespace: str) -> dict[str, int]:
        try:
            raw = await self.redis.hgetall(self._key("counters", namespace))
        except RedisError as exc:
            self._failed(exc)
            return {}
        return {_text(name): int(value) for name, value in raw.items()}

    # -- maintenance --------------------------------------------------------------------------

    async def rebuild(
        self, namespaces: dict[str, list[str]], robots: list[DomainRecord], ttl: float
    ) -> dict[str, Any]:
        """Replace the seen sets and robots cache with what the store holds."""
        counts: dict[str, Any] = {"seen": {}, "robots": 0}
        for namespace, hashes in namespaces.items():
            key = self._key("seen", namespace)
            await self.redis.delete(key)
            for start in range(0, len(hashes), 10_000):
                await self.redis.sadd(
                    key, *[h[:SEEN_DIGITS] for h in hashes[start : start + 10_000]]
                )
            if hashes:
                await self.redis.expire(key, int(self.seen_ttl))
            counts["seen"][namespace] = len(hashes)
        for record in robots:
            await self.put_robots(record, ttl)
            counts["robots"] += 1
        return counts

    async def close(self) -> None:
        await self.redis.aclose()
