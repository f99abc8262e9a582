"""Request gates: what a leased request passes before it is fetched.

A gate's ``check(request)`` answers ``None`` (proceed), :class:`Requeue` (back to the
frontier, not before a time) or :class:`Final` (an outcome, no fetch). A component of the
wiring's list that has ``check`` is a gate, in the list's order: robots.txt, the circuit
breaker, parser rollouts, pagination rules.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, Self, runtime_checkable

from harvestman.config import Settings
from harvestman.coord import Coordinator
from harvestman.crawl.outcomes import Outcomes
from harvestman.crawl.robots_cache import robots_root
from harvestman.crawl.run import CrawlRun
from harvestman.errors import HostUnavailable, RobotsDenied, RobotsUnavailable
from harvestman.records import CrawlRequest, NewUrl, Outcome, UrlStatus
from harvestman.resilience import (
    BreakerRecord,
    BreakerState,
    CircuitBreakers,
    is_breaker_failure,
)

log = logging.getLogger(__name__)


@dataclass(slots=True, frozen=True)
class Requeue:
    """Back to the frontier's buffer until ``not_before``; ``fetched``: the host's turn was
    used (by robots.txt), so the shared host gate keeps the politeness delay."""

    not_before: float = 0.0
    fetched: bool = False


@dataclass(slots=True, frozen=True)
class Final:
    """The request's outcome without a fetch (blocked by robots.txt)."""

    outcome: Outcome
    fetched: bool = False


Verdict = Requeue | Final | None


@runtime_checkable
class Gate(Protocol):
    """A check before the fetch; may await (robots.txt is fetched by the gate that needs it)."""

    async def check(self, request: CrawlRequest) -> Verdict: ...


class RobotsGate:
    """robots.txt: read once per host (its Crawl-delay sets the host's delay), then obeyed.

    While robots.txt does not answer, the host's URLs wait for its retry; once out of retries
    they are blocked (``RobotsUnavailable``). A disallowed URL is blocked (``RobotsDenied``).
    ``on_read(url, sitemaps)``: called when a host's robots.txt is first read (sitemaps).
    """

    def __init__(
        self,
        run: CrawlRun,
        outcomes: Outcomes,
        user_agent: str,
        on_read: Callable[[str, Sequence[str]], None] | None = None,
    ) -> None:
        self.run = run
        self.outcomes = outcomes
        self.user_agent = user_agent
        self.on_read = on_read
        self.delay_known: set[str] = set()

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        run: CrawlRun,
        outcomes: Outcomes,
        on_read: Callable[[str, Sequence[str]], None] | None = None,
    ) -> Self:
        return cls(run, outcomes, settings.fetch_user_agent, on_read)

    async def check(self, request: CrawlRequest) -> Verdict:
        run, host = self.run, request.host
        frontier = run.frontier
        entry, asked_host = run.robots.cached(host), False  # no coroutine while it is fresh
        if entry is None:
            entry, asked_host = await run.robots.get(host, request.url)
        if host not in self.delay_known:
            self.delay_known.add(host)
            if entry.crawl_delay is not None:
                frontier.set_delay(host, entry.crawl_delay)
        if asked_host:
            run.stats.inc("robots/fetched")
            if self.on_read is not None and not entry.unavailable:
                self.on_read(request.url, entry.rules.sitemaps)
        if entry.unavailable and not entry.exhausted:
            # Everything is disallowed until robots.txt answers; wait for the retry.
            return Requeue(entry.expires_at, fetched=asked_host)
        if asked_host and frontier.delay_of(host) > 0:
            # robots.txt used this host's turn; the page waits for the next one (spaced by the
            # delay robots.txt itself may just have set).
            return Requeue(fetched=True)
        if entry.unavailable:
            run.stats.inc("robots/unavailable")
            exc: Exception = RobotsUnavailable(str(entry.error))
            return Final(self.outcomes.final(request, UrlStatus.BLOCKED, exc), asked_host)
        if not entry.rules.is_allowed(request.url, self.user_agent):
            run.stats.inc("robots/denied")
            exc = RobotsDenied()
            return Final(self.outcomes.final(request, UrlStatus.BLOCKED, exc), asked_host)
        return None


def sitemap_queue(
    discovery_sitemaps: Callable[[str, Sequence[str], str], list[NewUrl]],
    add_urls: Callable[[list[NewUrl]], None],
) -> Callable[[str, Sequence[str]], None]:
    """Queue a host's sitemaps (robots.txt's and /sitemap.xml) when its robots.txt is read."""

    def queue(url: str, declared: Sequence[str]) -> None:
        add_urls(discovery_sitemaps(url, declared, robots_root(url)))

    return queue


class BreakerGate:
    """A circuit breaker per host: a host that keeps failing waits until a probe may go.

    A host whose breaker has stayed open (its probes failing) for ``give_up_seconds`` (0:
    never) is given up: every pending URL of it is failed with ``HostUnavailable`` in one
    store call, and each of its requests that reaches the gate afterwards is failed the same
    way, so a crawl of a dead host ends. Failed rows are due again after ``visited_ttl``.

    Also a health observer (every response and fetch error counts) and, when workers share a
    coordinator, shares the breakers it opens and adopts those others opened.
    """

    def __init__(
        self,
        breakers: CircuitBreakers,
        run: CrawlRun,
        open_seconds: float,
        *,
        give_up_seconds: float = 0.0,
        visited_ttl: float = 0.0,
    ) -> None:
        self.breakers = breakers
        self.run = run
        self.open_seconds = open_seconds
        self.give_up_seconds = give_up_seconds
        self.visited_ttl = visited_ttl
        self.changes: dict[str, BreakerState] = {}
        self.adopted: set[str] = set()
        self.given_up: set[str] = set()  # hosts whose pending rows this run already failed
        breakers.on_transition = self.changed

    @classmethod
    def from_settings(cls, settings: Settings, run: CrawlRun) -> Self | None:
        if not settings.breaker_enabled:
            return None
        breakers = CircuitBreakers(
            settings.breaker_failure_threshold,
            settings.breaker_open_seconds,
            settings.breaker_success_threshold,
            clock=run.clock,
        )
        return cls(
            breakers,
            run,
            settings.breaker_open_seconds,
            give_up_seconds=settings.breaker_give_up_seconds,
            visited_ttl=settings.crawl_visited_ttl,
        )

    async def check(self, request: CrawlRequest) -> Verdict:
        host = request.host
        if self.give_up_seconds:
            down = self.breakers.down_for(host)
            if down is not None and down >= self.give_up_seconds:
                return await self._give_up(request, down)
        if self.breakers.allow(host):
            return None
        self.run.stats.inc("breaker/deferred")
        return Requeue(self.breakers.retry_at(host) or self.run.clock() + 1.0)

    async def _give_up(self, request: CrawlRequest, down: float) -> Final:
        run, host = self.run, request.host
        exc = HostUnavailable(host, down)
        now = run.clock()
        if host not in self.given_up:
            count = await run.store.frontier.give_up_host(
                run.crawl_id, host, type(exc).__name__, str(exc), now, now + self.visited_ttl
            )
            self.given_up.add(host)  # after the write: a store error tries again next time
            run.stats.inc("breaker/given_up_hosts")
            run.stats.inc("breaker/given_up_urls", count)
            log.warning("%s: breaker open for %.0f s, gave up %d pending URLs", host, down, count)
        run.stats.inc("breaker/given_up_urls")  # this one, leased before
        return Final(Outcome.failed(request, exc, now + self.visited_ttl, status=UrlStatus.FAILED))

    def observe(self, request: CrawlRequest, status: int | None, error: str | None) -> None:
        self.breakers.record(request.host, success=not is_breaker_failure(status, error))

    def changed(self, host: str, old: BreakerState, new: BreakerState) -> None:
        if host not in self.adopted:  # what others told us is not news to share
            self.changes[host] = new
        self.run.stats.inc(f"breaker/{new.value}")
        log.warning("circuit breaker for %s: %s -> %s", host, old.value, new.value)

    async def sync(self, coordinator: Coordinator) -> None:
        """Share breaker changes with the other workers and adopt the breakers they opened
        (when workers share a Redis; at most one heartbeat late)."""
        if not coordinator.shared:
            return
        breakers = self.breakers
        changes, self.changes = self.changes, {}
        records = {host: record.to_dict() for host, record in breakers.store.items()}
        await coordinator.put_breakers(
            {
                host: None if state is BreakerState.CLOSED else records.get(host)
                for host, state in changes.items()
            }
        )
        fresh_after = self.run.clock() - self.open_seconds
        for host, record in (await coordinator.get_breakers()).items():
            if host in changes or breakers.state(host) is not BreakerState.CLOSED:
                continue
            if record.get("state") != "open" or (record.get("opened_at") or 0) < fresh_after:
                continue  # only a breaker opened within its open period is news
            self.adopted.add(host)
            breakers.store.set(host, BreakerRecord.from_dict(record))
            self.run.stats.inc("breaker/adopted")


@runtime_checkable
class HealthObserver(Protocol):
    """Told of every fetch: its status (None without a response) and error class."""

    def observe(self, request: CrawlRequest, status: int | None, error: str | None) -> None: ...


@runtime_checkable
class SharedState(Protocol):
    """A component whose state is shared with the other workers through the coordinator on
    every heartbeat (the circuit breakers others opened)."""

    async def sync(self, coordinator: Coordinator) -> None: ...
