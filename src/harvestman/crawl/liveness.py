"""Liveness: this worker's heartbeat, the leases it extends, the leases of dead workers, and
the watchdog that notices a crawl that stopped moving.

Dead: a heartbeat older than the timeout, or a process on this machine that is gone. Their
leases return at once; expired leases of anyone return with the sweep.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

from harvestman.coord import Coordinator, WorkerStatus
from harvestman.crawl.run import CrawlRun
from harvestman.errors import StoreError
from harvestman.resilience import StallWatchdog, network_check

log = logging.getLogger(__name__)

FIRST_BEAT_SECONDS = 1.0  # after the start; then every heartbeat interval


@dataclass(frozen=True, slots=True)
class WatchdogLimits:
    """When the watchdog checks (see :class:`harvestman.resilience.StallWatchdog`)."""

    check_url: str | None  # None: the network state is unknown (never down)
    stall_seconds: float
    check_interval: float
    network_retry: float


class Liveness:
    """Beats, extends this worker's leases, and sweeps (see the module docstring).

    ``on_beat``: what else goes with a heartbeat (sharing breakers); ``on_sweep``: with a sweep
    (saving the session).
    """

    def __init__(
        self,
        run: CrawlRun,
        worker_id: str,
        status: Callable[[], WorkerStatus],
        *,
        heartbeat_interval: float,
        heartbeat_timeout: float,
        lease_seconds: float,
        sweep_interval: float,
        watchdog: WatchdogLimits,
    ) -> None:
        self.run = run
        self.worker_id = worker_id
        self.status = status
        self.heartbeat_interval = heartbeat_interval
        self.heartbeat_timeout = heartbeat_timeout
        self.lease_seconds = lease_seconds
        self.sweep_interval = sweep_interval
        self.limits = watchdog
        self.on_beat: list[Callable[[Coordinator], Awaitable[None]]] = []
        self.on_sweep: list[Callable[[], Awaitable[None]]] = []

    def watchdog(
        self,
        has_pending_work: Callable[[], bool],
        pause: Callable[[], None],
        resume: Callable[[], None],
    ) -> StallWatchdog:
        """The crawl's watchdog: pauses it while the network is down; raises
        ``StoreUnavailable`` when the store stays gone."""
        store, limits = self.run.store, self.limits
        return StallWatchdog(
            has_pending_work=has_pending_work,
            check_store=store.health.check,
            reconnect_store=store.health.reconnect,
            check_network=functools.partial(network_check, limits.check_url, 10.0),
            pause=pause,
            resume=resume,
            stall_seconds=limits.stall_seconds,
            check_interval=limits.check_interval,
            network_retry=limits.network_retry,
            clock=self.run.clock,
        )

    async def register(self, now: float) -> None:
        await self.run.store.registry.register_worker(
            self.worker_id, socket.gethostname(), os.getpid(), now
        )

    async def recover(self, now: float) -> None:
        """Return leases of dead workers at once; expired leases of anyone too."""
        store = self.run.store
        me = socket.gethostname()
        dead = [
            worker_id
            for worker_id, hostname, pid, beat in await store.registry.workers()
            if worker_id != self.worker_id
            and (beat < now - self.heartbeat_timeout or (hostname == me and not pid_alive(pid)))
        ]
        recovered = await store.frontier.recover(now, dead)
        await store.registry.unregister_workers(dead)
        if recovered:
            log.info("recovered %d URLs leased by stopped workers", recovered)
        self.run.stats.inc("frontier/recovered", recovered)

    async def loop(self, coordinator: Coordinator) -> None:
        """Beat, extend our leases, and sweep: stale leases and dead workers' leases return."""
        run = self.run
        interval = min(self.heartbeat_interval, self.lease_seconds / 4)
        next_sweep = run.clock() + self.sweep_interval
        # The first beat comes soon: the registration carries no figures, and a job's run of
        # a few pages ended before its first beat, so the dashboard never saw its pages/s.
        wait = min(interval, FIRST_BEAT_SECONDS)
        while True:
            await asyncio.sleep(wait)
            wait = interval
            now = run.clock()
            status = self.status()
            try:
                known = await run.store.registry.heartbeat(
                    self.worker_id, now, now + self.lease_seconds, asdict(status)
                )
                if not known:
                    # Others took us for dead (a heartbeat came too late) and returned our
                    # leases: what we finish now may be fetched twice, nothing is lost.
                    log.warning("this worker was taken for dead; registering again")
                    run.stats.inc("worker/revived")
                    await run.store.registry.register_worker(
                        self.worker_id, status.hostname, status.pid, now
                    )
                await coordinator.beat(status, self.heartbeat_timeout)
                for beat in self.on_beat:
                    await beat(coordinator)
                if now >= next_sweep:
                    next_sweep = now + self.sweep_interval
                    await self.recover(now)
                    for sweep in self.on_sweep:
                        await sweep()
            except StoreError as exc:  # the store is away; the flusher waits for it too
                log.warning("heartbeat failed: %s", exc)

    async def leave(self, coordinator: Coordinator) -> None:
        """Give this worker's leases back and leave (best effort when the store is gone)."""
        store = self.run.store
        await coordinator.leave(self.worker_id)
        try:
            released = await store.frontier.release(self.worker_id, self.run.clock())
            await store.registry.unregister_workers([self.worker_id])
        except StoreError as exc:
            log.warning("could not release leases (%s): they expire by themselves", exc)
            return
        if released:
            log.info("returned %d unfinished leased URLs to the frontier", released)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def worker_identity() -> str:
    """``host:pid:random``: unique per process, readable in the workers table."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
