"""A fetched page on its way through the page steps, what a step is and what it may answer.

The roles a component of the crawl can play are the protocols here (page step, exchange step,
run resource), in :mod:`harvestman.crawl.gates` (gate, health observer, shared state) and in
:mod:`harvestman.crawl.session` (rules source); :mod:`harvestman.crawl.wiring` builds one
list of components and gives each role the components that play it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from harvestman.crawl.fetch import FetchResult
from harvestman.parse import Page
from harvestman.records import CrawlRequest, NewUrl, Outcome, PageRecord

if TYPE_CHECKING:
    from harvestman.extract.plugins import ParseResult
    from harvestman.extract.products import Product, ProductScan
    from harvestman.recrawl import RecrawlRule
    from harvestman.validate import Verdict


@dataclass(slots=True)
class PageWork:
    """One parsed HTML response and what the steps have made of it so far.

    A step adds to ``record`` (the ``crawled_pages`` row), ``new_urls``, ``products`` or
    ``parsed`` (what the site parsers made of the page). A step that rejects the page says so
    by what it returns (:class:`Rejected`).

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
    parsed: ParseResult | None = None  # the site parsers' records, runs and failures
    follow: bool = True  # False: the page's links are not followed (a near-duplicate)
    verdict: Verdict | None = None
    fingerprint: int | None = None
    scan: ProductScan | None = None

    @property
    def is_success(self) -> bool:
        return 200 <= self.result.status < 300


@dataclass(slots=True, frozen=True)
class Rejected:
    """A step's answer on a page it rejects (validation): the page's ``outcome`` is decided;
    the steps after it that run on rejected pages (``on_rejected``) still see the page, none
    does when ``halt``."""

    outcome: Outcome
    halt: bool = False


StepResult = Rejected | None  # None: the page goes on to the next step


@runtime_checkable
class Step(Protocol):
    """A page step: reads the parsed page, adds to the work; never raises on page content.

    ``on_rejected``: whether the step still runs on a page a step before it rejected.
    """

    on_rejected: ClassVar[bool]

    def run(self, work: PageWork) -> StepResult: ...


@dataclass(slots=True)
class Exchange:
    """One request and its response on the way to an outcome (the exchange steps' view)."""

    request: CrawlRequest
    result: FetchResult
    headers: dict[str, str]
    outcome: Outcome | None = None
    new_urls: list[NewUrl] = field(default_factory=list)
    archive_path: str | None = None


@runtime_checkable
class ExchangeStep(Protocol):
    """An async step around a whole exchange: ``keep`` runs on every response (before the
    status is judged), ``finish`` on a response below 400 once the page steps have run."""

    async def keep(self, exchange: Exchange) -> None: ...

    async def finish(self, exchange: Exchange) -> None: ...


@runtime_checkable
class RunResource(Protocol):
    """A component holding a file (or a client) for the run: ``open`` enters it in ``keep``,
    which closes it when the run ends (the WARC file, the raw archive)."""

    def open(self, keep: contextlib.ExitStack) -> None: ...
