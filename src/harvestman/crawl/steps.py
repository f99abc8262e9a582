"""The page steps that judge and extract: validation, stored text, near-duplicates, products,
site parsers. Each is built by ``from_settings`` (None: off) in :mod:`harvestman.crawl.wiring`.
Validation answers :class:`~harvestman.crawl.work.Rejected` for a page it rejects.

The verdict, the fingerprint and the product scan are the page's analysis
(:mod:`harvestman.crawl.analysis`, ``work.analysis``): these steps apply them to the crawl's
state and compute none of them.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Self

from harvestman.config import Settings
from harvestman.crawl.fetch import FetchResult
from harvestman.crawl.outcomes import Outcomes
from harvestman.crawl.run import CrawlRun
from harvestman.crawl.work import PageWork, Rejected
from harvestman.errors import ContentRejected, StoreError
from harvestman.extract.plugins import ParserRegistry
from harvestman.extract.rollouts import parse_rollout
from harvestman.records import CrawlRequest, Outcome, ParserRollout, UrlStatus
from harvestman.recrawl import RecrawlRule
from harvestman.stats import Stats
from harvestman.validate import Validator, Verdict, VerdictStatus

if TYPE_CHECKING:
    from harvestman.simhash import NearDuplicateIndex

log = logging.getLogger(__name__)


class ValidateStep:
    """Garbage pages are recorded with their reason, their content held back.

    Hard (the host refuses us): the host cools down and the URL is tried again after it.
    Soft: a page that needs JavaScript is recorded as ``needs_js`` and its links are not
    followed; a page that is merely small or textless keeps its title and metadata and still
    leads on. The reason recorded names the anti-bot vendor when one is known
    (``bot_check:cloudflare``).

    Error responses (:meth:`judge_refusal`, :meth:`record_refusal`) are judged too, for the
    statuses anti-bot services answer with: their outcome stays the HTTP failure, with the
    verdict and the vendor in its error and page record, and a hard one cools the host down.

    ``validator`` judges those; a page's verdict is its analysis's, by the same validator when
    the page was analyzed in the crawler's process.
    """

    on_rejected: ClassVar[bool] = False
    reads_text: ClassVar[bool] = False

    def __init__(
        self,
        validator: Validator,
        run: CrawlRun,
        outcomes: Outcomes,
        *,
        hard_cooldown: float,
        max_retries: int,
    ) -> None:
        self.validator = validator
        self.run_ = run
        self.outcomes = outcomes
        self.hard_cooldown = hard_cooldown
        self.max_retries = max_retries

    @classmethod
    def from_settings(
        cls, settings: Settings, run: CrawlRun, outcomes: Outcomes, validator: Validator | None
    ) -> Self | None:
        """None when validation is off (``validator`` None: the analysis validates nothing)."""
        if validator is None:
            return None
        return cls(
            validator,
            run,
            outcomes,
            hard_cooldown=settings.validate_hard_cooldown,
            max_retries=settings.fetch_max_retries,
        )

    def run(self, work: PageWork) -> Rejected | None:
        verdict, record = work.analysis.verdict, work.record
        if verdict is None:  # the analysis did not validate: nothing to judge by
            return None
        record.validation_status = verdict.status.value
        if verdict.status is VerdictStatus.OK:
            return None
        reason = "needs_js" if verdict.needs_render else verdict.label or verdict.status.value
        record.rejection_reason = reason
        record.content_hash = None  # the content is held back; what names the page stays
        self.run_.stats.inc(f"validate/{verdict.status.value}/{verdict.reason}")
        if verdict.vendor is not None:
            self.run_.stats.inc(f"validate/vendor/{verdict.vendor}")
        detail = verdict.detail
        if verdict.vendor is not None and reason != verdict.label:  # needs_js: name who asked
            detail = f"{verdict.label}: {detail}"
        exc = ContentRejected(verdict.status.value, reason, detail)
        request = work.request
        if verdict.status is VerdictStatus.HARD:
            record.title = record.description = record.canonical = None
            self.run_.frontier.hold(request.host, self.run_.clock() + self.hard_cooldown)
            if request.attempts < self.max_retries:
                again = self.outcomes.rejected(
                    request,
                    exc,
                    record,
                    status=UrlStatus.PENDING,
                    again=self.hard_cooldown,
                    attempts=request.attempts + 1,
                )
                return Rejected(again, halt=True)
            failed = self.outcomes.rejected(
                request, exc, record, status=UrlStatus.FAILED, again=self.outcomes.visited_ttl
            )
            return Rejected(failed, halt=True)
        done = self.outcomes.rejected(
            request, exc, record, status=UrlStatus.COMPLETED, again=self.outcomes.visited_ttl
        )
        # No renderer here: the links of a page that needs one are not followed.
        return Rejected(done, halt=verdict.needs_render)

    def judge_refusal(self, request: CrawlRequest, result: FetchResult) -> Verdict | None:
        """The verdict on an error response (None: nothing to say); a hard one cools the host
        down, as a hard page does."""
        verdict = self.validator.validate(result.status, result.headers, result.body)
        if verdict.status is VerdictStatus.OK:
            return None
        stats = self.run_.stats
        stats.inc(f"validate/{verdict.status.value}/{verdict.reason}")
        if verdict.vendor is not None:
            stats.inc(f"validate/vendor/{verdict.vendor}")
        if verdict.status is VerdictStatus.HARD:
            self.run_.frontier.hold(request.host, self.run_.clock() + self.hard_cooldown)
        return verdict

    @staticmethod
    def record_refusal(outcome: Outcome, verdict: Verdict) -> None:
        """The HTTP failure's error and page record carry the verdict and the vendor."""
        what = f"{verdict.status.value}: {verdict.label}" + (
            f" ({verdict.detail})" if verdict.detail else ""
        )
        outcome.error = f"{outcome.error}; {what}"[:2000]
        page = outcome.page
        if page is not None:
            page.error = outcome.error
            page.validation_status = verdict.status.value
            page.rejection_reason = verdict.label


class StoreTextStep:
    """The page's visible text goes to the store (for search), cut at ``max_chars``."""

    on_rejected: ClassVar[bool] = False
    reads_text: ClassVar[bool] = True

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars

    @classmethod
    def from_settings(cls, settings: Settings) -> Self | None:
        return cls(settings.store_text_max_chars) if settings.store_text else None

    def run(self, work: PageWork) -> None:
        work.record.text = work.page.text[: self.max_chars]


class NearDuplicateStep:
    """A page that (nearly) repeats an earlier page of its host: recorded as such, its links
    not followed (they are the original's)."""

    on_rejected: ClassVar[bool] = False
    reads_text: ClassVar[bool] = False

    def __init__(self, stats: Stats, max_distance: int) -> None:
        # Imported here: the SimHash fallback loads numpy (17 MB of RSS, ~0.1 s of start-up),
        # which only a crawl with near-duplicates on needs.
        from harvestman.simhash import NearDuplicateIndex, to_signed64

        self.stats = stats
        self.max_distance = max_distance
        self.by_host: dict[str, NearDuplicateIndex] = {}
        self.new_index = NearDuplicateIndex
        self.to_signed64 = to_signed64

    @classmethod
    def from_settings(cls, settings: Settings, stats: Stats) -> Self | None:
        return cls(stats, settings.near_duplicate_distance) if settings.near_duplicates else None

    def run(self, work: PageWork) -> None:
        fingerprint = work.analysis.fingerprint  # None: the page has no text
        if fingerprint is None:
            return
        request, record = work.request, work.record
        record.simhash = self.to_signed64(fingerprint)
        index = self.by_host.get(request.host)
        if index is None:
            index = self.by_host[request.host] = self.new_index(max_distance=self.max_distance)
        original = index.add(request.url_hash, fingerprint)
        if original is not None and original != request.url_hash:
            record.near_duplicate_of = original
            work.follow = False
            self.stats.inc("content/near_duplicates")


def product_recrawl(settings: Settings) -> RecrawlRule | None:
    """A product page's adaptive re-crawl; None when products or the rule are off. After a
    change a product page never waits longer than any page would (``crawl_visited_ttl``: 0
    re-crawls every page on every run, product pages too)."""
    baseline = min(settings.products_recrawl_interval, settings.crawl_visited_ttl)
    if not settings.extract_products or baseline <= 0:
        return None
    return RecrawlRule(baseline, max(baseline, settings.products_recrawl_max_interval))


class ProductsStep:
    """schema.org products of a 2xx page (scanned by the analysis, up to
    ``extract_products_max_price``)."""

    on_rejected: ClassVar[bool] = False
    reads_text: ClassVar[bool] = False

    def __init__(self, stats: Stats, recrawl: RecrawlRule | None = None) -> None:
        self.stats = stats
        self.recrawl = recrawl  # None: a product page is due again like any page

    @classmethod
    def from_settings(cls, settings: Settings, stats: Stats) -> Self | None:
        if not settings.extract_products:
            return None
        return cls(stats, product_recrawl(settings))

    def run(self, work: PageWork) -> None:
        scan = work.analysis.products  # None: not a 2xx
        if scan is None:
            return
        if scan.rejected:
            self.stats.inc("extract/products/rejected", scan.rejected)
        if scan.products:
            work.products = scan.products
            work.recrawl = self.recrawl
            self.stats.inc("extract/products/pages")
            self.stats.inc("extract/products/found", len(scan.products))


class ParsersStep:
    """Site parsers (settings paths and installed entry points) on a 2xx page; the records,
    runs and failures go to ``work.parsed``. A parser is handed the parsed page, its text
    included."""

    on_rejected: ClassVar[bool] = False
    reads_text: ClassVar[bool] = True

    def __init__(self, registry: ParserRegistry, stats: Stats) -> None:
        self.registry = registry
        self.stats = stats

    @classmethod
    def from_settings(cls, settings: Settings, stats: Stats, run: CrawlRun) -> ParsersStep | None:
        """None when parsers are off or none loaded: such a crawl pays nothing per page. A
        plugin that fails to load is logged and counted, and the others run. With a parser
        loaded in several versions the step is a :class:`VersionedParsersStep` (a gate too)."""
        if not settings.parsers_enabled:
            return None
        registry = ParserRegistry.load(settings.parsers)
        if registry.failures:
            stats.inc("parsers/load_failed", len(registry.failures))
        if not registry:
            return None
        configured = [parse_rollout(text) for text in settings.parser_rollouts]
        if not registry.versioned:
            registry.set_rollouts(configured)  # they pick among versions: none here
            return ParsersStep(registry, stats)
        return VersionedParsersStep(
            registry, stats, run, configured=configured, refresh=settings.parser_rollout_refresh
        )

    def run(self, work: PageWork) -> None:
        if not work.is_success:
            return
        result = work.result
        parsed = self.registry.parse(
            result.body, result.final_url, work.page, charset=result.charset
        )
        if parsed.runs:
            work.parsed = parsed
            self.stats.inc("extract/parsers/pages")
            self.stats.inc("extract/parsers/records", len(parsed.records))
            self.stats.inc("extract/parsers/failures", len(parsed.failures))


class VersionedParsersStep(ParsersStep):
    """Site parsers of which one is loaded in several versions: also a gate that, before a
    fetch, at most every ``refresh`` seconds, reads the stored rollouts (over the
    ``parser_rollouts`` setting's) so an admin's promotion or rollback reaches running crawls
    (``extract/rollouts.py``)."""

    def __init__(
        self,
        registry: ParserRegistry,
        stats: Stats,
        run: CrawlRun,
        *,
        configured: Sequence[ParserRollout] = (),
        refresh: float = 60.0,
    ) -> None:
        super().__init__(registry, stats)
        self.run_ = run
        self.configured = tuple(configured)
        self.refresh = refresh
        self.next_read = -math.inf
        registry.set_rollouts(self.configured)

    async def check(self, request: CrawlRequest) -> None:
        run = self.run_
        if run.clock() < self.next_read:
            return
        self.next_read = run.clock() + self.refresh  # before the read: one reader at a time
        try:
            stored = await run.store.rollouts.parser_rollouts()
        except StoreError as exc:  # the rollouts read before stay; the next turn tries again
            log.warning("parser rollouts not read (%s); keeping the previous ones", exc)
            return
        self.registry.set_rollouts([*self.configured, *stored])
