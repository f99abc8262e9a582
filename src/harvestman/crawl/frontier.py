"""The frontier's scheduling policy: which URL is fetched next, and when.

The store holds every URL's state; the frontier holds, in memory, only a small leased buffer per
host and each host's politeness clock. It hands out a URL only when its host is ready: fewer
than ``per_host_concurrency`` requests in flight there, and ``delay`` seconds since the last
request to it started. Buffers are refilled by batched leases from the store, sized so that a
lease never outlives what the host's delay lets us fetch in half the lease time.

Operators' per-host settings (``apply_controls``, re-read by crawl/controls.py) pause a host,
raise its delay, change its concurrency or its priority, in this process, from the next request.

One consumer (the crawler's dispatcher) calls ``next``; fetch tasks call ``release`` when their
request is over, and the crawler calls ``settle`` once a request's outcome is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import math
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from harvestman.errors import StoreError
from harvestman.records import CrawlRequest, DomainControl
from harvestman.store import FrontierStore

log = logging.getLogger(__name__)

_LEASE_HOSTS_PER_CALL = 200
# A host whose buffer ran empty while its lease was on the way (it could have sent a request
# and had none) leases twice as many rows the next time, up to this many times the lease batch.
# A lease waits behind the store's batch writes (30-100 ms on SQLite, 2 cores): a host without
# a delay drains 64 rows faster than that, and the dispatcher starved on 19% of a 20,000-page
# crawl's time. The politeness bound of ``_lease_size`` still applies.
MAX_LEASE_GROWTH = 8

_PAGINATED = re.compile(r"[?&](page|p|pg|offset|start)=\d+|/page/\d+", re.IGNORECASE)
_ARCHIVE = re.compile(r"/(archives?|tags?|category|categories)(/|$)|/\d{4}/(\d{2}/)?$")


def priority_for(url: str, depth: int, *, is_seed: bool = False) -> int:
    """3 for seeds, homepages and shallow pages; 1 for paginated, archive and deep pages; else 2.

    >>> priority_for("https://a.example/", 4)
    3
    >>> priority_for("https://a.example/blog?page=3", 3)
    1
    >>> priority_for("https://a.example/post/1", 3)
    2
    """
    if is_seed or depth <= 2:
        return 3
    path_start = url.find("/", url.find("//") + 2)
    if path_start == -1 or url[path_start:] in ("/", "/index.html"):
        return 3
    if depth > 5 or _PAGINATED.search(url) or _ARCHIVE.search(url):
        return 1
    return 2


@dataclass(slots=True, eq=False)
class HostQueue:
    """One host's leased buffer and politeness clock."""

    host: str
    delay: float  # in force: the larger of site_delay and the operator's
    site_delay: float = 0.0  # the configured default, or robots.txt's Crawl-delay
    operator_delay: float | None = None  # domain_settings.crawl_delay
    concurrency: int | None = None  # domain_settings.concurrency (None: the crawl's)
    paused: bool = False  # domain_settings.paused: nothing leased nor handed out
    priority: int = 0  # domain_settings.priority: ahead of hosts ready at the same time
    buffer: deque[CrawlRequest] = field(default_factory=deque)
    active: int = 0
    next_allowed: float = 0.0
    previous_allowed: float = 0.0
    due: float | None = None  # when the store's next pending row of this host is due
    work_version: int = 0  # bumped by add_work, so a racing "ran dry" answer can't erase news
    leasing: bool = False
    in_heap: bool = False
    lease_growth: int = 1  # times the lease batch this host leases (MAX_LEASE_GROWTH)


class Frontier:
    """Per-host politeness and batched leasing over a ``FrontierStore``."""

    def __init__(
        self,
        store: FrontierStore,
        crawl_id: int,
        worker_id: str,
        *,
        delay: float = 1.0,
        per_host_concurrency: int = 1,
        lease_seconds: float = 300.0,
        lease_batch: int = 256,
        on_host_dry: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.crawl_id = crawl_id
        self.worker_id = worker_id
        self.default_delay = delay
        self.per_host_concurrency = per_host_concurrency
        self.lease_seconds = lease_seconds
        self.lease_batch = lease_batch
        self.clock = clock
        self.on_host_dry = on_host_dry  # told when a host has nothing pending left
        self.hosts: dict[str, HostQueue] = {}
        self.in_flight = 0  # handed out by next() and not yet settled
        self.leased = 0
        # next() is waiting with nothing buffered, leasing or due: only outcomes not yet
        # written (their links, their settling) can bring work, so they should not wait.
        self.starved = False
        self.on_starved: Callable[[], None] | None = None
        self._ready: list[tuple[float, int, int, HostQueue]] = []
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self._lease_wanted: dict[str, HostQueue] = {}
        self._lease_event = asyncio.Event()
        self._leases_running = 0
        self._lease_task: asyncio.Task[None] | None = None
        self._lease_error: BaseException | None = None
        self._lease_failures = 0
        self._discoveries = 0
        self._controlled: set[str] = set()

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Learn which hosts have pending rows and start the leasing task."""
        for host, due in (await self.store.pending_hosts(self.crawl_id)).items():
            self.add_work(host, due)
        self._lease_task = asyncio.create_task(self._lease_loop(), name="frontier-lease")

    async def close(self) -> None:
        if self._lease_task is not None:
            self._lease_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._lease_task
            self._lease_task = None

    # -- what the crawler calls ---------------------------------------------------------------

    def add_work(self, host: str, due: float) -> None:
        """Tell the frontier the store has pending rows for ``host``, the first due at ``due``."""
        hq = self._host(host)
        hq.work_version += 1
        hq.due = due if hq.due is None else min(hq.due, due)
        self._want_lease(hq, self.clock())
        self._wake.set()

    def set_delay(self, host: str, delay: float) -> None:
        """Set the seconds between two requests to ``host`` (robots.txt Crawl-delay); an
        operator's larger delay for the host still wins."""
        hq = self._host(host)
        hq.site_delay = delay
        hq.delay = max(delay, hq.operator_delay or 0.0)

    def apply_controls(self, controls: Mapping[str, DomainControl]) -> None:
        """Take the operators' per-host settings (all of them: a host left out is back to the
        crawl's own). A delay, concurrency or priority counts from the next request handed
        out; a paused host keeps its buffered leases (returned when the crawl ends) and gets
        no new ones; an unpaused one is leased again at once."""
        now = self.clock()
        for host in self._controlled | set(controls):
            control = controls.get(host) or DomainControl(host)
            if host not in self.hosts and control == DomainControl(host):
                continue
            hq = self._host(host)
            was_paused = hq.paused
            hq.operator_delay = control.crawl_delay
            hq.delay = max(hq.site_delay, control.crawl_delay or 0.0)
            hq.concurrency = control.concurrency
            hq.priority = control.priority
            hq.paused = control.paused
            if was_paused and not hq.paused:
                self._schedule(hq)
                self._want_lease(hq, now)
        self._controlled = set(controls)
        self._wake.set()

    def concurrency_of(self, host: str) -> int:
        """Requests in flight allowed to ``host`` (the operator's, else the crawl's)."""
        return self._host(host).concurrency or self.per_host_concurrency

    def hold(self, host: str, until: float) -> None:
        """Hand out nothing of ``host`` before ``until`` (a cooldown)."""
        hq = self._host(host)
        hq.next_allowed = max(hq.next_allowed, until)

    def delay_of(self, host: str) -> float:
        return self._host(host).delay

    async def next(self) -> CrawlRequest | None:
        """The next request whose host is ready, waiting as long as needed.

        Returns None when the crawl is finished: nothing buffered, leased, in flight or pending.
        """
        while True:
            if self._lease_error is not None:
                raise self._lease_error
            now = self.clock()
            ready = self._ready
            while ready and ready[0][0] <= now:
                hq = heapq.heappop(ready)[3]
                hq.in_heap = False
                if hq.paused or not hq.buffer or hq.active >= self._limit(hq):
                    continue
                if hq.next_allowed > now:  # pushed back (Retry-After) while it was queued
                    self._schedule(hq)
                    continue
                request = hq.buffer.popleft()
                hq.active += 1
                hq.previous_allowed = hq.next_allowed
                hq.next_allowed = now + hq.delay
                self.in_flight += 1
                self._schedule(hq)
                self._want_lease(hq, now)
                return request
            if self.is_finished():
                return None
            timeout = self._seconds_to_next_event(now)
            self._wake.clear()
            if timeout is None and not self._lease_wanted and not self._leases_running:
                self.starved = True
                if self.on_starved is not None:
                    self.on_starved()
            try:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._wake.wait()
            finally:
                self.starved = False

    def release(
        self, request: CrawlRequest, *, fetched: bool = True, not_before: float = 0.0
    ) -> None:
        """The request's host slot is free again.

        The next request to the host waits ``delay`` from now, the end of this one: counting
        from its start would let a late send (a busy event loop) bring two requests closer than
        the delay at the server. ``fetched=False``: no request reached the host (robots denied
        it, say), so the delay it reserved is given back. ``not_before``: the host asked us to
        wait (Retry-After).
        """
        hq = self._host(request.host)
        hq.active -= 1
        if not fetched:
            if hq.active == 0:
                hq.next_allowed = hq.previous_allowed
        elif hq.delay > 0:
            hq.next_allowed = max(hq.next_allowed, self.clock() + hq.delay)
        if not_before > hq.next_allowed:
            hq.next_allowed = not_before
        self._schedule(hq)
        self._wake.set()

    def requeue(self, request: CrawlRequest, *, not_before: float = 0.0) -> None:
        """Put a handed-out request back at the front of its host's buffer (still leased)."""
        hq = self._host(request.host)
        hq.buffer.appendleft(request)
        self.in_flight -= 1
        self.release(request, not_before=not_before)

    def settle(self, count: int = 1) -> None:
        """``count`` handed-out requests have had their outcomes written to the store."""
        self.in_flight -= count
        self._wake.set()

    def begin_discovery(self) -> None:
        """Something is looking for more work: the crawl is not finished until it ends."""
        self._discoveries += 1

    def end_discovery(self) -> None:
        self._discoveries -= 1
        self._wake.set()

    def is_finished(self) -> bool:
        """Nothing in flight, buffered or pending, paused hosts aside: a paused host's URLs
        stay pending for a later run (or until it is unpaused while this one lasts)."""
        if self.in_flight or self._lease_wanted or self._leases_running:
            return False
        if self._discoveries:
            return False
        if any(not entry[3].paused for entry in self._ready):
            return False
        return all(hq.paused or (not hq.buffer and hq.due is None) for hq in self.hosts.values())

    @property
    def buffered(self) -> int:
        return sum(len(hq.buffer) for hq in self.hosts.values())

    # -- internals ----------------------------------------------------------------------------

    def _host(self, host: str) -> HostQueue:
        hq = self.hosts.get(host)
        if hq is None:
            hq = self.hosts[host] = HostQueue(host, self.default_delay, self.default_delay)
        return hq

    def _limit(self, hq: HostQueue) -> int:
        return hq.concurrency or self.per_host_concurrency

    def _schedule(self, hq: HostQueue) -> None:
        if hq.paused or hq.in_heap or not hq.buffer or hq.active >= self._limit(hq):
            return
        hq.in_heap = True
        # Of hosts ready at the same time, the one with the higher priority goes first.
        heapq.heappush(self._ready, (hq.next_allowed, -hq.priority, next(self._seq), hq))

    def _lease_size(self, hq: HostQueue) -> int:
        # Never lease more than the host's politeness lets us fetch in half a lease period.
        size = self.lease_batch * hq.lease_growth
        if hq.delay <= 0:
            return size
        fetchable = math.floor(self.lease_seconds / 2 / hq.delay) * self._limit(hq)
        return max(1, min(size, fetchable))

    def _grow_if_starved(self, hq: HostQueue, had: int, wanted: int, got: int, now: float) -> None:
        """Double the host's next leases if it had rows when this lease was asked for, handed
        them all out before it came back and could have sent another, and the store had more
        (a host that ran dry in the store would not gain)."""
        drained = had > 0 and not hq.buffer
        starved = drained and hq.active < self._limit(hq) and hq.next_allowed <= now
        if starved and got >= wanted:
            hq.lease_growth = min(MAX_LEASE_GROWTH, hq.lease_growth * 2)

    def _want_lease(self, hq: HostQueue, now: float) -> None:
        if hq.paused or hq.leasing or hq.due is None or hq.due > now:
            return
        low_water = max(self._limit(hq), self._lease_size(hq) // 2)
        if len(hq.buffer) < low_water and hq.host not in self._lease_wanted:
            self._lease_wanted[hq.host] = hq
            self._lease_event.set()

    def _seconds_to_next_event(self, now: float) -> float | None:
        times = []
        if self._ready:
            times.append(self._ready[0][0])
        # A paused host's buffer waits for apply_controls, which wakes the dispatcher.
        for hq in self.hosts.values():
            if hq.due is not None and not hq.leasing and not hq.paused:
                if hq.due <= now:
                    self._want_lease(hq, now)
                else:
                    times.append(hq.due)
        if not times:
            return None
        return max(0.0, min(times) - now) + 0.001

    async def _lease_loop(self) -> None:
        try:
            while True:
                await self._lease_event.wait()
                self._lease_event.clear()
                while self._lease_wanted:
                    # Hosts with a higher operator priority are leased first.
                    ordered = sorted(self._lease_wanted.items(), key=lambda kv: -kv[1].priority)
                    batch = dict(itertools.islice(ordered, _LEASE_HOSTS_PER_CALL))
                    for host in batch:
                        del self._lease_wanted[host]
                    await self._lease(list(batch.values()))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # surfaced to the dispatcher by next()
            self._lease_error = exc
            self._wake.set()
            raise

    async def _lease(self, hosts: list[HostQueue]) -> None:
        now = self.clock()
        wanted = {hq.host: self._lease_size(hq) for hq in hosts}
        had = {hq.host: len(hq.buffer) for hq in hosts}
        versions = {hq.host: hq.work_version for hq in hosts}
        for hq in hosts:
            hq.leasing = True
        self._leases_running += 1
        try:
            leased, dry = await self.store.lease(
                self.crawl_id, wanted, now, now + self.lease_seconds, self.worker_id
            )
        except StoreError as exc:
            # The store is away (a database restart, say): ask again after a pause.
            self._lease_failures += 1
            wait = min(30.0, 0.5 * 2**self._lease_failures)
            log.warning("leasing failed (%s); retrying in %.1f s", exc, wait)
            await asyncio.sleep(wait)
            for hq in hosts:
                self._lease_wanted.setdefault(hq.host, hq)
            return
        finally:
            self._leases_running -= 1
            for hq in hosts:
                hq.leasing = False
        self._lease_failures = 0
        self.leased += len(leased)
        got = Counter(request.host for request in leased)
        returned = self.clock()
        for hq in hosts:
            self._grow_if_starved(hq, had[hq.host], wanted[hq.host], got[hq.host], returned)
        for request in leased:
            self._host(request.host).buffer.append(request)
        for hq in hosts:
            if hq.host in dry and hq.work_version == versions[hq.host]:
                hq.due = dry[hq.host]
                if hq.due is None and self.on_host_dry is not None:
                    self.on_host_dry(hq.host)
            self._schedule(hq)
        self._wake.set()
