"""Failures as classes: each recorded error class name keeps its error_logs category."""

from __future__ import annotations

import pytest

import harvestman.archive.raw  # noqa: F401  (defines ArchiveError, a StoreError)
from harvestman.errors import ContentRejected, ListingInvalid, RobotsDenied, error_category
from harvestman.records import CrawlRequest, Outcome, PageRecord, UrlStatus

# The categories error_logs rows carried before failures were classes: they must not change.
STORED = {
    "network": ["NetworkError", "FetchTimeout", "ContentDecodingError"],
    "http": ["HttpStatusError", "TooManyRedirects", "RedirectLoop", "RedirectRefused",
             "BodyTooLarge"],
    "validation": ["ContentRejected", "RobotsUnavailable"],
    "storage": ["StoreError", "SchemaOutdated", "StoreUnavailable", "ArchiveError"],
    "parse": ["UrlError", "ListingInvalid", "FetchError", "ValueError", "KeyError"],
}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "category"),
    [(name, category) for category, names in STORED.items() for name in names],
)
def test_each_recorded_class_keeps_its_category(name: str, category: str) -> None:
    assert error_category(name) == category


def test_an_outcome_is_built_from_the_exception_and_its_page_carries_it() -> None:
    request = CrawlRequest(7, "http://a.test/", "h", "a.test", 0, 1, attempts=2)
    page = PageRecord("http://a.test/", "http://a.test/", "a.test", 200, "text/html", 10, 1.0, 1)

    outcome = Outcome.failed(request, ContentRejected("soft", "too_small"), 50.0, page=page,
                             status=UrlStatus.COMPLETED, status_code=200)  # fmt: skip

    assert (outcome.status, outcome.error_class, outcome.error, outcome.attempts) == (
        UrlStatus.COMPLETED, "ContentRejected", "soft: too_small", 2
    )  # fmt: skip
    assert (page.error_class, page.error) == ("ContentRejected", "soft: too_small")
    assert (outcome.next_crawl_at, outcome.status_code) == (50.0, 200)


def test_robots_denied_is_a_policy_with_its_own_category() -> None:
    assert (str(RobotsDenied()), RobotsDenied.category) == ("disallowed by robots.txt", "robots")
    assert ListingInvalid("no urls").category == "parse"
