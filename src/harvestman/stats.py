"""Crawl counters, namespaced like ``fetch/status/200`` and ``frontier/leased``.

The crawler increments them; the progress display, the summary and (later) Prometheus read them.
``StatsHistory`` keeps what the store's stats history needs per minute until it is written.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Sequence

from harvestman.errors import RobotsDenied
from harvestman.records import NewUrl, Outcome, UrlStatus

_ROBOTS_DENIED = RobotsDenied.__name__  # a policy, counted apart from errors

MINUTE = 60.0  # the stats history's finest resolution (store.history: "minute")


class Stats:
    """Counters plus a moving pages/s rate over the last ``window`` seconds."""

    def __init__(self, window: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.counters: Counter[str] = Counter()
        self.started = clock()
        self.window = window
        self.clock = clock
        self._samples: deque[tuple[float, int]] = deque()

    def inc(self, key: str, n: int = 1) -> None:
        self.counters[key] += n

    def __getitem__(self, key: str) -> int:
        return self.counters[key]

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    def rate(self, key: str = "fetch/pages") -> float:
        """Per-second rate of ``key`` over the recent window (sampled on each call)."""
        now, value = self.clock(), self.counters[key]
        samples = self._samples
        samples.append((now, value))
        while len(samples) > 2 and now - samples[0][0] > self.window:
            samples.popleft()
        first_time, first_value = samples[0]
        if now - first_time < 0.5:
            return value / self.elapsed if self.elapsed > 0 else 0.0
        return (value - first_value) / (now - first_time)

    def by_prefix(self, prefix: str) -> dict[str, int]:
        """Counters under ``prefix/`` with the prefix stripped, e.g. statuses."""
        cut = len(prefix) + 1
        return {key[cut:]: n for key, n in self.counters.items() if key.startswith(prefix + "/")}


class StatsHistory:
    """Per-minute counters of written batches, held until their write is due.

    ``add`` counts a batch the store has just written (so the history never counts what a
    failed write lost), into the minute of ``now``. ``take`` hands the pending minutes over and
    starts the next ``interval``: the crawler writes at most once per interval (one upsert of
    one or two minute rows), and whatever is pending when it closes. What it counts, per
    outcome: ``pages`` (a page row stored), ``failed`` (failed for good), ``errors`` (an
    ``error_logs`` row: an error class other than RobotsDenied), ``bytes`` (body bytes of
    the stored page), ``status_Nxx`` (the response's status class, retries included),
    ``robots_denied``; and ``new_urls`` per batch.

    >>> history = StatsHistory(interval=60.0)
    >>> history.add([], [NewUrl("http://a.test/", "h", "a.test", 0, 2)], now=125.0)
    >>> history.is_due(130.0), history.is_due(185.0)
    (False, True)
    >>> history.take(185.0)
    {120.0: {'new_urls': 1}}
    """

    def __init__(self, interval: float = 60.0) -> None:
        self.interval = interval
        self._pending: dict[float, Counter[str]] = {}
        self._next_write: float | None = None

    def add(self, outcomes: Sequence[Outcome], new_urls: Sequence[NewUrl], now: float) -> None:
        if self._next_write is None:
            self._next_write = now + self.interval
        counts = self._pending.setdefault(now // MINUTE * MINUTE, Counter())
        if new_urls:
            counts["new_urls"] += len(new_urls)
        for outcome in outcomes:
            page = outcome.page
            if page is not None:
                counts["pages"] += 1
                counts["bytes"] += page.content_length or 0
            if outcome.status is UrlStatus.FAILED:
                counts["failed"] += 1
            error = outcome.error_class
            if error == _ROBOTS_DENIED:
                counts["robots_denied"] += 1
            elif error is not None:
                counts["errors"] += 1
            code = outcome.status_code
            if code is not None and 200 <= code < 600:
                counts[f"status_{code // 100}xx"] += 1

    def is_due(self, now: float, *, closing: bool = False) -> bool:
        """Whether pending counts should be written now (always when ``closing``)."""
        if not self._pending:
            return False
        return closing or self._next_write is None or now >= self._next_write

    def take(self, now: float) -> dict[float, dict[str, int]]:
        """The pending minutes ({bucket start: {counter: n}}), cleared; the next write is due
        ``interval`` from ``now``."""
        pending, self._pending = self._pending, {}
        self._next_write = now + self.interval
        return {start: {k: n for k, n in counts.items() if n} for start, counts in pending.items()}

    def give_back(self, buckets: dict[float, dict[str, int]]) -> None:
        """Counts whose write failed: pending again, to go with the next write."""
        for start, counts in buckets.items():
            self._pending.setdefault(start, Counter()).update(counts)
