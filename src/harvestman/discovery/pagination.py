"""Pagination prediction: learn ``?page=N`` and ``/page/N`` from listings, guess one page beyond.

A listing links to some of its pages (often only the next few); the predictor learns the pattern
from those links and queues the page after the highest one known, then the one after that while
pages keep revealing new links, and stops for good at the first 404/410 or page with nothing new.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from harvestman.errors import UrlError
from harvestman.urls import host_key

__all__ = ["PAGE_PARAMS", "PaginationPredictor"]

log = logging.getLogger(__name__)

PAGE_PARAMS: Final = frozenset({"page", "p", "pg", "paged"})


def _maybe_paged(url: str) -> bool:
    """A cheap superset of the URLs ``_split`` accepts (most links fail it at once)."""
    if "/page/" in url:
        return True
    if "=" not in url:
        return False
    # Substring tests beat a regex by ~10x here; "p=" also lets "step=" through, _split decides.
    low = url.lower()
    return "p=" in low or "pg=" in low or "page=" in low or "paged=" in low


_NUMBER: Final = re.compile(r"0|[1-9][0-9]{0,5}").fullmatch
_PATH_PAGE: Final = re.compile(r"/page/(0|[1-9][0-9]{0,5})(?=/|$)")
_SLOT: Final = "{n}"
_DEAD_STATUSES: Final = frozenset({404, 410})
_MAX_CANDIDATE_NUMBERS: Final = 64


@dataclass(slots=True)
class _Pattern:
    """One template's state. ``dead_at``: the first page believed not to exist (or be useless)."""

    max_seen: int = 0
    speculated: int = 0
    dead_at: int | None = None
    numbers: set[int] | None = None  # page numbers seen while the pattern is unconfirmed

    def see(self, n: int) -> bool:
        """Note page ``n``; True when this confirms the pattern (two consecutive pages seen)."""
        if n > self.max_seen:
            self.max_seen = n
        numbers = self.numbers
        if numbers is None or n in numbers:
            return False
        if n - 1 in numbers or n + 1 in numbers:
            self.numbers = None
            return True
        if len(numbers) < _MAX_CANDIDATE_NUMBERS:
            numbers.add(n)
        return False


def _split(url: str) -> tuple[str, int, str] | None:
    """(template, page number, base key) of a paginated URL, else None.

    The template has ``{n}`` in place of the number; the base key is the URL of the listing's
    first page (the page parameter or ``/page/N`` removed) without a trailing slash.
    """
    if "{" in url:
        return None
    query = url.find("?")
    if query >= 0:
        params = url[query + 1 :].split("&")
        for index, param in enumerate(params):
            key, equals, value = param.partition("=")
            if equals and key.lower() in PAGE_PARAMS and _NUMBER(value):
                others = params[:index] + params[index + 1 :]
                template = "&".join([*params[:index], f"{key}={_SLOT}", *params[index + 1 :]])
                base_query = "?" + "&".join(others) if others else ""
                return (
                    f"{url[: query + 1]}{template}",
                    int(value),
                    _base_key(url[:query]) + base_query,
                )
    path_start = url.find("/", url.find("//") + 2)
    if path_start < 0:
        return None
    path_end = query if query >= 0 else len(url)
    match = _PATH_PAGE.search(url, path_start, path_end)
    if match is None:
        return None
    template = url[: match.start(1)] + _SLOT + url[match.end(1) :]
    base_path = url[: match.start()] + url[match.end() : path_end]
    return template, int(match.group(1)), _base_key(base_path) + url[path_end:]


def _base_key(url: str) -> str:
    """``url`` without the trailing slash of its path: ``/news/`` and ``/news`` are one listing."""
    query = url.find("?")
    if query < 0:
        return url.rstrip("/")
    return url[:query].rstrip("/") + url[query:]


class PaginationPredictor:
    """Learns pagination patterns per host and path template; proposes speculative page URLs.

    Patterns: a query parameter named ``page``, ``p``, ``pg`` or ``paged`` (any case) with a
    number, or a ``/page/N`` path segment. A pattern is keyed by its template, the URL with
    ``{n}`` for the number (other query parameters included), grouped per host key.

    - ``observe(page_url, links)`` (after parsing a page) learns from the links that point to
      pages of the *same listing* as ``page_url`` (``page_url`` is page N of the template, or its
      first page: the URL without the page parameter or ``/page/N``, counting as page 1).
      A pattern is confirmed once two consecutive page numbers are seen (so ``?p=123`` and
      ``?p=456``, post ids, teach nothing); then the page after the highest known one is
      proposed, once.
    - ``record_result(url, status, new_links)`` (after a fetch of a page of a known pattern):
      404 or 410, or a 2xx page with ``new_links == 0``, marks the pattern dead from there;
      a 2xx page with new links proposes the next page. Other statuses teach nothing.
    - A dead pattern comes back to life only when a link shows a page at or beyond the one
      where it died (the listing grew): speculation never repeats a page once proposed.

    Both return the URLs to queue, each proposed at most once. URLs in and out are normalized
    absolute URLs (substituting the digits of a normalized URL keeps it normalized).
    ``rules(host)`` / ``load(host, rules)`` persist the confirmed patterns of a host as plain
    dicts (JSON); ``take_changed()`` names the hosts whose rules changed since the last call.
    At most ``max_patterns_per_host`` confirmed and as many unconfirmed patterns are kept per
    host (the oldest unconfirmed one makes room); nothing beyond page ``max_page`` is proposed.
    """

    def __init__(self, *, max_page: int = 10_000, max_patterns_per_host: int = 200) -> None:
        self.max_page = max_page
        self.max_patterns_per_host = max_patterns_per_host
        self._rules: dict[str, dict[str, _Pattern]] = {}
        self._candidates: dict[str, dict[str, _Pattern]] = {}
        self._changed: set[str] = set()

    def observe(self, page_url: str, links: Iterable[str]) -> list[str]:
        """Learn from a fetched page's links; return speculative page URLs to queue."""
        page = _split(page_url) if _maybe_paged(page_url) else None
        listing = page[2] if page is not None else _base_key(page_url)
        found: dict[str, set[int]] = {}
        for link in links:
            if _maybe_paged(link):
                split = _split(link)
                if split is not None and split[2] == listing:
                    found.setdefault(split[0], set()).add(split[1])
        if page is not None:
            found.setdefault(page[0], set()).add(page[1])
        if not found:
            return []
        try:
            host = host_key(page_url)
        except UrlError:
            return []
        proposals: list[str] = []
        for template, numbers in found.items():
            if page is None:
                numbers.add(1)  # page_url is the listing's first page
            pattern = self._pattern(host, template)
            for n in sorted(numbers):
                if pattern.see(n):
                    self._confirm(host, template, pattern)
            proposals.extend(self._propose(host, template, pattern))
        return proposals

    def record_result(self, url: str, status: int | None, new_links: int) -> list[str]:
        """Learn from the fetch of ``url`` (``status`` None: no response); return URLs to queue."""
        split = _split(url) if _maybe_paged(url) else None
        if split is None:
            return []
        template, n, _ = split
        try:
            host = host_key(url)
        except UrlError:
            return []
        pattern = self._rules.get(host, {}).get(template)
        if pattern is None or status is None:
            return []
        if status in _DEAD_STATUSES or (200 <= status < 300 and new_links <= 0):
            dead_at = n if status in _DEAD_STATUSES else n + 1
            if pattern.dead_at is None or dead_at > pattern.dead_at:
                pattern.dead_at = dead_at
                self._changed.add(host)
            return []
        if 200 <= status < 300:
            pattern.see(n)
            return self._propose(host, template, pattern)
        return []

    def rules(self, host: str) -> dict[str, dict[str, int | None]]:
        """The confirmed patterns of ``host`` as plain dicts, keyed by template."""
        return {
            template: {
                "max_seen": pattern.max_seen,
                "speculated": pattern.speculated,
                "dead_at": pattern.dead_at,
            }
            for template, pattern in self._rules.get(host, {}).items()
        }

    def load(self, host: str, rules: Mapping[str, Any]) -> int:
        """Restore what ``rules(host)`` returned; malformed entries are skipped (and logged).

        Returns the number of patterns loaded.
        """
        loaded = 0
        patterns = self._rules.setdefault(host, {})
        for template, rule in rules.items():
            try:
                if (
                    not isinstance(template, str)
                    or template.count(_SLOT) != 1
                    or host_key(template.replace(_SLOT, "1")) != host
                ):
                    raise ValueError("not a page URL template of this host")
                dead_at = rule["dead_at"]
                pattern = _Pattern(
                    max_seen=int(rule["max_seen"]),
                    speculated=int(rule["speculated"]),
                    dead_at=None if dead_at is None else int(dead_at),
                )
            except (ValueError, TypeError, KeyError, UrlError) as exc:
                log.warning("pagination rule %r of %s skipped: %s", template, host, exc)
                continue
            if len(patterns) < self.max_patterns_per_host or template in patterns:
                patterns[template] = pattern
                loaded += 1
        return loaded

    def take_changed(self) -> list[str]:
        """Hosts whose rules changed since the last call (to persist ``rules(host)``)."""
        changed, self._changed = sorted(self._changed), set()
        return changed

    def _pattern(self, host: str, template: str) -> _Pattern:
        pattern = self._rules.get(host, {}).get(template)
        if pattern is not None:
            return pattern
        candidates = self._candidates.setdefault(host, {})
        pattern = candidates.get(template)
        if pattern is None:
            if len(candidates) >= self.max_patterns_per_host:
                del candidates[next(iter(candidates))]
            pattern = candidates[template] = _Pattern(numbers=set())
        return pattern

    def _confirm(self, host: str, template: str, pattern: _Pattern) -> None:
        self._candidates[host].pop(template, None)
        rules = self._rules.setdefault(host, {})
        if len(rules) < self.max_patterns_per_host:
            rules[template] = pattern
            self._changed.add(host)
            log.debug("pagination pattern learnt on %s: %s", host, template)

    def _propose(self, host: str, template: str, pattern: _Pattern) -> list[str]:
        if self._rules.get(host, {}).get(template) is not pattern:
            return []  # unconfirmed (or no room to keep it)
        if pattern.dead_at is not None:
            if pattern.max_seen < pattern.dead_at:
                return []
            pattern.dead_at = None  # a link reached the page where it died: the listing grew
        n = pattern.max_seen + 1
        if n <= pattern.speculated or n > self.max_page:
            return []
        pattern.speculated = n
        self._changed.add(host)
        return [template.replace(_SLOT, str(n))]
