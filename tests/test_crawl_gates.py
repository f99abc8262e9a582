"""Each request gate alone: a real robots.txt from the test site, breakers on a hand clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvestman.crawl.fetch import Fetcher
from harvestman.crawl.fetching import RedirectCheck
from harvestman.crawl.gates import BreakerGate, Final, Requeue, RobotsGate
from harvestman.crawl.robots_cache import RobotsCache
from harvestman.errors import RedirectRefused
from harvestman.records import UrlStatus
from harvestman.resilience import CircuitBreakers
from support.parts import Parts, crawl_parts, request_for
from testsite import TestSite

AGENT = "harvestman-test"


def robots_for(parts: Parts, fetcher: Fetcher) -> RobotsCache:
    return RobotsCache(parts.store.hosts, fetcher, user_agent=AGENT, clock=parts.run.clock)


async def test_robots_allows_denies_and_queues_the_sitemaps_it_declares(
    site: TestSite, tmp_path: Path
) -> None:
    declared: list[tuple[str, list[str]]] = []
    async with crawl_parts(tmp_path, [site.url("/")]) as parts, Fetcher(user_agent=AGENT) as f:
        parts.run.robots = robots_for(parts, f)
        gate = RobotsGate(parts.run, parts.outcomes, AGENT,
                          on_read=lambda url, maps: declared.append((url, list(maps))))  # fmt: skip

        first = await gate.check(request_for(site.url("/")))
        denied = await gate.check(request_for(site.url("/private/secret.html")))
        allowed = await gate.check(request_for(site.url("/private/open.html")))

    assert first is None
    assert allowed is None
    assert isinstance(denied, Final)
    assert (denied.outcome.status, denied.outcome.error_class) == (
        UrlStatus.BLOCKED,
        "RobotsDenied",
    )
    assert denied.outcome.next_crawl_at == 2000.0  # again after the visited TTL
    assert declared == [(site.url("/"), [site.url("/sitemap.xml")])]
    assert site.hits["/robots.txt"] == 1
    assert parts.run.stats["robots/denied"] == 1


async def test_a_crawl_delay_read_now_sends_the_page_to_the_hosts_next_turn(
    tmp_path: Path,
) -> None:
    async with (
        TestSite(crawl_delay=2.0) as site,
        crawl_parts(tmp_path, [site.url("/")]) as parts,
        Fetcher(user_agent=AGENT) as fetcher,
    ):
        parts.run.robots = robots_for(parts, fetcher)
        gate = RobotsGate(parts.run, parts.outcomes, AGENT)

        first = await gate.check(request_for(site.url("/")))
        second = await gate.check(request_for(site.url("/")))

        assert parts.run.frontier.delay_of(site.host) == 2.0

    assert first == Requeue(fetched=True)
    assert second is None


async def test_an_open_breaker_requeues_until_its_probe_may_go(tmp_path: Path) -> None:
    async with crawl_parts(tmp_path, ["http://127.0.0.1:9/"]) as parts:
        breakers = CircuitBreakers(2, 30.0, 1, clock=parts.run.clock)
        gate = BreakerGate(breakers, parts.run, 30.0)
        request = request_for("http://127.0.0.1:9/")

        gate.observe(request, 503, None)
        still_closed = await gate.check(request)
        gate.observe(request, None, "FetchTimeout")
        opened = await gate.check(request)
        parts.now[0] += 30.0
        probe = await gate.check(request)

    assert still_closed is None
    assert opened == Requeue(1030.0)
    assert probe is None
    assert gate.changes == {"127.0.0.1:9": breakers.state("127.0.0.1:9")}
    assert parts.run.stats["breaker/deferred"] == 1


async def test_a_host_down_past_the_give_up_time_fails_its_pending_urls_in_one_call(
    tmp_path: Path,
) -> None:
    dead, alive = "http://127.0.0.1:9", "http://127.0.0.1:10"
    urls = [f"{dead}/{n}" for n in range(5)]
    async with crawl_parts(tmp_path, [f"{dead}/"]) as parts:
        store, crawl_id = parts.store, parts.run.crawl_id
        rows = [parts.discovery.seed_row(url) for url in [*urls, f"{alive}/"]]
        await store.add_urls(crawl_id, rows, parts.now[0])
        breakers = CircuitBreakers(1, 60.0, 1, clock=parts.run.clock)
        gate = BreakerGate(breakers, parts.run, 60.0, give_up_seconds=600.0, visited_ttl=1000.0)
        leased = request_for(urls[0])

        gate.observe(leased, None, "NetworkError")  # opens at 1000
        for _ in range(9):  # every probe, once a minute, fails: still down since 1000
            parts.now[0] += 60.0
            assert await gate.check(leased) is None
            gate.observe(leased, None, "NetworkError")
        before = await gate.check(leased)
        parts.now[0] = 1600.0
        given_up = await gate.check(leased)
        again = await gate.check(request_for(urls[1]))
        states = {row["url"]: row for row in store.iter_urls(crawl_id)}
        errors = store.error_rows(crawl_id=crawl_id)

    assert before == Requeue(1600.0)
    assert isinstance(given_up, Final)
    assert isinstance(again, Final)
    assert (given_up.outcome.status, given_up.outcome.error_class) == (
        UrlStatus.FAILED, "HostUnavailable",
    )  # fmt: skip
    assert given_up.outcome.next_crawl_at == 2600.0
    assert given_up.outcome.error == "127.0.0.1:9 unavailable: failing for 600 s, given up"
    assert {url: (row["status"], row["error_class"]) for url, row in states.items()} == {
        **{url: ("failed", "HostUnavailable") for url in urls},
        f"{alive}/": ("pending", None),
    }
    assert {(row["category"], row["error_class"], row["task"]) for row in errors} == {
        ("network", "HostUnavailable", url) for url in urls
    }
    assert gate.given_up == {"127.0.0.1:9"}
    assert parts.run.stats["breaker/given_up_hosts"] == 1
    assert parts.run.stats["breaker/given_up_urls"] == 5 + 2  # the batch, then one at a time


async def test_a_breaker_that_closes_starts_its_down_time_over(tmp_path: Path) -> None:
    async with crawl_parts(tmp_path, ["http://127.0.0.1:9/"]) as parts:
        breakers = CircuitBreakers(1, 60.0, 1, clock=parts.run.clock)
        gate = BreakerGate(breakers, parts.run, 60.0, give_up_seconds=600.0, visited_ttl=1000.0)
        request = request_for("http://127.0.0.1:9/")

        gate.observe(request, 503, None)
        parts.now[0] += 500.0
        assert await gate.check(request) is None  # the probe
        gate.observe(request, 200, None)  # closes
        gate.observe(request, 503, None)  # opens again at 1500
        parts.now[0] += 500.0
        verdict = await gate.check(request)

    assert breakers.down_for("127.0.0.1:9") == 500.0
    assert verdict is None  # a probe: down for 500 s since it last opened, not given up
    assert gate.given_up == set()


@pytest.mark.parametrize(
    ("path", "reason"),
    [("/private/secret.html", "robots"), ("/private/open.html", None)],
)
async def test_a_redirect_hop_must_be_allowed_by_robots(
    site: TestSite, tmp_path: Path, path: str, reason: str | None
) -> None:
    async with crawl_parts(tmp_path, [site.url("/")]) as parts, Fetcher(user_agent=AGENT) as f:
        check = RedirectCheck(lambda: parts.discovery.scope, robots_for(parts, f), AGENT)
        if reason is None:
            await check(site.url(path))
            return
        with pytest.raises(RedirectRefused) as refused:
            await check(site.url(path))
    assert refused.value.reason == reason


async def test_a_redirect_hop_out_of_scope_is_refused_before_any_robots_txt(
    site: TestSite, tmp_path: Path
) -> None:
    async with crawl_parts(tmp_path, [site.url("/")]) as parts, Fetcher(user_agent=AGENT) as f:
        check = RedirectCheck(lambda: parts.discovery.scope, robots_for(parts, f), AGENT)
        with pytest.raises(RedirectRefused) as refused:
            await check(site.offsite_base + "/")
    assert refused.value.reason == "out_of_scope"
    assert site.hits["/robots.txt"] == 0
