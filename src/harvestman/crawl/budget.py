"""The page budget (``crawl_max_pages``): fetches that count are those stored before this run,
the final outcomes of this run, and the requests in flight (which may still become fetches)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Self

from harvestman.config import Settings


class Budget:
    """``reached(in_flight)``: no new request may start (see the module docstring)."""

    def __init__(self, max_pages: int, final_outcomes: Callable[[], int]) -> None:
        self.max_pages = max_pages
        self.final_outcomes = final_outcomes
        self.fetched_before = 0  # set when the crawl starts, from the store's counts

    @classmethod
    def from_settings(cls, settings: Settings, final_outcomes: Callable[[], int]) -> Self | None:
        return cls(settings.crawl_max_pages, final_outcomes) if settings.crawl_max_pages else None

    def used(self, in_flight: int) -> int:
        return self.fetched_before + self.final_outcomes() + in_flight

    def reached(self, in_flight: int) -> bool:
        return self.used(in_flight) >= self.max_pages
