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

from harvestman.crawl.analysis import PageAnalysis
from harvestman.crawl.fetch import FetchResult
from harvestman.parse import Page
from harvestman.records import CrawlRequest, NewUrl, Outcome, PageRecord

if TYPE_CHECKING:
    from harvestman.extract.plugins import ParseResult
    from harvestman.extract.products import Product
    from harvestman.recrawl import RecrawlRule


@dataclass(slots=True)
class PageWork:
    """One analyzed HTML response and what the steps have made of it so far.

    ``analysis`` is the page's :class:`~harvestman.crawl.analysis.PageAnalysis` (its parse,
    verdict, fingerprint and product scan), made once, in a page process or inline; the steps
    read it and compute none of it again. A step adds to ``record`` (the ``crawled_pages``
    row), ``new_urls``, ``products`` or ``parsed`` (what the site parsers made of the page). A
    step that rejects the page says so by what it returns (:class:`Rejected`).
    """

    request: CrawlRequest
    result: FetchResult
    record: PageRecord
    analysis: PageAnalysis
    new_urls: list[NewUrl] = field(default_factory=list)
    products: list[Product] | None = None
    recrawl: RecrawlRule | None = None  # a product page's adaptive re-crawl (ProductsStep)
    parsed: ParseResult | None = None  # the site parsers' records, runs and failures
    follow: bool = True  # False: the page's links are not followed (a near-duplicate)

    @property
    def page(self) -> Page:
        """The parsed page (its ``text`` is empty unless a step on ``reads_text``)."""
        return self.analysis.page

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
    """A page step: reads the page's analysis, adds to the work; never raises on page content.

    ``on_rejected``: whether the step still runs on a page a step before it rejected.
    ``reads_text``: whether it reads ``work.page.text``; the page's text is kept (and sent back
    by a page process) only when a step that is on says so, else it is empty.
    """

    on_rejected: ClassVar[bool]
    reads_text: ClassVar[bool]

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
