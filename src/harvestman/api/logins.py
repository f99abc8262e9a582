"""Failed sign-ins, counted per user name and per client, so passwords cannot be guessed
faster than ``limit`` tries per ``window`` seconds on either.

Only failures count: a person who types their password right is never held back by an
attacker's tries from elsewhere beyond the name's own window. Kept in this process (one
``serve``); with several instances behind a balancer each counts its own share.

>>> clock = [0.0]
>>> failed = FailedLogins(limit=2, window=60.0, clock=lambda: clock[0])
>>> failed.record(["name:ada", "client:10.0.0.1"]); failed.record(["name:ada"])
>>> failed.wait(["name:ada"]), failed.wait(["client:10.0.0.1"])
(60.0, None)
>>> clock[0] = 61.0
>>> failed.wait(["name:ada"]) is None
True
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable


class FailedLogins:
    def __init__(
        self, limit: int, window: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, key: str, now: float) -> deque[float]:
        times = self._failures.get(key)
        if times is None:
            return deque()
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[key]
        return times

    def wait(self, keys: Iterable[str]) -> float | None:
        """Seconds until another try is allowed for every key, or None when it is now."""
        now = self.clock()
        waits = [
            times[0] + self.window - now
            for times in (self._recent(key, now) for key in keys)
            if len(times) >= self.limit
        ]
        return max(waits) if waits else None

    def record(self, keys: Iterable[str]) -> None:
        now = self.clock()
        for key in keys:
            self._recent(key, now)
            self._failures.setdefault(key, deque()).append(now)
        if len(self._failures) > 100_000:  # forget the idle rather than grow without end
            for key in list(self._failures):
                self._recent(key, now)
