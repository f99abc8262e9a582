"""Source events: a source enabled or disabled reaches every scheduler instance at once.

The API publishes; each ``Scheduler.run`` subscribes and gives the source its recurring job or
cancels the one it has (``Scheduler.source_changed``, idempotent and safe beside other
instances). Two implementations of one small seam:

- ``LocalSourceEvents``: in one process (the embedded default), a queue per subscriber.
- ``RedisSourceEvents``: a Redis stream. ``publish`` is an XADD (capped at ~10,000 entries);
  each subscriber XREADs from its own position, starting at the stream's last entry when it
  subscribes, so every instance sees every later event once, however many there are.

An event lost while Redis is away is repaired by the reconciliation
(``POST /api/v1/admin/sync-enabled-sources``); the publisher logs it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from harvestman.jobs.errors import EventsUnavailable

log = logging.getLogger(__name__)

STREAM_MAXLEN = 10_000


@dataclass(frozen=True, slots=True)
class SourceEvent:
    """Source ``source_id`` was enabled or disabled; ``origin``: the scheduler instance that
    already acted on it (it skips its own events)."""

    source_id: int
    enabled: bool
    origin: str = ""


class Subscription(Protocol):
    """The events published after ``subscribe``, in order."""

    async def get(self, wait: float) -> list[SourceEvent]:
        """The next events; an empty list when none came within ``wait`` seconds."""
        ...

    async def close(self) -> None: ...


class SourceEvents(Protocol):
    """Contract: every subscription sees every event published after it was made, once.
    ``publish`` raises EventsUnavailable when the event could not be sent."""

    async def publish(self, event: SourceEvent) -> None: ...

    async def subscribe(self) -> Subscription: ...

    async def close(self) -> None: ...


class _QueueSubscription:
    def __init__(self, owner: LocalSourceEvents) -> None:
        self._owner = owner
        self.queue: asyncio.Queue[SourceEvent] = asyncio.Queue()

    async def get(self, wait: float) -> list[SourceEvent]:
        try:
            first = await asyncio.wait_for(self.queue.get(), wait)
        except TimeoutError:
            return []
        events = [first]
        while not self.queue.empty():
            events.append(self.queue.get_nowait())
        return events

    async def close(self) -> None:
        self._owner.subscribers.discard(self)


class LocalSourceEvents:
    """Events within one process."""

    def __init__(self) -> None:
        self.subscribers: set[_QueueSubscription] = set()

    async def publish(self, event: SourceEvent) -> None:
        for subscriber in list(self.subscribers):
            subscriber.queue.put_nowait(event)

    async def subscribe(self) -> Subscription:
        subscription = _QueueSubscription(self)
        self.subscribers.add(subscription)
        return subscription

    async def close(self) -> None:
        self.subscribers.clear()


class _StreamSubscription:
    def __init__(self, redis: Any, key: str, position: str) -> None:
        self._redis = redis
        self._key = key
        self.position = position

    async def get(self, wait: float) -> list[SourceEvent]:
        from redis.exceptions import RedisError

        try:
            answer = await self._redis.xread(
                {self._key: self.position}, count=100, block=max(1, int(wait * 1000))
            )
        except (RedisError, OSError) as exc:
            log.warning("source events: reading the Redis stream failed: %s", exc)
            await asyncio.sleep(wait)  # the position is kept: nothing is skipped
            return []
        events = []
        for _key, entries in answer or ():
            for entry_id, fields in entries:
                self.position = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                try:
                    source_id, enabled = int(fields[b"source_id"]), fields[b"enabled"] == b"1"
                    origin = fields.get(b"origin", b"").decode()
                    events.append(SourceEvent(source_id, enabled, origin))
                except (KeyError, ValueError, UnicodeDecodeError):
                    log.warning("source events: malformed entry %s skipped", self.position)
        return events

    async def close(self) -> None:
        await self._redis.aclose()


class RedisSourceEvents:
    """Events through the Redis stream ``{prefix}:source-events``."""

    def __init__(self, redis_url: str, *, prefix: str = "harvestman") -> None:
        self.redis_url = redis_url
        self.key = f"{prefix}:source-events"
        self._redis = self._connect(socket_timeout=2.0)

    def _connect(self, **options: Any) -> Any:
        import redis.asyncio as aioredis

        return aioredis.Redis.from_url(self.redis_url, **options)

    async def publish(self, event: SourceEvent) -> None:
        from redis.exceptions import RedisError

        fields = {
            "source_id": str(event.source_id),
            "enabled": "1" if event.enabled else "0",
            "origin": event.origin,
        }
        try:
            await self._redis.xadd(self.key, fields, maxlen=STREAM_MAXLEN, approximate=True)
        except (RedisError, OSError) as exc:
            raise EventsUnavailable(f"publishing a source event to Redis failed: {exc}") from exc

    async def subscribe(self) -> Subscription:
        """A subscription from the stream's current end (its own connection: XREAD blocks)."""
        from redis.exceptions import RedisError

        redis = self._connect(socket_timeout=None)
        try:
            last = await redis.xrevrange(self.key, count=1)
        except (RedisError, OSError) as exc:
            await redis.aclose()
            raise EventsUnavailable(f"subscribing to source events failed: {exc}") from exc
        position = last[0][0].decode() if last else "0-0"
        return _StreamSubscription(redis, self.key, position)

    async def close(self) -> None:
        await self._redis.aclose()


def make_source_events(redis_url: str | None, prefix: str = "harvestman") -> SourceEvents:
    """A Redis stream when Redis is configured, else in-process events."""
    if redis_url:
        return RedisSourceEvents(redis_url, prefix=prefix)
    return LocalSourceEvents()
