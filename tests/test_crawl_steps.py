"""Each page step alone, on real pages (the test site's), with a real SQLite store behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SettingsFactory
from harvestman.crawl.analysis import AnalysisSpec
from harvestman.crawl.discovery_steps import FeedsStep, LinksStep
from harvestman.crawl.pages import ListingReader, PagePipeline
from harvestman.crawl.steps import NearDuplicateStep, StoreTextStep, ValidateStep
from harvestman.crawl.wiring import Wiring
from harvestman.records import UrlStatus
from harvestman.urls import UrlNormalizer
from harvestman.validate import Validator
from support.parts import Parts, crawl_parts, html_response, page_work, request_for
from testsite import GARBAGE_BODIES

ROOT = "http://127.0.0.1:9/"
ARTICLE = (
    "<html><head><title>A story</title></head><body><p>"
    + "A sentence of a real article, long enough to count as text for the validator. " * 5
    + "</p><a href='/next.html'>next</a></body></html>"
)
WITH_FEED = (
    "<html><head><title>Blog</title><link rel=alternate type='application/rss+xml' "
    "href='/feed.xml'><link rel=alternate type='application/atom+xml' href='/atom.xml'>"
    "</head><body><p>Posts are in the feeds.</p><a href='/about.html'>about</a></body></html>"
)


def validate_step(parts: Parts) -> ValidateStep:
    return ValidateStep(Validator(), parts.run, parts.outcomes, hard_cooldown=60.0,
                        max_retries=1)  # fmt: skip


@pytest.mark.parametrize(
    ("path", "status", "row_status", "title"),
    [
        ("/garbage/shell.html", "soft", UrlStatus.COMPLETED, "x"),
        ("/garbage/enable-js.html", "soft", UrlStatus.COMPLETED, "App"),
        ("/garbage/denied.html", "hard", UrlStatus.PENDING, None),
    ],
)
async def test_validation_rejects_garbage_and_holds_back_only_its_content(
    tmp_path: Path, path: str, status: str, row_status: UrlStatus, title: str | None
) -> None:
    async with crawl_parts(tmp_path, [ROOT]) as parts:
        work = page_work(parts, ROOT.rstrip("/") + path, GARBAGE_BODIES[path])

        rejected = validate_step(parts).run(work)

    assert rejected is not None
    assert (rejected.outcome.status, rejected.outcome.error_class) == (
        row_status,
        "ContentRejected",
    )
    assert work.record.validation_status == status
    assert (work.record.title, work.record.content_hash) == (title, None)
    assert rejected.halt is (path != "/garbage/shell.html")  # a shell's links still lead on


async def test_a_hard_rejection_cools_the_host_down_and_comes_back_after_it(
    tmp_path: Path,
) -> None:
    async with crawl_parts(tmp_path, [ROOT]) as parts:
        url = ROOT + "garbage/denied.html"
        work = page_work(parts, url, GARBAGE_BODIES["/garbage/denied.html"])

        rejected = validate_step(parts).run(work)

        assert rejected is not None
        assert (rejected.outcome.next_crawl_at, rejected.outcome.attempts) == (1060.0, 1)
        assert parts.run.frontier.hosts["127.0.0.1:9"].next_allowed == 1060.0


@pytest.mark.parametrize("body", [b"", b"   \n\t\r\n"])
async def test_an_empty_page_is_parsed_and_judged_too_small(tmp_path: Path, body: bytes) -> None:
    async with crawl_parts(tmp_path, [ROOT]) as parts:
        pipeline = PagePipeline(
            [validate_step(parts), LinksStep(parts.discovery)], parts.outcomes,
            ListingReader(parts.discovery, parts.outcomes, max_depth=1, max_urls=10,
                          max_bytes=1000, feed_poll_interval=60.0, normalizer=UrlNormalizer()),
            AnalysisSpec(validate_min_bytes=500, max_links=100), count=parts.run.stats.inc,
        )  # fmt: skip

        outcome, new_urls = pipeline.handle(request_for(ROOT), html_response(ROOT, body))

    assert outcome.page is not None
    assert (outcome.page.validation_status, outcome.page.rejection_reason) == ("soft", "too_small")
    assert (outcome.status, outcome.error_class, new_urls) == (
        UrlStatus.COMPLETED, "ContentRejected", []
    )  # fmt: skip


async def test_a_204_has_no_content_to_judge(tmp_path: Path) -> None:
    async with crawl_parts(tmp_path, [ROOT]) as parts:
        pipeline = PagePipeline(
            [validate_step(parts)], parts.outcomes,
            ListingReader(parts.discovery, parts.outcomes, max_depth=1, max_urls=10,
                          max_bytes=1000, feed_poll_interval=60.0, normalizer=UrlNormalizer()),
            AnalysisSpec(validate_min_bytes=500, max_links=100), count=parts.run.stats.inc,
        )  # fmt: skip

        outcome, _ = pipeline.handle(request_for(ROOT), html_response(ROOT, b"", status=204))

    assert outcome.page is not None
    assert (outcome.status, outcome.error_class, outcome.page.validation_status) == (
        UrlStatus.COMPLETED, None, None
    )  # fmt: skip
    assert parts.run.stats["parse/pages"] == 0


async def test_feeds_become_feed_rows_before_the_link_step_sees_them_as_pages(
    tmp_path: Path,
) -> None:
    async with crawl_parts(tmp_path, [ROOT]) as parts:
        work = page_work(parts, ROOT, WITH_FEED)

        FeedsStep(parts.discovery).run(work)
        LinksStep(parts.discovery).run(work)

    assert [(row.url, row.kind, row.depth) for row in work.new_urls] == [
        (ROOT + "feed.xml", "feed", 1),
        (ROOT + "atom.xml", "feed", 1),
        (ROOT + "about.html", "page", 1),
    ]


async def test_without_the_feed_step_a_feed_link_is_a_page(tmp_path: Path) -> None:
    async with crawl_parts(tmp_path, [ROOT]) as parts:
        work = page_work(parts, ROOT, WITH_FEED)

        LinksStep(parts.discovery).run(work)

    assert {(row.url, row.kind) for row in work.new_urls} == {
        (ROOT + "feed.xml", "page"),
        (ROOT + "atom.xml", "page"),
        (ROOT + "about.html", "page"),
    }


async def test_links_stop_at_max_depth_and_at_the_scope(tmp_path: Path) -> None:
    body = "<a href='/in.html'>in</a><a href='http://elsewhere.example/'>out</a>"
    async with crawl_parts(tmp_path, [ROOT], max_depth=2) as parts:
        shallow, deep = page_work(parts, ROOT, body, depth=1), page_work(parts, ROOT, body, depth=2)

        LinksStep(parts.discovery).run(shallow)
        LinksStep(parts.discovery).run(deep)

    assert [(row.url, row.depth) for row in shallow.new_urls] == [(ROOT + "in.html", 2)]
    assert deep.new_urls == []
    assert parts.run.stats["frontier/out_of_scope"] == 1


async def test_a_near_duplicate_is_marked_and_its_links_are_not_followed(tmp_path: Path) -> None:
    async with crawl_parts(tmp_path, [ROOT]) as parts:
        step = NearDuplicateStep(parts.run.stats, max_distance=3)
        first = page_work(parts, ROOT + "a.html", ARTICLE)
        again = page_work(parts, ROOT + "b.html", ARTICLE.replace("A story", "Same story"))

        step.run(first)
        step.run(again)

    assert (first.record.near_duplicate_of, first.follow) == (None, True)
    assert (again.record.near_duplicate_of, again.follow) == (first.request.url_hash, False)
    assert again.record.simhash == first.record.simhash


async def test_stored_text_is_cut_at_its_limit(tmp_path: Path) -> None:
    async with crawl_parts(tmp_path, [ROOT]) as parts:
        work = page_work(parts, ROOT, ARTICLE)

        StoreTextStep(max_chars=20).run(work)

    assert work.record.text == "A sentence of a real"


def listing_reader(parts: Parts) -> ListingReader:
    return ListingReader(parts.discovery, parts.outcomes, max_depth=2, max_urls=100,
                         max_bytes=100_000, feed_poll_interval=60.0,
                         normalizer=UrlNormalizer())  # fmt: skip


async def test_a_feed_queues_its_items_and_is_due_again_after_its_poll_interval(
    tmp_path: Path,
) -> None:
    rss = (
        "<?xml version='1.0'?><rss version='2.0'><channel><title>t</title>"
        f"<item><link>{ROOT}posts/1.html</link></item><item><link>{ROOT}posts/2.html</link>"
        "</item><item><link>http://elsewhere.example/x</link></item></channel></rss>"
    )
    async with crawl_parts(tmp_path, [ROOT]) as parts:
        feed = ROOT + "feed.xml"
        result = html_response(feed, rss)

        outcome, rows = listing_reader(parts).read(request_for(feed, kind="feed"), result)

    assert [(row.url, row.kind, row.depth) for row in rows] == [
        (ROOT + "posts/1.html", "page", 1),
        (ROOT + "posts/2.html", "page", 1),
    ]
    assert (outcome.status, outcome.next_crawl_at) == (UrlStatus.COMPLETED, 1060.0)


async def test_a_listing_that_is_not_one_fails_as_listing_invalid(tmp_path: Path) -> None:
    async with crawl_parts(tmp_path, [ROOT]) as parts:
        sitemap = ROOT + "sitemap.xml"
        result = html_response(sitemap, "<html><body>not a sitemap</body></html>")

        outcome, rows = listing_reader(parts).read(request_for(sitemap, kind="sitemap"), result)

    assert (outcome.status, outcome.error_class, rows) == (UrlStatus.FAILED, "ListingInvalid", [])
    assert outcome.next_crawl_at == 2000.0  # a sitemap: again after the visited TTL
    assert parts.run.stats["sitemap/invalid"] == 1


@pytest.mark.parametrize(
    ("features", "keeps_text"),
    [({}, False), ({"store_text": True}, True), ({"near_duplicates": True}, False)],
)
async def test_the_text_is_kept_for_pages_when_a_step_that_is_on_reads_it(
    tmp_path: Path, make_settings: SettingsFactory, features: dict[str, bool], keeps_text: bool
) -> None:
    """What the wiring builds: the page's text is kept in the analysis (inline and in a page
    process) when a step that reads it is on, and one validator judges pages and refusals."""
    settings = make_settings(parse_processes=1, **features)
    async with crawl_parts(tmp_path, [ROOT]) as parts:
        wiring = Wiring(settings, parts.run, on_pages=None, tasks=set())
        workers = wiring.page_workers()

        outcome, _ = wiring.pipeline.handle(request_for(ROOT), html_response(ROOT, ARTICLE))

    assert workers is not None
    assert workers.spec is wiring.pipeline.spec  # the page processes keep what inline keeps
    assert wiring.pipeline.spec.keep_text is keeps_text
    page = outcome.page
    assert page is not None
    assert bool(page.text) is keeps_text  # stored text
    assert (page.simhash is not None) is bool(features.get("near_duplicates"))  # text or not
    assert wiring.validate is not None
    assert wiring.validate.validator is wiring.pipeline.analyzer.validator
