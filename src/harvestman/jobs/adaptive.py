"""Adaptive re-crawl: a source whose start pages do not change is visited less often.

After each run the SHA-256 of each start URL's content is compared with the last one seen:

- any start page changed (or this is the first look): the interval goes back to the baseline;
- none changed, ``n`` runs in a row: ``baseline × 2^n``, capped at 24 h (never below baseline);
- no start page could be fetched or hashed: nothing changes, neither reward nor penalty.

With a 30-minute baseline the unchanged intervals are 30m, 1h, 2h, 4h, 8h, 16h, 24h::

    >>> [adaptive_interval(1800, n) / 3600 for n in range(7)]
    [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 24.0]
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from harvestman.recrawl import ADAPTIVE_MAX_INTERVAL, adaptive_interval

__all__ = [
    "ADAPTIVE_MAX_INTERVAL",
    "AdaptiveState",
    "adaptive_interval",
    "combined_hash",
    "observe",
]


@dataclass(slots=True, frozen=True)
class AdaptiveState:
    """What adaptive scheduling remembers per source."""

    source_id: int
    url_hashes: Mapping[str, str] = field(default_factory=dict)  # start URL -> SHA-256
    last_hash: str | None = None  # one digest over ``url_hashes``
    last_change_at: float | None = None
    unchanged_count: int = 0
    current_interval: float | None = None  # seconds


def combined_hash(url_hashes: Mapping[str, str]) -> str | None:
    """One SHA-256 over every start URL's content hash, in URL order."""
    if not url_hashes:
        return None
    text = "\n".join(f"{url} {digest}" for url, digest in sorted(url_hashes.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def observe(
    state: AdaptiveState,
    fetched: Mapping[str, str | None],
    baseline: float,
    now: float,
    cap: float = ADAPTIVE_MAX_INTERVAL,
) -> AdaptiveState:
    """The state after a run that saw ``fetched`` (start URL -> content hash, None when not
    fetched); its ``current_interval`` is the interval until the next run."""
    seen = {url: digest for url, digest in fetched.items() if digest is not None}
    if not seen:
        interval = state.current_interval or baseline
        return replace(state, current_interval=max(baseline, min(interval, cap)))
    changed = any(state.url_hashes.get(url) != digest for url, digest in seen.items())
    url_hashes = {**state.url_hashes, **seen}
    count = 0 if changed else state.unchanged_count + 1
    return AdaptiveState(
        source_id=state.source_id,
        url_hashes=url_hashes,
        last_hash=combined_hash(url_hashes),
        last_change_at=now if changed else state.last_change_at,
        unchanged_count=count,
        current_interval=adaptive_interval(baseline, count, cap),
    )
