"""Archive discovery: guess a host's archive, sitemap and date-listing pages, and when to do it.

News sites keep their older articles reachable from archive pages and calendar listings
(``/2026/``, ``/2026/11/``, ``/news/2026/``) that the front page no longer links to. The
candidates are guesses: the caller queues the ones unknown to the store at a discovery priority.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from typing import Final
from urllib.parse import urlsplit

from harvestman.errors import UrlError
from harvestman.urls import host_key, normalize_url

__all__ = ["STANDARD_PATHS", "ArchiveScheduler", "archive_candidates"]

STANDARD_PATHS: Final = ("/archive", "/archives", "/sitemap", "/sitemap.xml")

FIRST_YEAR: Final = 1990
# A year deeper than this is more likely an id in a long path than a calendar listing.
_MAX_PREFIX_SEGMENTS: Final = 3
_MONTHS: Final = frozenset(f"{month:02d}" for month in range(1, 13))


def archive_candidates(host_root: str, seen_urls: Iterable[str], today: date) -> list[str]:
    """Archive page guesses for the host of ``host_root`` (any URL of the host will do).

    The standard paths come first (:data:`STANDARD_PATHS`), then date listings learnt from the
    normalized ``seen_urls`` of the same host key (other hosts are ignored; the scheme is
    ``host_root``'s): the first path segment that is a year (``FIRST_YEAR`` to ``today.year``,
    at most three segments deep) gives a *prefix* (the segments before it) and the year listing
    ``prefix/YYYY/``; a following ``01``-``12`` segment gives the month listing
    ``prefix/YYYY/MM/``. Each learnt prefix also gets the current year's listing, and the
    current month's when the prefix showed months. Per prefix (in sorted order), years come
    newest first, each followed by its months newest first. The result is normalized and
    without duplicates. Raises ``UrlError`` when ``host_root`` is not a crawlable URL.

    >>> archive_candidates("https://a.org/", ["https://a.org/news/2025/12/x"], date(2026, 1, 2))
    ... # doctest: +NORMALIZE_WHITESPACE
    ['https://a.org/archive', 'https://a.org/archives', 'https://a.org/sitemap',
     'https://a.org/sitemap.xml', 'https://a.org/news/2026/', 'https://a.org/news/2026/01/',
     'https://a.org/news/2025/', 'https://a.org/news/2025/12/']
    """
    root = normalize_url(host_root)
    host = host_key(root)
    origin = f"{urlsplit(root).scheme}://{host}"
    latest = today.year
    # prefix -> year -> months; a prefix seen with months at all -> True
    listings: dict[str, dict[int, set[str]]] = {}
    has_months: dict[str, bool] = {}
    prefixes = (f"http://{host}/", f"https://{host}/")
    for url in seen_urls:
        # Seen URLs are normalized: the host test is a prefix test (a host key lookup per URL
        # would triple the cost on a host with 100,000 URLs).
        if not url.startswith(prefixes):
            continue
        path = url[url.index("/", 8) :].partition("?")[0]
        segments = path.split("/", _MAX_PREFIX_SEGMENTS + 3)[1:]
        for index, segment in enumerate(segments[: _MAX_PREFIX_SEGMENTS + 1]):
            if len(segment) == 4 and segment.isdigit() and FIRST_YEAR <= int(segment) <= latest:
                prefix = "".join(f"/{part}" for part in segments[:index])
                months = listings.setdefault(prefix, {}).setdefault(int(segment), set())
                has_months.setdefault(prefix, False)
                if index + 1 < len(segments) and segments[index + 1] in _MONTHS:
                    months.add(segments[index + 1])
                    has_months[prefix] = True
                break
    paths = list(STANDARD_PATHS)
    for prefix in sorted(listings):
        years = listings[prefix]
        current = years.setdefault(latest, set())
        if has_months[prefix]:
            current.add(f"{today.month:02d}")
        for year in sorted(years, reverse=True):
            paths.append(f"{prefix}/{year}/")
            paths.extend(f"{prefix}/{year}/{month}/" for month in sorted(years[year], reverse=True))
    candidates: dict[str, None] = {}
    for path in paths:
        try:
            candidates[normalize_url(origin + path)] = None
        except UrlError:  # a prefix segment the normalizer refuses (too long, say)
            continue
    return list(candidates)


class ArchiveScheduler:
    """Decides when a host's archive candidates are due.

    ``due(host, now, high_priority_pending)`` is True for a host never run, once
    ``min_interval`` seconds have passed since its last run, or when its count of pending
    high-priority URLs has fallen below ``low_water`` after having been at or above it since
    the last run (at most once per ``low_water_cooldown`` seconds). A True answer counts as a
    run at ``now``: the caller generates and queues the candidates then. ``state()`` /
    ``load(state)`` keep the last runs across restarts (plain dict of host -> epoch seconds).

    >>> scheduler = ArchiveScheduler(min_interval=86400, low_water=10)
    >>> scheduler.due("a.org", 0.0, 3), scheduler.due("a.org", 60.0, 3)
    (True, False)
    >>> scheduler.due("a.org", 120.0, 50), scheduler.due("a.org", 7200.0, 2)
    (False, True)
    """

    def __init__(
        self,
        min_interval: float = 86400.0,
        low_water: int = 10,
        low_water_cooldown: float = 3600.0,
    ) -> None:
        self.min_interval = min_interval
        self.low_water = low_water
        self.low_water_cooldown = low_water_cooldown
        self._last_run: dict[str, float] = {}
        self._armed: set[str] = set()

    def due(self, host: str, now: float, high_priority_pending: int) -> bool:
        last = self._last_run.get(host)
        if high_priority_pending >= self.low_water:
            self._armed.add(host)
            is_due = last is None or now - last >= self.min_interval
        else:
            is_due = (
                last is None
                or now - last >= self.min_interval
                or (host in self._armed and now - last >= self.low_water_cooldown)
            )
        if is_due:
            self._last_run[host] = now
            self._armed.discard(host)
        return is_due

    def state(self) -> dict[str, float]:
        return dict(self._last_run)

    def load(self, state: Mapping[str, float]) -> None:
        for host, last in state.items():
            if isinstance(last, int | float):
                self._last_run[host] = float(last)
