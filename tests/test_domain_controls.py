"""Per-domain control: a paused host's URLs stay pending while others crawl, unpausing crawls
them, a running crawl takes a delay change within the settings' TTL, and the settings are
edited over the API (admin only), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from aiohttp import web

from apiclient import Api, running_api
from conftest import SettingsFactory, serve
from harvestman.crawl.crawler import Crawler
from harvestman.crawl.frontier import Frontier
from harvestman.records import DomainControl, DomainRecord, NewUrl
from harvestman.store import SqlStore
from harvestman.urls import url_hash
from storerows import store_url
from support.crawling import crawl

PARAGRAPH = (
    "<p>Every item in this shop is made by hand in a small workshop by the river, tested for a"
    " week before it is sold, and sent out in plain recycled paper with a note from its maker.</p>"
)
NOW = 1_700_000_000.0
CHAIN = 12  # pages of a chain site: /0 -> /1 -> ... -> /11


def chain_handler(
    seen: list[tuple[float, str]],
    on_request: Callable[[int], None] | None = None,
    held: asyncio.Event | None = None,
) -> Callable[[web.Request], object]:
    """The chain; with ``held``, a request after the fourth is answered once it is set."""

    async def handle(request: web.Request) -> web.Response:
        seen.append((time.time(), request.path))
        if on_request is not None:
            on_request(len(seen))
        if held is not None and len(seen) > 4:
            await held.wait()
        if request.path == "/robots.txt":
            raise web.HTTPNotFound()
        step = int(request.path.strip("/") or 0)
        link = f'<a href="/{step + 1}">next</a>' if step + 1 < CHAIN else ""
        html = f"<html><head><title>{step}</title></head><body>{PARAGRAPH}{link}</body></html>"
        return web.Response(text=html, content_type="text/html")

    return handle


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_url(request, tmp_path)


async def put_control(database_url: str, control: DomainControl) -> None:
    async with SqlStore(database_url) as store:
        await store.upgrade()
        await store.in_thread(store.put_domain_control, control, time.time())


def statuses(rows: list[dict[str, object]], root: str) -> dict[str, object]:
    return {
        str(r["url"]).removeprefix(root): r["status"]
        for r in rows
        if str(r["url"]).startswith(root)
    }


async def test_a_paused_domain_stays_pending_while_another_crawls_and_unpausing_crawls_it(
    database_url: str, make_settings: SettingsFactory
) -> None:
    seen_a: list[tuple[float, str]] = []
    seen_b: list[tuple[float, str]] = []
    async with serve(chain_handler(seen_a)) as port_a, serve(chain_handler(seen_b)) as port_b:
        root_a, root_b = f"http://127.0.0.1:{port_a}", f"http://127.0.0.1:{port_b}"
        settings = make_settings(
            database_url=database_url, discovery_sitemaps=False, crawl_max_depth=2
        )
        await put_control(database_url, DomainControl(f"127.0.0.1:{port_a}", paused=True))

        first = await crawl(settings, [f"{root_a}/", f"{root_b}/"])
        assert seen_a == []  # not even its robots.txt
        assert statuses(first.rows, root_a) == {"/": "pending"}
        assert statuses(first.rows, root_b) == {
            "/": "completed",
            "/1": "completed",
            "/2": "completed",
        }

        await put_control(database_url, DomainControl(f"127.0.0.1:{port_a}", paused=False))
        second = await crawl(settings, [f"{root_a}/", f"{root_b}/"])
        assert statuses(second.rows, root_a) == {
            "/": "completed", "/1": "completed", "/2": "completed",
        }  # fmt: skip
        assert [path for _, path in seen_a] == ["/robots.txt", "/", "/1", "/2"]


async def test_a_running_crawl_takes_a_new_delay_within_the_settings_ttl(
    database_url: str, make_settings: SettingsFactory
) -> None:
    delay = 0.3
    seen: list[tuple[float, str]] = []
    changed = asyncio.Event()

    taken = asyncio.Event()  # the chain waits for the change: it cannot end before it

    def on_request(count: int) -> None:
        if count == 4:  # robots.txt and three pages went at the crawl's own pace (no delay)
            changed.set()

    async with serve(chain_handler(seen, on_request, taken)) as port:
        host = f"127.0.0.1:{port}"
        settings = make_settings(
            database_url=database_url,
            discovery_sitemaps=False,
            crawl_max_depth=CHAIN,
            domain_settings_ttl=0.1,
        )
        async with SqlStore(database_url) as store:
            await store.upgrade()
            crawler = Crawler(settings, store, [f"http://{host}/"])
            running = asyncio.create_task(crawler.run())
            await asyncio.wait_for(changed.wait(), 30)
            await store.in_thread(
                store.put_domain_control, DomainControl(host, crawl_delay=delay), time.time()
            )
            # Poll (no sleep on a guess) until the crawl's frontier holds the new delay.
            async with asyncio.timeout(30):
                # The frontier offers no event for a setting taken: poll it.
                while crawler.wiring.run.frontier.delay_of(host) != delay:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            applied_at = time.time()
            taken.set()
            await asyncio.wait_for(running, 60)

    later = [at for at, _ in seen if at > applied_at]
    assert len(later) >= 3, seen  # the chain outlasts the change: the check is not empty
    gaps = [b - a for a, b in itertools.pairwise(later)]
    assert min(gaps) >= delay - 0.002, gaps
    assert sorted(path for _, path in seen if path != "/robots.txt") == sorted(
        ["/"] + [f"/{n}" for n in range(1, CHAIN)]
    )


@pytest.fixture
async def api(make_settings: SettingsFactory) -> AsyncIterator[Api]:
    async with running_api(make_settings()) as running:
        yield running


async def test_domain_settings_over_the_api_are_admin_only_checked_and_stored(api: Api) -> None:
    path = "/api/domains/Shop.Example:8080/settings"
    default = await api.client.get(path, headers=api.admin)
    assert default.json() == {
        "host": "shop.example:8080", "paused": False, "crawl_delay": None, "concurrency": None,
        "recrawl_interval": None, "priority": 0,
    }  # fmt: skip
    body = {"paused": True, "crawl_delay": 2.5, "concurrency": 2, "recrawl_interval": 3600,
            "priority": 5}  # fmt: skip
    assert (await api.client.put(path, json=body, headers=api.user)).status_code == 403
    assert (await api.client.get(path, headers=api.user)).status_code == 403
    assert (await api.client.put(path, json=body)).status_code == 401
    stored = await api.client.put(path, json=body, headers=api.admin)
    assert stored.status_code == 200, stored.text
    assert stored.json() == {"host": "shop.example:8080", **body}
    assert await api.store.domain_controls() == {
        "shop.example:8080": DomainControl(
            "shop.example:8080", paused=True, crawl_delay=2.5, concurrency=2,
            recrawl_interval=3600.0, priority=5,
        )
    }  # fmt: skip
    for bad in ({"crawl_delay": -1}, {"concurrency": 0}, {"priority": 1000}, {"surprise": 1}):
        refused = await api.client.put(path, json=bad, headers=api.admin)
        assert refused.status_code == 422, bad
    for host in ("a@b", "a%00b", "a b", "x" * 301):
        refused = await api.client.put(f"/api/domains/{host}/settings", json={}, headers=api.admin)
        assert refused.status_code == 422, host
    ipv6 = await api.client.put("/api/domains/[::1]:8080/settings", json={}, headers=api.admin)
    assert ipv6.json()["host"] == "[::1]:8080"
    await api.store.save_robots(DomainRecord("shop.example:8080"), time.time())
    await api.store.save_robots(DomainRecord("other.example"), time.time())
    listed = (await api.get("/api/domains")).json()["items"]
    assert {d["host"]: d["paused"] for d in listed} == {
        "shop.example:8080": True, "other.example": False,
    }  # fmt: skip
    cleared = await api.client.put(path, json={}, headers=api.admin)
    assert cleared.json() == default.json()


async def frontier_over(database_url: str, store: SqlStore, hosts: list[str]) -> Frontier:
    await store.upgrade()
    crawl_id = await store.ensure_crawl("controls")
    rows = [
        NewUrl(f"http://{host}/{n}", url_hash(f"http://{host}/{n}"), host, 1, 2)
        for host in hosts
        for n in range(3)
    ]
    await store.add_urls(crawl_id, rows, NOW)
    return Frontier(store.frontier, crawl_id, "w1", delay=0.0, clock=lambda: NOW)


async def test_priority_orders_ready_hosts_and_concurrency_lets_more_requests_out(
    database_url: str,
) -> None:
    async with SqlStore(database_url) as store:
        frontier = await frontier_over(database_url, store, ["a.example", "b.example"])
        frontier.apply_controls(
            {
                "b.example": DomainControl("b.example", priority=5),
                "a.example": DomainControl("a.example", concurrency=3),
            }
        )
        await frontier.start()
        try:
            handed = [await asyncio.wait_for(frontier.next(), 30) for _ in range(4)]
        finally:
            await frontier.close()
    # b first (priority), then a three times at once (concurrency 3; b's one slot is taken).
    assert [r.host if r else None for r in handed] == [
        "b.example", "a.example", "a.example", "a.example",
    ]  # fmt: skip


async def test_a_recrawl_interval_sets_when_a_hosts_pages_are_due_again(
    database_url: str, make_settings: SettingsFactory
) -> None:
    seen: list[tuple[float, str]] = []
    async with serve(chain_handler(seen)) as port:
        host = f"127.0.0.1:{port}"
        await put_control(database_url, DomainControl(host, recrawl_interval=600.0))
        settings = make_settings(
            database_url=database_url, discovery_sitemaps=False, crawl_max_depth=1
        )
        crawled = await crawl(settings, f"http://{host}/", clock=lambda: NOW)
    assert {r["url"]: r["next_crawl_at"] for r in crawled.rows} == {
        f"http://{host}/": NOW + 600.0,
        f"http://{host}/1": NOW + 600.0,
    }


async def test_a_host_paused_midway_keeps_its_leases_and_unpausing_hands_them_out(
    database_url: str,
) -> None:
    async with SqlStore(database_url) as store:
        frontier = await frontier_over(database_url, store, ["a.example"])
        await frontier.start()
        try:
            first = await asyncio.wait_for(frontier.next(), 30)
            assert first is not None
            frontier.release(first)
            frontier.settle()
            frontier.apply_controls({"a.example": DomainControl("a.example", paused=True)})
            # Nothing but a paused host's work: the crawl may end, its rows for another run.
            assert frontier.is_finished()
            assert await asyncio.wait_for(frontier.next(), 30) is None
            frontier.apply_controls({})
            assert not frontier.is_finished()
            second = await asyncio.wait_for(frontier.next(), 30)
        finally:
            await frontier.close()
    assert second is not None
    assert second.url != first.url
    assert {first.url, second.url} <= {f"http://a.example/{n}" for n in range(3)}
