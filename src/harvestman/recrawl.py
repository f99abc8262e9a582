"""The adaptive re-crawl rule, shared by a source's jobs (``jobs/adaptive.py``: its start
pages) and a product page (``RecrawlRule``: its prices and availability).

Something seen changed: the interval goes back to the baseline; unchanged ``n`` times in a
row: ``baseline × 2^n``, capped (never below the baseline)::

    >>> [adaptive_interval(1800, n) / 3600 for n in range(7)]
    [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 24.0]
    >>> rule = RecrawlRule(baseline=86400.0, cap=14 * 86400.0)
    >>> [rule.interval(n) / 86400 for n in (0, 1, 2, 3, 4)]
    [1.0, 2.0, 4.0, 8.0, 14.0]
"""

from __future__ import annotations

from dataclasses import dataclass

ADAPTIVE_MAX_INTERVAL = 86400.0


def adaptive_interval(
    baseline: float, unchanged_count: int, cap: float = ADAPTIVE_MAX_INTERVAL
) -> float:
    """``baseline × 2^unchanged_count`` capped at ``cap``, but never below ``baseline``."""
    grown: float = baseline * 2.0 ** min(unchanged_count, 62)
    return max(baseline, min(grown, cap))


@dataclass(frozen=True, slots=True)
class RecrawlRule:
    """When a product page is due again (``products_recrawl_interval``,
    ``products_recrawl_max_interval``): the store applies it as it writes the page's products,
    counting the re-crawls in a row that changed no price, currency nor availability."""

    baseline: float  # seconds, after a change or the first sighting
    cap: float  # seconds, however long nothing changed

    def interval(self, unchanged_count: int) -> float:
        return adaptive_interval(self.baseline, unchanged_count, self.cap)
