"""The page steps that find URLs: feeds, links, pagination guesses.

Feeds go first: a ``<link rel="alternate" type="application/rss+xml">`` is a link too, and
the link step would otherwise queue the feed as a page and the feed step see it as known.
"""

from __future__ import annotations

from typing import ClassVar, Self

from harvestman.config import Settings
from harvestman.crawl.discovery import Discovery
from harvestman.crawl.run import CrawlRun
from harvestman.crawl.work import PageWork
from harvestman.discovery.pagination import PaginationPredictor
from harvestman.records import CrawlRequest


class FeedsStep:
    """A page's RSS/Atom feeds become ``feed`` rows: fetched, their items queued, polled."""

    on_rejected: ClassVar[bool] = True
    reads_text: ClassVar[bool] = False

    def __init__(self, discovery: Discovery) -> None:
        self.discovery = discovery

    @classmethod
    def from_settings(cls, settings: Settings, discovery: Discovery) -> Self | None:
        return cls(discovery) if settings.discovery_feeds else None

    def run(self, work: PageWork) -> None:
        depth = work.request.depth + 1
        if not work.follow or depth > self.discovery.max_depth or work.page.nofollow:
            return
        found = self.discovery.feeds(work.page.feeds, depth, work.request.id)
        if found:
            work.new_urls += found
            self.discovery.stats.inc("frontier/discovered", len(found))


class LinksStep:
    """The page's links that are new to this process, in scope and within max depth."""

    on_rejected: ClassVar[bool] = True
    reads_text: ClassVar[bool] = False

    def __init__(self, discovery: Discovery) -> None:
        self.discovery = discovery

    @classmethod
    def from_settings(cls, settings: Settings, discovery: Discovery) -> Self:
        return cls(discovery)  # always on: a crawl follows links

    def run(self, work: PageWork) -> None:
        depth = work.request.depth + 1
        if not work.follow or depth > self.discovery.max_depth or work.page.nofollow:
            return
        found = self.discovery.links(work.page.links, depth, work.request.id)
        work.new_urls += found
        self.discovery.stats.inc("frontier/discovered", len(found))


class PaginationStep:
    """Speculates the next page of paged lists (``?page=N+1``, ``/page/N+1``) once a host's
    pattern is confirmed; the rules learnt are kept per host in the store.

    Also a gate (``check`` loads the host's rules once, before its first fetch) and a health
    observer (a failed guess ends its pattern).
    """

    on_rejected: ClassVar[bool] = False
    reads_text: ClassVar[bool] = False

    def __init__(self, predictor: PaginationPredictor, discovery: Discovery, run: CrawlRun) -> None:
        self.predictor = predictor
        self.discovery = discovery
        self.run_ = run
        self.loaded: set[str] = set()

    @classmethod
    def from_settings(cls, settings: Settings, discovery: Discovery, run: CrawlRun) -> Self | None:
        if not settings.discovery_pagination:
            return None
        return cls(PaginationPredictor(max_page=settings.pagination_max_page), discovery, run)

    async def check(self, request: CrawlRequest) -> None:
        host = request.host
        if host not in self.loaded:
            self.loaded.add(host)
            rules, _ = await self.run_.store.hosts.discovery_state(host)
            if rules:
                self.predictor.load(host, rules)

    def run(self, work: PageWork) -> None:
        url = work.request.url
        guesses = self.predictor.observe(url, work.page.links)
        guesses += self.predictor.record_result(url, work.result.status, len(work.new_urls))
        work.new_urls += self.discovery.guessed(
            guesses, work.request.depth, "pagination", work.request.id
        )

    def observe(self, request: CrawlRequest, status: int | None, error: str | None) -> None:
        if error is not None or (status or 0) >= 400:
            self.predictor.record_result(request.url, status, 0)

    def changed_rules(self) -> dict[str, dict[str, dict[str, int | None]]]:
        return {host: self.predictor.rules(host) for host in self.predictor.take_changed()}
