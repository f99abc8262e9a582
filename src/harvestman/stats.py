"""Crawl counters, namespaced like ``fetch/status/200`` and ``frontier/leased``.

The engine increments them; the progress display, the summary and (later) Prometheus read them.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable


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
