"""The ingest limit: how many new URLs per second a crawl (a source's namespace) makes due.

A page can reveal a thousand links and a sitemap fifty thousand; the spec's URL ingestion
limits each source to 100 new URLs per second (``source_ingest_rate``; a source's
``ingest_rate`` option) so one source cannot flood the frontier. A plain ``harvestman crawl``
has no limit unless ``frontier_ingest_rate`` sets one (its throughput on one fast host is
well above 100 pages per second, each needing a new URL). A URL over the limit is not
dropped, nor kept in memory: it is written with a later due time (``NewUrl.due_at``), in the
first one-second window with room, and the frontier leases it when it comes due. The store
holds it from the start, so a crash loses nothing and the unique index still deduplicates it.

The windows are this process's: with ``harvestman worker`` on several machines each worker
admits up to the rate, so a source's total is the rate times its workers.

>>> limit = IngestLimit(2)
>>> rows = [NewUrl(f"http://a.test/{n}", str(n), "a.test", 1, 2) for n in range(5)]
>>> limit.admit(rows, 100.5)
3
>>> [row.due_at for row in rows]
[None, None, 101.0, 101.0, 102.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Self

from harvestman.config import Settings
from harvestman.records import NewUrl


class IngestLimit:
    """Admits ``rate`` new URLs per one-second window and schedules the rest in later ones.

    ``admit`` is given the time by its caller (the writer's clock), so tests drive it by hand.
    """

    def __init__(self, rate: int) -> None:
        if rate < 1:
            raise ValueError(f"an ingest rate is at least 1 URL per second, got {rate}")
        self.rate = rate
        self._window = -math.inf  # the latest window holding admitted URLs (its start second)
        self._used = 0  # URLs in that window

    @classmethod
    def from_settings(cls, settings: Settings) -> Self | None:
        """None when the limit is off (``frontier_ingest_rate`` 0)."""
        rate = settings.frontier_ingest_rate
        return cls(rate) if rate else None

    def admit(self, rows: Sequence[NewUrl], now: float) -> int:
        """Set ``due_at`` on the rows past this second's room (None on the others); return how
        many were deferred."""
        current = math.floor(now)
        if self._window < current:
            self._window, self._used = current, 0
        window, used, rate = self._window, self._used, self.rate
        deferred = 0
        for row in rows:
            if used >= rate:
                window += 1
                used = 0
            used += 1
            if window > current:
                row.due_at = float(window)
                deferred += 1
            else:
                row.due_at = None
        self._window, self._used = window, used
        return deferred
