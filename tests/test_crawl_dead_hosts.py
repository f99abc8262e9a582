"""A crawl of a host nobody answers for: its breaker opens, and past the give-up time every URL
of the host is failed with HostUnavailable, so the crawl ends; the dead letters show them."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

from typer.testing import CliRunner

from conftest import SettingsFactory
from harvestman.cli.app import app
from harvestman.config import Settings
from harvestman.crawl.crawler import Crawler
from harvestman.records import DomainRecord
from harvestman.stats import Stats
from harvestman.store import SqlStore
from harvestman.urls import host_key

PATHS = [f"/p/{n}" for n in range(6)]


class JumpingClock:
    """Real time, moved ``jump`` seconds on once ``stats`` count an opened breaker (the
    frontier still sleeps for real, so the breaker's own open period is kept short)."""

    def __init__(self, jump: float) -> None:
        self.jump = jump
        self.stats: Stats | None = None

    def __call__(self) -> float:
        opened = self.stats is not None and self.stats["breaker/open"] > 0
        return time.time() + (self.jump if opened else 0.0)


def closed_port() -> int:
    """A port on 127.0.0.1 that was just free: connections to it are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def crawl_dead_host(settings: Settings, base: str, clock: JumpingClock) -> Crawler:
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        # robots.txt was read while the host lived (the cache in the store is fresh): only
        # the pages fail now, as when a host dies in the middle of a crawl.
        robots = "User-agent: *\nAllow: /\n"
        await store.save_robots(DomainRecord(host_key(base), robots, 200, clock()), clock())
        crawler = Crawler(settings, store, [base + path for path in PATHS], clock=clock)
        clock.stats = crawler.stats
        async with asyncio.timeout(60):  # a hang fails the test instead of stalling it
            await crawler.run()
        return crawler


def test_a_dead_host_gives_up_its_urls_and_the_crawl_ends(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    settings = make_settings(
        breaker_failure_threshold=2,
        breaker_open_seconds=0.05,
        fetch_max_retries=20,  # no URL runs out of retries on its own first
        discovery_sitemaps=False,
    )
    assert settings.breaker_give_up_seconds == 600.0  # the default

    crawler = asyncio.run(crawl_dead_host(settings, base, JumpingClock(601.0)))

    async def rows() -> dict[str, tuple[str, str | None]]:
        async with SqlStore(settings.database_url) as store:
            return {
                row["url"]: (row["status"], row["error_class"])
                for row in store.iter_urls(crawler.crawl_id)
            }

    assert asyncio.run(rows()) == {base + path: ("failed", "HostUnavailable") for path in PATHS}
    assert crawler.stats["breaker/given_up_hosts"] == 1
    assert crawler.stats["breaker/given_up_urls"] == len(PATHS)

    result = CliRunner().invoke(
        app, ["dead-letter", "list", "--database-url", settings.database_url]
    )
    assert result.exit_code == 0, result.output
    listed = [line.split("\t")[:2] for line in result.stdout.splitlines()]
    assert sorted(listed) == [[base + path, "HostUnavailable"] for path in PATHS]
    assert f"{len(PATHS)} of {len(PATHS)} failed URLs shown" in result.stderr
