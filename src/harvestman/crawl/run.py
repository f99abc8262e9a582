"""What one run of a crawl shares with its gates and steps once it has started.

The wiring builds gates and steps before the crawl runs; the frontier, the robots.txt cache and
the crawl's scope exist only once ``Crawler.run`` has opened the store and the fetcher. They
are set here, once, and read by the components that need them.
"""

from __future__ import annotations

from collections.abc import Callable

from harvestman.crawl.frontier import Frontier
from harvestman.crawl.robots_cache import RobotsCache
from harvestman.stats import Stats
from harvestman.store import Store

# What a crawl needs from the store: the frontier's rows, the writer's batches, host records,
# its session and discovery state; ``store.interfaces`` declares each part by its caller.
CrawlStore = Store


class CrawlRun:
    """The parts of a running crawl: set by the crawler at start, read by gates and steps."""

    def __init__(self, store: CrawlStore, stats: Stats, clock: Callable[[], float]) -> None:
        self.store = store
        self.stats = stats
        self.clock = clock
        self.crawl_id = 0
        self._frontier: Frontier | None = None
        self._robots: RobotsCache | None = None

    @property
    def frontier(self) -> Frontier:
        if self._frontier is None:
            raise RuntimeError("the crawl has not started: no frontier yet")
        return self._frontier

    @frontier.setter
    def frontier(self, frontier: Frontier) -> None:
        self._frontier = frontier

    @property
    def has_frontier(self) -> bool:
        return self._frontier is not None

    @property
    def robots(self) -> RobotsCache:
        if self._robots is None:
            raise RuntimeError("the crawl has not started: no robots.txt cache yet")
        return self._robots

    @robots.setter
    def robots(self, robots: RobotsCache) -> None:
        self._robots = robots
