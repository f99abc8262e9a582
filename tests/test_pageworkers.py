"""Page processes: a crawl that analyzes its pages in them (all, or past the inline threshold)
stores what an inline crawl stores, a step sees the page as it would inline, and a page process
killed with SIGKILL loses no page."""

from __future__ import annotations

import asyncio
import io
import math
import os
import pickle
import random
import select
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pytest
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from conftest import SettingsFactory, serve
from harvestman.crawl.analysis import AnalysisSpec, PageAnalysis, PageAnalyzer
from harvestman.crawl.fetch import FetchResult
from harvestman.crawl.pageprocess import (
    HEADER,
    FrameReader,
    Frames,
    answer_frame,
    frame,
    page_frames,
    read_answer,
)
from harvestman.crawl.pageprocess import serve as serve_pages
from harvestman.crawl.pages import ListingReader, PagePipeline
from harvestman.crawl.pageworkers import PageWorkers
from harvestman.crawl.work import PageWork
from harvestman.stats import Stats
from harvestman.urls import UrlNormalizer
from support.crawling import Crawled, crawl
from support.parts import crawl_parts, request_for
from testsite import GARBAGE_BODIES, TestSite

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

FIXTURES = Path(__file__).parent / "fixtures" / "products"
PRODUCT_PAGES = ["google_executive_anvil.html", "three_forms.html", "validation.html"]
PARAGRAPH = "<p>A page of the shop with enough words in it to count as a real page of text.</p>"
# Columns that say when, how fast or under which id, not what was found.
VARYING = {
    "id", "crawl_id", "page_id", "parent_id", "fetched_at", "crawl_duration_ms", "next_crawl_at",
    "lease_until", "leased_by", "discovered_at", "updated_at", "last_fetched_at", "created_at",
    "priority", "depth", "discovered_via",
}  # fmt: skip
POOL = {"parse_processes": 1, "parse_processes_after": 0}
INLINE = {"parse_processes": 0}


def stored(crawled: Crawled) -> tuple[list[dict[str, Any]], ...]:
    """The crawl's URL rows, pages and products without what varies from run to run, sorted."""
    store = crawled.crawler.store
    crawl_id = crawled.crawler.crawl_id
    products = list(store.iter_products(crawl_id))  # type: ignore[attr-defined]

    def kept(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found = [{k: v for k, v in row.items() if k not in VARYING} for row in rows]
        return sorted(found, key=repr)

    return kept(crawled.rows), kept(crawled.pages), kept(products)


async def crawl_kept(settings: Any, seed: str) -> tuple[Crawled, tuple[list[dict[str, Any]], ...]]:
    crawled = await crawl(settings, seed)
    store = crawled.crawler.store
    try:
        return crawled, stored(crawled)
    finally:
        store.engine.dispose()  # type: ignore[attr-defined]


@pytest.fixture
async def shop() -> AsyncIterator[str]:
    """A root linking to product pages and to a page that validation rejects."""

    async def handle(request: web.Request) -> web.Response:
        if request.path == "/":
            links = "".join(f'<a href="/p/{name}">{name}</a> ' for name in PRODUCT_PAGES)
            body = f"<html><title>Shop</title><body>{PARAGRAPH}{links}<a href=/shell>x</a>"
        elif request.path == "/shell":
            body = "<html><title>x</title><body><div id=app></div></body></html>"
        elif request.path.removeprefix("/p/") in PRODUCT_PAGES:
            html = (FIXTURES / request.path.removeprefix("/p/")).read_text()
            body = html.replace("</body>", PARAGRAPH + "</body>")
        else:
            raise web.HTTPNotFound()
        return web.Response(text=body, content_type="text/html")

    async with serve(handle) as port:
        yield f"http://127.0.0.1:{port}/"


@pytest.mark.parametrize(
    "features",
    [{}, {"near_duplicates": True, "store_text": True, "crawl_max_links_per_page": 5}],
    ids=["defaults", "text-simhash-link-cap"],
)
async def test_a_crawl_with_page_processes_stores_what_an_inline_crawl_stores(
    site: TestSite, make_settings: SettingsFactory, tmp_path: Path, features: dict[str, Any]
) -> None:
    def settings(name: str, **values: Any) -> Any:
        url = f"sqlite:///{tmp_path / name}"
        return make_settings(database_url=url, crawl_max_depth=5, **features, **values)

    inline, inline_rows = await crawl_kept(settings("inline.db", **INLINE), site.url("/"))
    site.reset_counts()  # the pages that fail once fail again
    pooled, pooled_rows = await crawl_kept(settings("pool.db", **POOL), site.url("/"))

    assert pooled_rows == inline_rows
    assert inline.crawler.stats["parse/in_processes"] == 0
    assert pooled.crawler.stats["parse/processes_started"] == 1
    assert pooled.crawler.stats["parse/in_processes"] > 0


async def test_products_and_rejections_are_the_same_from_page_processes(
    shop: str, make_settings: SettingsFactory, tmp_path: Path
) -> None:
    def settings(name: str, **values: Any) -> Any:
        return make_settings(database_url=f"sqlite:///{tmp_path / name}", **values)

    _, (_, inline_pages, inline_products) = await crawl_kept(settings("i.db", **INLINE), shop)
    pooled, (_, pooled_pages, pooled_products) = await crawl_kept(settings("p.db", **POOL), shop)

    assert (pooled_pages, pooled_products) == (inline_pages, inline_products)
    assert len(inline_products) >= len(PRODUCT_PAGES)
    assert {page["rejection_reason"] for page in pooled_pages} == {None, "too_small"}
    assert pooled.crawler.stats["parse/in_processes"] > 0


WORDS = random.Random(28).sample(sorted({f"{a}{b}" for a in "bcdfgklmnprst" for b in "aeiou"}), 60)


def article(number: int) -> str:
    """A paragraph of its own for each number (no two articles are near-duplicates)."""
    pick = random.Random(number)
    return " ".join(pick.choice(WORDS) + pick.choice(WORDS) for _ in range(120))


class MixedSite:
    """A root, 12 articles each linking to a near-copy of itself, product pages and pages
    validation rejects. While ``awaits_process``, the copies (depth 2) are served once the
    crawler's page process has started, so they are analyzed there while the first pages were
    analyzed inline."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.awaits_process = False


@pytest.fixture
async def mixed_site() -> AsyncIterator[MixedSite]:
    articles = 12

    async def handle(request: web.Request) -> web.Response:
        path = request.path
        if path == "/":
            links = [f"/a/{n}" for n in range(articles)]
            links += [f"/p/{name}" for name in PRODUCT_PAGES] + list(GARBAGE_BODIES)
            anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
            body = f"<html><title>Mixed</title><body>{PARAGRAPH}{anchors}</body></html>"
        elif path.startswith("/a/") and path.removeprefix("/a/").split("/")[0].isdigit():
            number = int(path.removeprefix("/a/").split("/")[0])
            text = article(number)
            if path.endswith("/copy"):  # found only from its original: always seen after it
                for _ in range(500 if site.awaits_process else 0):  # 5 s at most
                    if page_processes():
                        break
                    await asyncio.sleep(0.01)
            # The copy's text is the original's: its markup differs, not what it says.
            copy = f'<a href="/a/{number}/copy" class="{path.rsplit("/", 1)[-1]}">copy</a>'
            body = f"<html><title>Article {number}</title><body><p>{text}</p>{copy}</body></html>"
        elif path.removeprefix("/p/") in PRODUCT_PAGES:
            html = (FIXTURES / path.removeprefix("/p/")).read_text()
            body = html.replace("</body>", PARAGRAPH + "</body>")
        elif path in GARBAGE_BODIES and path != "/garbage/denied.html":  # hard: held host
            body = GARBAGE_BODIES[path]
        else:
            raise web.HTTPNotFound()
        return web.Response(text=body, content_type="text/html")

    async with serve(handle) as port:
        site = MixedSite(f"http://127.0.0.1:{port}/")
        yield site


async def test_a_crawl_past_the_inline_threshold_stores_what_an_inline_crawl_stores(
    mixed_site: MixedSite, make_settings: SettingsFactory, tmp_path: Path
) -> None:
    """One crawl takes both paths (its first pages inline, the rest in its page process):
    verdicts, fingerprints and near-duplicates, products and stored text are the same as
    those of a crawl that never leaves its process."""

    def settings(name: str, **values: Any) -> Any:
        return make_settings(
            database_url=f"sqlite:///{tmp_path / name}",
            near_duplicates=True,
            store_text=True,
            discovery_sitemaps=False,
            fetch_timeout=10.0,  # a copy may wait for the page process
            **values,
        )

    inline, inline_rows = await crawl_kept(settings("i.db", **INLINE), mixed_site.url)
    mixed_site.awaits_process = True
    mixed, mixed_rows = await crawl_kept(
        settings("m.db", parse_processes=1, parse_processes_after=5), mixed_site.url
    )

    assert mixed_rows == inline_rows
    stats = mixed.crawler.stats
    assert stats["parse/in_processes"] >= 12  # the copies at least
    assert stats["parse/pages"] - stats["parse/in_processes"] >= 5  # the first five inline
    assert inline.crawler.stats["parse/in_processes"] == 0
    _, pages, products = mixed_rows
    copies = [page for page in pages if page["url"].endswith("/copy")]
    assert len(copies) == 12
    assert all(page["near_duplicate_of"] is not None for page in copies)
    assert all(page["simhash"] is not None and page["text"] for page in copies)
    assert {page["rejection_reason"] for page in pages} == {None, "too_small", "needs_js"}
    assert len(products) >= len(PRODUCT_PAGES)


class SeesText:
    """A page step that keeps the text it saw of each page."""

    on_rejected: ClassVar[bool] = False
    reads_text: ClassVar[bool] = True

    def __init__(self) -> None:
        self.seen: list[str] = []

    def run(self, work: PageWork) -> None:
        self.seen.append(work.page.text)


class ReadsNoText(SeesText):
    reads_text: ClassVar[bool] = False


@pytest.mark.parametrize("step", [SeesText, ReadsNoText])
async def test_a_step_sees_the_text_from_a_page_process_as_inline_when_it_reads_text(
    tmp_path: Path, step: type[SeesText]
) -> None:
    """The text is kept for the steps that say they read it, on both paths; a step that does
    not sees none on either (never the text on some pages only)."""
    pages = [response(number) for number in range(3)]
    async with crawl_parts(tmp_path, [page.final_url for page in pages]) as parts:
        seen = step()
        listings = ListingReader(parts.discovery, parts.outcomes, max_depth=1, max_urls=10,
                                 max_bytes=1000, feed_poll_interval=60.0,
                                 normalizer=UrlNormalizer())  # fmt: skip
        spec = AnalysisSpec(validate_min_bytes=500, near_duplicates=True)
        pipeline = PagePipeline([seen], parts.outcomes, listings, spec, count=parts.run.stats.inc)
        stats = Stats()
        async with PageWorkers(pipeline.spec, stats, processes=1, start_after=0) as workers:
            await workers.start()
            for page in pages:
                analysis = await workers.analyze(page)
                assert analysis is not None
                pipeline.handle(request_for(page.final_url), page, analysis)  # from the process
                pipeline.handle(request_for(page.final_url), page)  # inline

    assert stats["parse/in_processes"] == len(pages)
    from_process, inline = seen.seen[::2], seen.seen[1::2]
    assert from_process == inline
    if step.reads_text:
        assert all(PARAGRAPH.removeprefix("<p>").removesuffix("</p>") in t for t in inline)
    else:
        assert inline == ["", "", ""]


def page_processes() -> list[int]:
    """The page processes this process started."""
    found = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"harvestman.crawl.pageprocess" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(int(child))
    return found


def response(number: int) -> FetchResult:
    url = f"http://127.0.0.1:9/p/{number}.html"
    body = (
        f"<html><title>Page {number}</title><body>{PARAGRAPH}"
        + "".join(f'<a href="/p/{number * 10 + n}.html">next</a>' for n in range(10))
    ).encode()
    headers = CIMultiDictProxy(CIMultiDict({"Content-Type": "text/html"}))
    return FetchResult(url, url, 200, headers, body, "text/html", None)


def event_loop_of(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    if name == "uvloop":  # what the CLI runs on when it is installed
        return pytest.importorskip("uvloop").new_event_loop  # type: ignore[no-any-return]
    return asyncio.new_event_loop


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_killed_page_process_hands_its_pages_back_and_another_takes_its_place(
    loop: str,
) -> None:
    with asyncio.Runner(loop_factory=event_loop_of(loop)) as runner:
        runner.run(kill_a_page_process())


async def kill_a_page_process() -> None:
    spec = AnalysisSpec(validate_min_bytes=500, products_max_price=None, keep_text=False)
    inline = PageAnalyzer(spec)
    stats = Stats()
    pages = [response(number) for number in range(300)]

    def expected(result: FetchResult) -> PageAnalysis:
        analysis = inline.analyze(result.final_url, 200, result.headers, result.body, None)
        analysis.page.text = ""  # the spec does not keep it
        return analysis

    async with PageWorkers(
        spec, stats, processes=1, start_after=0, max_queue_wait=math.inf
    ) as workers:
        await workers.start()
        [pid] = page_processes()
        # All 300 are written to the process before any reply is read; it is killed on the
        # first reply, long before it could analyze the rest.
        tasks = [asyncio.ensure_future(workers.analyze(page)) for page in pages]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        os.kill(pid, signal.SIGKILL)
        answers = await asyncio.gather(*tasks)

        handed_back = [page for page, answer in zip(pages, answers, strict=True) if answer is None]
        assert handed_back  # these the crawler analyzes inline
        for page, answer in zip(pages, answers, strict=True):
            assert answer is None or answer == expected(page)
        assert stats["parse/processes_lost"] == 1

        assert await workers.analyze(pages[1]) is None  # while another process starts
        await workers.start()
        assert await workers.analyze(pages[1]) == expected(pages[1])
        assert stats["parse/processes_started"] == 2
        assert page_processes() != [pid]
    assert page_processes() == []  # leaving the workers ends their processes


@pytest.fixture
async def killing_site() -> AsyncIterator[str]:
    """60 pages in a chain of tens; serving /p/30 kills the crawler's page processes."""

    async def handle(request: web.Request) -> web.Response:
        path = request.path.removeprefix("/p/")
        number = 0 if request.path == "/" else int(path) if path.isdigit() else 60
        if number >= 60:  # robots.txt and sitemap.xml too
            raise web.HTTPNotFound()
        if number == 30:  # the crawl with page processes started its one at the root
            for pid in page_processes():
                os.kill(pid, signal.SIGKILL)
        links = "".join(f'<a href="/p/{n}">{n}</a> ' for n in range(number + 1, number + 11))
        body = f"<html><title>Page {number}</title><body>{PARAGRAPH}{links}</body></html>"
        return web.Response(text=body, content_type="text/html")

    async with serve(handle) as port:
        yield f"http://127.0.0.1:{port}/"


async def test_a_crawl_whose_page_process_is_killed_loses_no_page(
    killing_site: str, make_settings: SettingsFactory, tmp_path: Path
) -> None:
    def settings(name: str, **values: Any) -> Any:
        url = f"sqlite:///{tmp_path / name}"
        return make_settings(database_url=url, crawl_max_depth=60, crawl_concurrency=4, **values)

    _, inline_rows = await crawl_kept(settings("inline.db", **INLINE), killing_site)
    pooled, pooled_rows = await crawl_kept(settings("pool.db", **POOL), killing_site)

    assert pooled_rows == inline_rows
    titles = [page["title"] for page in pooled_rows[1] if page["status_code"] == 200]
    assert sorted(titles) == sorted(f"Page {n}" for n in range(60))
    assert pooled.crawler.stats["parse/processes_lost"] == 1


async def test_pages_go_inline_while_a_process_is_behind_and_back_once_it_caught_up() -> None:
    spec = AnalysisSpec(keep_text=False)
    stats = Stats()
    pages = [response(number) for number in range(4)]
    # Any wait in the queue counts as behind: the first answer's (a few µs) is enough.
    async with PageWorkers(spec, stats, processes=1, start_after=0, max_queue_wait=0.0) as workers:
        await workers.start()
        [pid] = page_processes()
        assert await workers.analyze(pages[0]) is not None  # it held nothing: not behind
        os.kill(pid, signal.SIGSTOP)  # it cannot answer: what it holds stays held
        try:
            held = asyncio.ensure_future(workers.analyze(pages[1]))
            await asyncio.sleep(0)  # handed over: sent, not answered
            assert await workers.analyze(pages[2]) is None  # behind, and holding a page
        finally:
            os.kill(pid, signal.SIGCONT)
        assert await held is not None
        assert await workers.analyze(pages[3]) is not None  # holds nothing: caught up
    assert (stats["parse/in_processes"], stats["parse/inline_behind"]) == (3, 1)


async def test_a_process_that_keeps_up_gets_every_page() -> None:
    spec = AnalysisSpec(keep_text=False)
    stats = Stats()
    pages = [response(number) for number in range(40)]
    async with PageWorkers(spec, stats, processes=1, start_after=0) as workers:
        await workers.start()
        # All 40 in one turn of the loop: none was answered yet, so none can be behind.
        answers = await asyncio.gather(*(workers.analyze(page) for page in pages))

    assert all(answer is not None for answer in answers)
    assert (stats["parse/in_processes"], stats["parse/inline_behind"]) == (40, 0)


class Replies(io.BytesIO):
    """A page process's output that keeps each write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []

    def write(self, data: ReadableBuffer) -> int:
        self.writes.append(bytes(data))
        return super().write(data)


def page_frame(number: int) -> bytes:
    page = response(number)
    return b"".join(
        page_frames(number, time.monotonic(), page.final_url, 200, page.headers, page.body, None)
    )


def answered(*answers: bytes) -> list[int]:
    """The page numbers answered by these answer pickles, in order (each with an analysis)."""
    numbers = []
    for answer in answers:
        number, analysis, _ = read_answer(answer)
        assert isinstance(analysis, PageAnalysis)
        numbers.append(number)
    return numbers


def answers_in(data: bytes) -> list[bytes]:
    """The answer pickles of a page process's output."""
    frames = Frames()
    frames.feed(data)
    found = []
    while (answer := frames.pop()) is not None:
        found.append(answer)
    assert not frames.buffer[frames.start :], "a partial frame"
    return found


def test_a_page_process_writes_the_answers_of_waiting_pages_together() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as requests:  # 20 pages wait before it reads the first
        requests.write(frame(AnalysisSpec(keep_text=False)))
        requests.write(b"".join(page_frame(number) for number in range(20)))
    replies = Replies()
    serve_pages(read_end, replies)
    os.close(read_end)

    assert [answered(*answers_in(data)) for data in replies.writes] == [
        list(range(8)), list(range(8, 16)), list(range(16, 20))
    ]  # fmt: skip


def test_a_page_process_holds_no_answer_back_while_it_waits_for_pages() -> None:
    read_end, write_end = os.pipe()
    replies_read, replies_write = os.pipe()
    with os.fdopen(replies_write, "wb") as replies:
        serving = threading.Thread(target=serve_pages, args=(read_end, replies))
        serving.start()
        answers = FrameReader(replies_read)
        with os.fdopen(write_end, "wb", buffering=0) as requests:
            requests.write(frame(AnalysisSpec(keep_text=False)))
            for number in range(3):  # the next page goes only once this one is answered
                requests.write(page_frame(number))
                # Held back, it would never come: fail then instead of waiting for ever.
                assert select.select([replies_read], [], [], 60)[0], "the answer was held back"
                answer = answers.next()
                assert answer is not None
                assert answered(answer) == [number]
        serving.join()
    os.close(read_end)
    os.close(replies_read)


def test_a_page_goes_out_as_its_fields_and_its_body_as_it_is() -> None:
    page = response(7)
    headers = CIMultiDictProxy(CIMultiDict([("Content-Type", "text/html"), ("Set-Cookie", "a=1")]))
    headers_out = CIMultiDict(headers)
    headers_out.add("set-cookie", "b=2")
    size, meta, body_size, body = page_frames(
        7, 1.5, page.final_url, 200, headers_out, page.body, None
    )

    assert body is page.body  # neither pickled nor copied
    assert HEADER.unpack(size)[0] == len(meta)
    assert HEADER.unpack(body_size)[0] == len(page.body)
    number, sent, url, status, items, charset = pickle.loads(meta)
    assert (number, sent, url, status, charset) == (7, 1.5, page.final_url, 200, None)
    assert items == (("Content-Type", "text/html"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2"))
    assert {type(name) for name, _ in items} == {str}  # not multidict's istr: a class to pickle


PRODUCT_PAGE = (
    b'<html><head><script type="application/ld+json">{"@context": "https://schema.org",'
    b' "@type": "Product", "name": "Pen", "offers": {"@type": "Offer", "price": "9.50",'
    b' "priceCurrency": "EUR"}}</script><script type="application/ld+json">{oops</script>'
    b'</head><body><p>A pen.</p><a href="/b">b</a></body></html>'
)


@pytest.mark.parametrize("kind", ["page", "products", "no verdict", "failed"])
def test_an_answer_loads_as_the_analysis_it_was(kind: str) -> None:
    spec = AnalysisSpec(
        validate_min_bytes=None if kind == "no verdict" else 500,
        products_max_price=Decimal(1000),
        keep_text=True,
    )
    page = response(3)
    body = PRODUCT_PAGE if kind == "products" else page.body
    analysis: PageAnalysis | None = PageAnalyzer(spec).analyze(
        page.final_url, 200, page.headers, body, None
    )
    assert analysis is not None
    assert (analysis.verdict is None) == (kind == "no verdict")
    assert analysis.products is not None
    assert bool(analysis.products.products) == (kind == "products")
    assert analysis.page.links
    if kind == "failed":
        analysis = None

    [answer] = answers_in(answer_frame(3, analysis, 0.25))

    assert read_answer(answer) == (3, analysis, 0.25)
