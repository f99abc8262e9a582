"""An outage of something a process depends on (the store): said once when it begins and once
when it ends, and waited out by whoever needs it, rather than retried in a loop.

One prober finds the end (the worker's renewal loop, every ``broker_renew_interval``); the
others ``wait`` for it. 57,685 "requeued" warnings in a 32 s PostgreSQL outage, three workers
burning a core between them, were what retrying each message at once cost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


class Outage:
    """Whether ``what`` is away; ``failed`` and ``recovered`` log only when that changes."""

    def __init__(self, what: str, clock: Callable[[], float]) -> None:
        self.what = what
        self.clock = clock
        self.since: float | None = None  # when the current outage began
        self.back_at: float | None = None  # when the last one ended
        self.outages = 0
        self._back = asyncio.Event()
        self._back.set()

    @property
    def is_down(self) -> bool:
        return self.since is not None

    def failed(self, exc: BaseException) -> None:
        if self.since is not None:
            return
        self.since = self.clock()
        self.outages += 1
        self._back.clear()
        log.warning("%s unreachable, waiting for it: %s", self.what, exc)

    def recovered(self) -> None:
        if self.since is None:
            return
        log.warning("%s reachable again after %.1f s", self.what, self.clock() - self.since)
        self.since = None
        self.back_at = self.clock()
        self._back.set()

    async def wait(self, stopping: asyncio.Event) -> None:
        """Until ``what`` is back or ``stopping`` is set."""
        if not self.is_down or stopping.is_set():
            return
        waits = [asyncio.ensure_future(self._back.wait()), asyncio.ensure_future(stopping.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pending in waits:
                pending.cancel()
