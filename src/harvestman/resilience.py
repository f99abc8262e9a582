"""Staying alive: a circuit breaker per domain, and a watchdog that notices and diagnoses stalls.

``CircuitBreakers`` keeps one breaker per host key; the crawler asks ``allow(host)`` before a fetch
and reports each result with ``record``. Breaker records live behind the small ``BreakerStore``
seam (in memory here; a Redis store can share them between workers later).

``StallWatchdog`` is told about every action (``touch``); when nothing happens for
``stall_seconds`` while work is pending it checks the store (reconnecting once, else raising
``StoreUnavailable``: the process then exits with ``STALL_EXIT_CODE``) and the network (pausing
the crawl until a check URL answers again). Nothing here imports the crawler: every check and
action is an injected callable.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Any, Protocol

import aiohttp

from harvestman.errors import STALL_EXIT_CODE, ContentRejected, NetworkError, StoreUnavailable

__all__ = [
    "STALL_EXIT_CODE",
    "BreakerRecord",
    "BreakerState",
    "BreakerStore",
    "CircuitBreakers",
    "MemoryBreakerStore",
    "NetworkState",
    "StallWatchdog",
    "StoreUnavailable",
    "WatchdogState",
    "WatchdogStatus",
    "is_breaker_failure",
    "network_check",
]

log = logging.getLogger(__name__)

# -- circuit breakers ---------------------------------------------------------------------------


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(slots=True)
class BreakerRecord:
    """One host's breaker. ``probe_until``: a half-open probe is out until then.
    ``down_since``: when it first opened; kept while failed probes re-open it, cleared with the
    record when it closes."""

    state: BreakerState = BreakerState.CLOSED
    failures: int = 0
    successes: int = 0
    opened_at: float | None = None
    probe_until: float | None = None
    down_since: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BreakerRecord:
        # Fields this version does not know are left out: workers of two versions share
        # records through Redis during a rolling upgrade.
        known = {f.name for f in dataclasses.fields(cls)}
        values = {name: value for name, value in data.items() if name in known}
        return cls(**{**values, "state": BreakerState(data["state"])})


class BreakerStore(Protocol):
    """Where breaker records live, keyed by host.

    Contract: ``get`` returns the record last ``set`` for the host, or None (a closed breaker
    without failures need not be stored); it may return a copy, so callers always ``set`` a
    record they changed. ``delete`` forgets a host; ``items`` lists every stored record.
    """

    def get(self, host: str) -> BreakerRecord | None: ...
    def set(self, host: str, record: BreakerRecord) -> None: ...
    def delete(self, host: str) -> None: ...
    def items(self) -> Iterable[tuple[str, BreakerRecord]]: ...


class MemoryBreakerStore:
    """The in-process ``BreakerStore``: a dict holding only hosts that have failed lately."""

    def __init__(self) -> None:
        self._records: dict[str, BreakerRecord] = {}

    def get(self, host: str) -> BreakerRecord | None:
        return self._records.get(host)

    def set(self, host: str, record: BreakerRecord) -> None:
        self._records[host] = record

    def delete(self, host: str) -> None:
        self._records.pop(host, None)

    def items(self) -> Iterable[tuple[str, BreakerRecord]]:
        return list(self._records.items())


TransitionCallback = Callable[[str, BreakerState, BreakerState], None]


class CircuitBreakers:
    """A circuit breaker per host key.

    closed -> open after ``failure_threshold`` consecutive failures -> half_open once
    ``open_seconds`` have passed -> closed after ``success_threshold`` successes in half_open; a
    failure in half_open re-opens it for another ``open_seconds``. Failures are network errors,
    5xx, 403 and 429 (the caller classifies with :func:`is_breaker_failure`).

    While open, ``allow`` is False (the host's URLs wait in the frontier until ``retry_at``).
    In half_open one probe request at a time is allowed; a probe whose result is never recorded
    (cancelled, requeued) frees its slot after ``probe_timeout`` seconds (default
    ``open_seconds``). Results arriving while open come from requests sent before it opened and
    are ignored. ``on_transition(host, old, new)`` is called on every change of state (for stats
    and metrics).

    >>> now = [0.0]
    >>> breakers = CircuitBreakers(failure_threshold=2, open_seconds=60, clock=lambda: now[0])
    >>> [breakers.record("a.org", success=False) for _ in range(2)][-1]
    <BreakerState.OPEN: 'open'>
    >>> breakers.allow("a.org"), breakers.retry_at("a.org")
    (False, 60.0)
    >>> now[0] = 60.0
    >>> breakers.allow("a.org"), breakers.allow("a.org")  # one probe at a time
    (True, False)
    """

    def __init__(
        self,
        failure_threshold: int = 5,
        open_seconds: float = 60.0,
        success_threshold: int = 2,
        clock: Callable[[], float] = time.time,
        *,
        probe_timeout: float | None = None,
        store: BreakerStore | None = None,
        on_transition: TransitionCallback | None = None,
    ) -> None:
        if failure_threshold < 1 or success_threshold < 1 or open_seconds < 0:
            raise ValueError("breaker thresholds must be >= 1 and open_seconds >= 0")
        self.failure_threshold = failure_threshold
        self.open_seconds = open_seconds
        self.success_threshold = success_threshold
        self.probe_timeout = open_seconds if probe_timeout is None else probe_timeout
        self.clock = clock
        self.store: BreakerStore = store if store is not None else MemoryBreakerStore()
        self.on_transition = on_transition

    def allow(self, host: str) -> bool:
        """May a request go to ``host`` now? True in half_open takes the probe slot."""
        record = self.store.get(host)
        if record is None or record.state is BreakerState.CLOSED:
            return True
        now = self.clock()
        record = self._current(host, record, now)
        if record.state is BreakerState.OPEN:
            return False
        if record.probe_until is not None and now < record.probe_until:
            return False
        record.probe_until = now + self.probe_timeout
        self.store.set(host, record)
        return True

    def retry_at(self, host: str) -> float | None:
        """When ``allow`` may next say True if nothing else happens; None when it would now."""
        record = self.store.get(host)
        if record is None or record.state is BreakerState.CLOSED:
            return None
        now = self.clock()
        record = self._current(host, record, now)
        if record.state is BreakerState.OPEN:
            assert record.opened_at is not None
            return record.opened_at + self.open_seconds
        if record.probe_until is not None and now < record.probe_until:
            return record.probe_until
        return None

    def record(self, host: str, *, success: bool) -> BreakerState:
        """Count one request's result for ``host``; return the breaker's new state."""
        record = self.store.get(host)
        if record is None:
            if success:
                return BreakerState.CLOSED
            record = BreakerRecord()
        now = self.clock()
        record = self._current(host, record, now)
        old = record.state
        if old is BreakerState.OPEN:
            return old
        if old is BreakerState.CLOSED:
            if success:
                self.store.delete(host)
                return old
            record.failures += 1
            if record.failures >= self.failure_threshold:
                self._open(host, record, now)
            else:
                self.store.set(host, record)
            return record.state
        record.probe_until = None
        if not success:
            record.failures += 1
            self._open(host, record, now)
            return record.state
        record.successes += 1
        if record.successes >= self.success_threshold:
            self.store.delete(host)
            self._changed(host, old, BreakerState.CLOSED)
            log.info("circuit breaker closed for %s after %d successes", host, record.successes)
            return BreakerState.CLOSED
        self.store.set(host, record)
        return record.state

    def state(self, host: str) -> BreakerState:
        record = self.store.get(host)
        if record is None:
            return BreakerState.CLOSED
        return self._current(host, record, self.clock()).state

    def down_for(self, host: str) -> float | None:
        """Seconds since ``host``'s breaker first opened, through every failed probe since;
        None while it is closed.

        >>> now = [0.0]
        >>> breakers = CircuitBreakers(failure_threshold=1, open_seconds=60, clock=lambda: now[0])
        >>> breakers.record("a.org", success=False)
        <BreakerState.OPEN: 'open'>
        >>> now[0] = 60.0; breakers.allow("a.org"), breakers.record("a.org", success=False)
        (True, <BreakerState.OPEN: 'open'>)
        >>> now[0] = 90.0; breakers.down_for("a.org"), breakers.down_for("b.org")
        (90.0, None)
        """
        record = self.store.get(host)
        if record is None or record.state is BreakerState.CLOSED or record.down_since is None:
            return None
        return self.clock() - record.down_since

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Hosts with recent failures: state, failures, successes, opened_at, retry_at."""
        now = self.clock()
        result: dict[str, dict[str, Any]] = {}
        for host, stored in sorted(self.store.items()):
            record = self._current(host, stored, now)
            retry_at = None
            if record.state is BreakerState.OPEN and record.opened_at is not None:
                retry_at = record.opened_at + self.open_seconds
            result[host] = {
                "state": str(record.state),
                "failures": record.failures,
                "successes": record.successes,
                "opened_at": record.opened_at,
                "retry_at": retry_at,
            }
        return result

    def reset(self, host: str) -> None:
        """Close ``host``'s breaker and forget its failures."""
        old = self.state(host)
        self.store.delete(host)
        if old is not BreakerState.CLOSED:
            self._changed(host, old, BreakerState.CLOSED)

    def _current(self, host: str, record: BreakerRecord, now: float) -> BreakerRecord:
        """``record`` with a due open -> half_open transition applied (and stored)."""
        if (
            record.state is BreakerState.OPEN
            and record.opened_at is not None
            and now >= record.opened_at + self.open_seconds
        ):
            record.state = BreakerState.HALF_OPEN
            record.successes = 0
            record.probe_until = None
            self.store.set(host, record)
            self._changed(host, BreakerState.OPEN, BreakerState.HALF_OPEN)
        return record

    def _open(self, host: str, record: BreakerRecord, now: float) -> None:
        old = record.state
        record.state = BreakerState.OPEN
        record.opened_at = now
        if record.down_since is None:
            record.down_since = now
        record.successes = 0
        record.probe_until = None
        self.store.set(host, record)
        self._changed(host, old, BreakerState.OPEN)
        log.warning(
            "circuit breaker tripped for %s after %d consecutive failures; retrying in %.0f s",
            host,
            record.failures,
            self.open_seconds,
        )

    def _changed(self, host: str, old: BreakerState, new: BreakerState) -> None:
        if self.on_transition is not None:
            self.on_transition(host, old, new)


def _names_under(cls: type[object]) -> set[str]:
    names = {cls.__name__}
    for sub in cls.__subclasses__():
        names |= _names_under(sub)
    return names


def is_breaker_failure(status: int | None, error_class: str | None) -> bool:
    """Does this result count against the host's breaker?

    A response counts when its status is 5xx, 403 or 429, or when validation found it a block
    page or a CAPTCHA (the caller gives ``ContentRejected`` as the error of a response judged
    *hard*, whatever its status: a 200 block page, a 405 CAPTCHA); a fetch without a response
    counts when its error is a ``NetworkError`` (or a subclass: timeouts, proxy failures, ...).
    Other errors (redirect loops, oversized bodies, robots.txt) say nothing about the host's
    health.

    >>> is_breaker_failure(503, None), is_breaker_failure(404, None)
    (True, False)
    >>> is_breaker_failure(None, "FetchTimeout"), is_breaker_failure(None, "BodyTooLarge")
    (True, False)
    >>> is_breaker_failure(200, "ContentRejected"), is_breaker_failure(405, "ContentRejected")
    (True, True)
    """
    if error_class is not None and error_class in _names_under(ContentRejected):
        return True
    if status is not None:
        return status >= 500 or status in (403, 429)
    # Subclasses are looked up per call (failures are rare): modules loaded later may add some.
    return error_class is not None and error_class in _names_under(NetworkError)


# -- stall watchdog -----------------------------------------------------------------------------


class NetworkState(StrEnum):
    UP = "up"
    DOWN = "down"
    UNKNOWN = "unknown"  # no check URL configured, or the check itself is broken


# The timeout is part of the check's configuration (bound with functools.partial), hence ASYNC109.
async def network_check(url: str | None, timeout: float = 10.0) -> NetworkState:  # noqa: ASYNC109
    """HEAD ``url``: any HTTP response means the network is up; no check URL means unknown.

    Connection failures, DNS failures and the ``timeout`` mean down. Never raises.
    """
    if not url:
        return NetworkState.UNKNOWN
    try:
        async with (
            asyncio.timeout(timeout),
            aiohttp.ClientSession() as session,
            session.head(url, allow_redirects=False),
        ):
            return NetworkState.UP
    except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
        log.debug("network check %s failed: %s", url, exc)
        return NetworkState.DOWN


class WatchdogState(StrEnum):
    OK = "ok"
    STALLED = "stalled"  # diagnosed, no cause found, still no activity
    WAITING_FOR_NETWORK = "waiting_for_network"
    STORE_UNAVAILABLE = "store_unavailable"


@dataclass(slots=True, frozen=True)
class WatchdogStatus:
    """What ``/health`` and ``harvestman status`` show. ``store``: ok, reconnected, unavailable."""

    state: WatchdogState
    last_activity: float
    stalls: int = 0
    stalled_since: float | None = None
    checked_at: float | None = None
    store: str | None = None
    network: NetworkState | None = None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["state"] = str(self.state)
        data["network"] = None if self.network is None else str(self.network)
        return data


class StallWatchdog:
    """Notices a crawl that stopped moving while work is pending, and finds out why.

    The crawler calls ``touch()`` on every action. ``run()`` (an async loop, checking every
    ``check_interval`` seconds) notices ``stall_seconds`` without activity while
    ``has_pending_work()`` says there is work (it must answer from memory, not from the store),
    logs "stall detected", then diagnoses:

    1. the store: ``check_store()``; if it raises or takes over ``check_timeout`` seconds,
       ``reconnect_store()`` then ``check_store()`` again; if that fails too, ``run`` raises
       ``StoreUnavailable`` (the process should exit with ``STALL_EXIT_CODE``);
    2. the network: ``check_network()`` (see :func:`network_check`); when down, ``pause()`` the
       crawl, re-check every ``network_retry`` seconds and ``resume()`` when up (or unknown).

    After a diagnosis the next one waits for another ``stall_seconds`` without activity. The
    last diagnosis is kept in ``status``.
    """

    def __init__(
        self,
        *,
        has_pending_work: Callable[[], bool],
        check_store: Callable[[], Awaitable[object]],
        check_network: Callable[[], Awaitable[NetworkState]],
        pause: Callable[[], None],
        resume: Callable[[], None],
        reconnect_store: Callable[[], Awaitable[object]] | None = None,
        stall_seconds: float = 300.0,
        check_interval: float = 10.0,
        network_retry: float = 30.0,
        check_timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.has_pending_work = has_pending_work
        self.check_store = check_store
        self.reconnect_store = reconnect_store
        self.check_network = check_network
        self.pause = pause
        self.resume = resume
        self.stall_seconds = stall_seconds
        self.check_interval = check_interval
        self.network_retry = network_retry
        self.check_timeout = check_timeout
        self.clock = clock
        self._last_activity = clock()
        self._quiet_since = self._last_activity  # activity or the end of the last diagnosis
        self._status = WatchdogStatus(WatchdogState.OK, self._last_activity)

    def touch(self) -> None:
        """Record activity (cheap: the crawler calls it on every action)."""
        self._last_activity = self.clock()

    @property
    def status(self) -> WatchdogStatus:
        status = self._status
        if status.state is WatchdogState.STALLED and self._last_activity > (status.checked_at or 0):
            status = replace(status, state=WatchdogState.OK)
        return replace(status, last_activity=self._last_activity)

    async def run(self) -> None:
        """Watch until cancelled; raises ``StoreUnavailable`` when the store is gone for good."""
        while True:
            await asyncio.sleep(self.check_interval)
            quiet_since = max(self._last_activity, self._quiet_since)
            if self.clock() - quiet_since >= self.stall_seconds and self.has_pending_work():
                await self.diagnose()

    async def diagnose(self) -> WatchdogStatus:
        """Check the store, then the network (waiting for it while down); see the class doc."""
        now = self.clock()
        idle = now - self._last_activity
        log.warning("stall detected: no activity for %.0f s while work is pending", idle)
        stalls = self._status.stalls + 1
        base = WatchdogStatus(
            WatchdogState.STALLED, self._last_activity, stalls, self._last_activity, now
        )
        store = await self._diagnose_store(base)
        network = await self._probe_network()
        self._status = replace(base, store=store, network=network)
        if network is NetworkState.DOWN:
            log.warning("network is down: crawl paused, re-checking every %g s", self.network_retry)
            self._status = replace(
                self._status, state=WatchdogState.WAITING_FOR_NETWORK, detail="network down"
            )
            self.pause()
            try:
                while network is NetworkState.DOWN:
                    await asyncio.sleep(self.network_retry)
                    network = await self._probe_network()
            finally:
                self.resume()
            log.info("network is back (%s): crawl resumed", network)
            detail = "network was down; resumed"
        elif store == "reconnected":
            detail = "store reconnected"
        else:
            detail = f"no cause found (store ok, network {network})"
            log.warning("stall not explained: %s", detail)
        self._quiet_since = self.clock()
        self._status = replace(
            self._status,
            state=WatchdogState.STALLED,
            network=network,
            checked_at=self._quiet_since,
            detail=detail,
        )
        return self._status

    async def _diagnose_store(self, base: WatchdogStatus) -> str:
        try:
            await self._within(self.check_store)
            return "ok"
        except Exception as exc:
            first = exc
        log.warning("store check failed (%s); reconnecting", _describe(first))
        try:
            if self.reconnect_store is None:
                raise first
            await self._within(self.reconnect_store)
            await self._within(self.check_store)
        except Exception as exc:
            detail = f"store unavailable: {_describe(exc)}"
            log.error("%s; exiting with status %d", detail, STALL_EXIT_CODE)
            self._status = replace(
                base, state=WatchdogState.STORE_UNAVAILABLE, store="unavailable", detail=detail
            )
            raise StoreUnavailable(detail) from exc
        log.info("store reconnected")
        return "reconnected"

    async def _probe_network(self) -> NetworkState:
        try:
            return await self.check_network()
        except Exception:
            # A broken check must not pause the crawl: the network is then only "unknown".
            log.exception("network check failed")
            return NetworkState.UNKNOWN

    async def _within(self, check: Callable[[], Awaitable[object]]) -> None:
        async with asyncio.timeout(self.check_timeout):
            await check()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer within the check timeout"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
