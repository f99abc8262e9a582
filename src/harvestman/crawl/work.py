"""A fetched page on its way through the page steps, and what a step is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from harvestman.crawl.analysis import PageAnalysis
from harvestman.crawl.fetch import FetchResult
from harvestman.parse import Page
from harvestman.records import CrawlRequest, NewUrl, Outcome, PageRecord

if TYPE_CHECKING:
    from harvestman.extract.products import Product
    from harvestman.recrawl import RecrawlRule


@dataclass(slots=True)
class PageWork:
    """One analyzed HTML response and what the steps have made of it so far.

    ``analysis`` is the page's :class:`~harvestman.crawl.analysis.PageAnalysis` (its parse,
    verdict, fingerprint and product scan), made once, in a page process or inline; the steps
    read it and compute none of it again. A step adds to ``record`` (the ``crawled_pages`` row),
    ``new_urls``, ``products`` or ``extracted``. Validation may decide the outcome itself
    (``outcome``): a rejected page then only meets the steps that run on rejected pages, and
    ``halted`` ends the pipeline.
    """

    request: CrawlRequest
    result: FetchResult
    record: PageRecord
    analysis: PageAnalysis
    new_urls: list[NewUrl] = field(default_factory=list)
    products: list[Product] | None = None
    recrawl: RecrawlRule | None = None  # a product page's adaptive re-crawl (ProductsStep)
    extracted: dict[str, list[Any] | None] = field(default_factory=dict)
    follow: bool = True  # False: the page's links are not followed (a near-duplicate)
    outcome: Outcome | None = None  # decided by validation (a rejected page)
    halted: bool = False

    @property
    def page(self) -> Page:
        """The parsed page (its ``text`` is empty unless a step on ``reads_text``)."""
        return self.analysis.page

    @property
    def is_success(self) -> bool:
        return 200 <= self.result.status < 300


class Step(Protocol):
    """A page step: reads the page's analysis, adds to the work; never raises on page content.

    ``on_rejected``: whether the step still runs on a page validation rejected (softly).
    ``reads_text``: whether it reads ``work.page.text``; the page's text is kept (and sent back
    by a page process) only when a step that is on says so, else it is empty.
    """

    on_rejected: ClassVar[bool]
    reads_text: ClassVar[bool]

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
