"""A fetched page's analysis: what the page steps need that depends on its bytes alone.

Parsing (:func:`harvestman.parse.parse_html`), validation's verdict, the SimHash fingerprint and
the product scan are pure functions of the response (URL, status, headers, body, charset) and of
settings fixed for the crawl (:class:`AnalysisSpec`). They are computed here and nowhere else:
every page the steps see comes with its :class:`PageAnalysis`, made by a page process
(:mod:`harvestman.crawl.pageworkers`) or by the same :class:`PageAnalyzer` in the crawler's
process (:class:`harvestman.crawl.pages.PagePipeline`). What depends on the crawl's state (links
seen, a host's earlier pages, the frontier, the stats) stays with the page steps, which read
the analysis. Its inputs and its result are small and picklable, so it can run in another
process and give there exactly what it gives inline.

This module imports no part of the crawler: a page process loads only the parsers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from harvestman.extract.products import ProductScan, scan_products
from harvestman.parse import Page, parse_html
from harvestman.urls import DEFAULT_TRACKING_PARAMS, MAX_URL_LENGTH, UrlNormalizer
from harvestman.validate import Validator, Verdict, VerdictStatus

if TYPE_CHECKING:
    from harvestman.config import Settings

__all__ = ["AnalysisSpec", "PageAnalysis", "PageAnalyzer"]


@dataclass(frozen=True, slots=True)
class AnalysisSpec:
    """The settings an analysis depends on, as plain values (sent once to a page process).

    ``validate_min_bytes`` None: pages are not validated; ``products_max_price`` None: products
    are not extracted; ``near_duplicates``: the text's SimHash is computed; ``keep_text``: the
    page's text stays in the analysis, else it is left out (a fifth of a page process's
    message, most of its unpickling). The pipeline sets ``keep_text`` from its steps (any that
    ``reads_text``), on both paths alike: a step sees the text on every page or on none.
    """

    tracking_params: tuple[str, ...] = DEFAULT_TRACKING_PARAMS
    url_max_length: int = MAX_URL_LENGTH
    trailing_slash: str = "keep"
    max_links: int | None = None
    validate_min_bytes: int | None = None
    near_duplicates: bool = False
    products_max_price: Decimal | None = None
    keep_text: bool = True

    @classmethod
    def from_settings(cls, settings: Settings) -> AnalysisSpec:
        """The crawl's spec; ``keep_text`` is the pipeline's to set (from its steps)."""
        return cls(
            tracking_params=tuple(settings.url_tracking_params),
            url_max_length=settings.url_max_length,
            trailing_slash=settings.url_trailing_slash,
            max_links=settings.crawl_max_links_per_page,
            validate_min_bytes=settings.validate_min_bytes if settings.validate_pages else None,
            near_duplicates=settings.near_duplicates,
            products_max_price=(
                settings.extract_products_max_price if settings.extract_products else None
            ),
        )

    def normalizer(self) -> UrlNormalizer:
        return UrlNormalizer(
            self.tracking_params, self.url_max_length, trailing_slash=self.trailing_slash
        )

    def validator(self) -> Validator | None:
        """The validator pages (and, in the crawler's process, refused responses) are judged
        by; None when validation is off."""
        if self.validate_min_bytes is None:
            return None
        return Validator(min_bytes=self.validate_min_bytes)


@dataclass(slots=True)
class PageAnalysis:
    """One page's analysis. ``verdict`` is None when validation is off; ``fingerprint`` and
    ``products`` are None when off, or when the step that uses them will not run on this page
    (validation rejected it; products: not a 2xx). ``page.text`` is empty unless the spec
    keeps it."""

    page: Page
    verdict: Verdict | None = None
    fingerprint: int | None = None  # unsigned 64-bit SimHash of the page's text
    products: ProductScan | None = None


class PageAnalyzer:
    """Analyzes pages with one spec. ``normalizer`` (default: the spec's) may be the crawl's
    own, so that an inline analysis shares its memo; ``validator`` (default: the spec's) the
    one the crawl judges refused responses with."""

    def __init__(
        self,
        spec: AnalysisSpec,
        normalizer: UrlNormalizer | None = None,
        validator: Validator | None = None,
    ) -> None:
        self.spec = spec
        self.normalizer = normalizer or spec.normalizer()
        self.validator = validator if validator is not None else spec.validator()

    def analyze(
        self, url: str, status: int, headers: Mapping[str, str], body: bytes, charset: str | None
    ) -> PageAnalysis:
        """The analysis of an HTML response below 400 fetched (finally) from ``url``.

        Never raises on the content of ``body``; raises
        :class:`~harvestman.errors.UrlError` when ``url`` itself does not normalize (as
        :func:`~harvestman.parse.parse_html` does).
        """
        spec = self.spec
        page = parse_html(
            body, url, charset=charset, normalizer=self.normalizer, max_links=spec.max_links
        )
        analysis = PageAnalysis(page)
        verdict = None
        if self.validator is not None:
            verdict = analysis.verdict = self.validator.validate(status, headers, body, page.text)
        if verdict is None or verdict.status is VerdictStatus.OK:  # else the steps skip it
            if spec.near_duplicates and page.text:
                analysis.fingerprint = _fingerprint(page.text)
            if spec.products_max_price is not None and 200 <= status < 300:
                analysis.products = scan_products(
                    body, url, charset=charset, max_price=spec.products_max_price
                )
        if not spec.keep_text:
            page.text = ""
        return analysis


def _fingerprint(text: str) -> int:
    # Imported here: the SimHash fallback loads numpy (17 MB of a page process's RSS), which
    # only a crawl with near-duplicates on needs.
    from harvestman.simhash import sample_text, simhash64

    return simhash64(sample_text(text))
