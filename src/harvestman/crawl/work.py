"""A fetched page on its way through the page steps, and what a step is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from harvestman.crawl.fetch import FetchResult
from harvestman.parse import Page
from harvestman.records import CrawlRequest, NewUrl, Outcome, PageRecord

if TYPE_CHECKING:
    from harvestman.extract.products import Product, ProductScan
    from harvestman.recrawl import RecrawlRule
    from harvestman.validate import Verdict


@dataclass(slots=True)
class PageWork:
    """One parsed HTML response and what the steps have made of it so far.

    A step adds to ``record`` (the ``crawled_pages`` row), ``new_urls``, ``products`` or
    ``extracted``. Validation may decide the outcome itself (``outcome``): a rejected page then
    only meets the steps that run on rejected pages, and ``halted`` ends the pipeline.

    ``verdict``, ``fingerprint`` and ``scan`` are what a page process computed ahead for the
    steps (:mod:`harvestman.crawl.analysis`); None: the step computes it.
    """

    request: CrawlRequest
    result: FetchResult
    record: PageRecord
    page: Page
    new_urls: list[NewUrl] = field(default_factory=list)
    products: list[Product] | None = None
    recrawl: RecrawlRule | None = None  # a product page's adaptive re-crawl (ProductsStep)
    extracted: dict[str, list[Any] | None] = field(default_factory=dict)
    follow: bool = True  # False: the page's links are not followed (a near-duplicate)
    outcome: Outcome | None = None  # decided by validation (a rejected page)
    halted: bool = False
    verdict: Verdict | None = None
    fingerprint: int | None = None
    scan: ProductScan | None = None

    @property
    def is_success(self) -> bool:
        return 200 <= self.result.status < 300


class Step(Protocol):
    """A page step: reads the parsed page, adds to the work; never raises on page content.

    ``on_rejected``: whether the step still runs on a page validation rejected (softly).
    """

    on_rejected: ClassVar[bool]

    def run(self, work: PageWork) -> None: ...


@dataclass(slots=True)
class Exchange:
    """One request and its response on the way to an outcome (the exchange steps' view)."""

    request: CrawlRequest
    result: FetchResult
    headers: dict[str, str]
    outcome: Outcome | None = None
    new_urls: list[NewUrl] = field(default_factory=list)
    archive_path: str | None = None


class ExchangeStep(Protocol):
    """An async step around a whole exchange: ``keep`` runs on every response (before the
    status is judged), ``finish`` on a response below 400 once the page steps have run."""

    async def keep(self, exchange: Exchange) -> None: ...

    async def finish(self, exchange: Exchange) -> None: ...
