"""A big seeds file: streamed into the frontier a chunk at a time, every good URL once, bad lines
reported, the seed hosts in the crawl's scope, a resume adding nothing twice."""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import pytest
from aiohttp import web

from conftest import SettingsFactory, serve
from harvestman.crawl.seeding import SeedLoader, seed_lines
from harvestman.errors import ConfigError
from harvestman.records import NewUrl
from harvestman.store import SqlStore
from harvestman.urls import Scope, host_key, url_hash
from support.cli import invoke_cli
from test_cli import FAST, run_cli
from test_store_frontier_expiry import finish_all
from testsite import TestSite

BAD = [
    "ftp://127.0.0.1/not-http",
    "http://",
    "http://127.0.0.1:99999/bad-port",
    "http://127.0.0.1/" + "x" * 3000,
]


class RecordingStore:
    """A real store, recording what each bulk add was handed and how far the lines were read."""

    def __init__(self, store: SqlStore, pulled: list[int]) -> None:
        self.store = store
        self.pulled = pulled
        self.chunks: list[tuple[int, int]] = []  # (rows handed, lines read by then)
        self.records: list[list[str]] = []

    @property
    def crawls(self) -> RecordingStore:  # the two doors seeding goes through
        return self

    @property
    def frontier(self) -> RecordingStore:
        return self

    async def ensure_crawl(self, name: str, seeds: Sequence[str] = ()) -> int:
        self.records.append(list(seeds))
        return await self.store.ensure_crawl(name, seeds)

    async def add_seeds(self, crawl_id: int, rows: Sequence[NewUrl], now: float) -> None:
        self.chunks.append((len(rows), self.pulled[0]))
        await self.store.add_seeds(crawl_id, rows, now)


def counted(lines: Iterator[str], pulled: list[int]) -> Iterator[str]:
    for line in lines:
        pulled[0] += 1
        yield line


async def test_the_reader_is_lazy_and_the_store_gets_bounded_chunks(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings = make_settings(seeds_chunk_size=100, crawl_seeds_kept=5)
    path = tmp_path / "seeds.txt"
    urls = [f"http://127.0.0.{1 + i % 3}:8000/p/{i}" for i in range(1050)]
    path.write_text("# a comment\n\n" + "\n".join(urls) + "\n")
    pulled = [0]
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        recording = RecordingStore(store, pulled)
        loader = SeedLoader(settings, recording)
        report = await loader.load(counted(seed_lines(path), pulled), time.time())
        crawl_id = await store.ensure_crawl(settings.crawl_name)
        assert (await store.counts(crawl_id)).by_status == {"pending": 1050}
        record = await store.crawl_seeds(crawl_id)
    assert report.added == 1050
    assert report.rejected == 0
    assert report.origins == 3
    # Eleven chunks of at most 100 rows; when a chunk reached the store, at most the next
    # chunk had been read (one is normalized while the other is written), never the file.
    assert [rows for rows, _ in recording.chunks] == [100] * 10 + [50]
    for index, (_, read) in enumerate(recording.chunks):
        assert read <= (index + 2) * 100
    # The record: the first 5 seeds (3 of them the first of their origin), then nothing.
    assert record == urls[:5]
    assert recording.records == [urls[:5]]


async def test_origins_past_the_limit_are_queued_but_not_in_scope(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings = make_settings(crawl_seeds_kept=0, crawl_seed_origins_max=2)
    seeds = [f"http://h{i % 3}.test/p/{i}" for i in range(9)]
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        report = await SeedLoader(settings, store).load(seeds, time.time())
        crawl_id = await store.ensure_crawl(settings.crawl_name)
        assert (await store.counts(crawl_id)).by_status == {"pending": 9}
        record = await store.crawl_seeds(crawl_id)
    assert record == seeds[:2]  # one seed of each origin that joined the scope
    assert report.origins == 2
    assert report.out_of_scope == 3


def test_an_unreadable_seeds_file_is_a_config_error_at_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read seeds file"):
        seed_lines(tmp_path / "missing.txt")


async def _not_found(request: web.Request) -> web.Response:
    return web.Response(status=404, text="no", content_type="text/html")


def _seed_rows(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT url, status FROM urls WHERE discovered_via = 'seed'").fetchall()


async def test_a_50000_url_seeds_file_crawls_and_resumes_without_duplicates(
    site: TestSite, tmp_path: Path
) -> None:
    async with serve(_not_found) as other_port:
        other = f"http://127.0.0.1:{other_port}"
        good = [site.url(f"/seeded/{i}") for i in range(25_000)]
        good += [f"{other}/seeded/{i}" for i in range(25_000)]
        lines = [*good[:100], *BAD[:2], *good[100:], *BAD[2:], *good[:10]]  # 10 repeated
        path = tmp_path / "seeds.txt"
        path.write_text("# fifty thousand seeds\n" + "\n".join(lines) + "\n")
        db = tmp_path / "h.db"
        command = ("crawl", "--seeds-file", str(path), "--db", str(db), "--max-depth", "0")
        code, _, err = await run_cli(*command, "--max-pages", "20", *FAST)
        assert code == 0, err

        rows = _seed_rows(db)
        assert len(rows) == 50_000
        assert {url for url, _ in rows} == set(good)
        assert sum(status != "pending" for _, status in rows) == 20, Counter(s for _, s in rows)
        for bad in BAD:
            assert f"skipped seed {bad[:40]}" in err.replace("'", "").replace("\n", "")
        with sqlite3.connect(db) as conn:
            record = json.loads(conn.execute("SELECT seeds FROM crawls").fetchone()[0])
        # The first 1000 seeds (the first host's), then the second host's first seed.
        assert record == [*good[:1000], good[25_000]]
        scope = Scope(record)
        assert scope.check(site.url("/never/seeded")) is None
        assert scope.check(f"{other}/never/seeded") is None
        assert scope.check("http://127.0.0.2:1/") == "out_of_scope"

        # The same command again resumes: nothing is added twice, fetched rows stay fetched.
        code, _, err = await run_cli(*command, "--max-pages", "40", *FAST)
        assert code == 0, err
        again = _seed_rows(db)
        assert len(again) == 50_000
        assert {url for url, _ in again} == set(good)
        assert sum(status != "pending" for _, status in again) == 40, Counter(s for _, s in again)
        with sqlite3.connect(db) as conn:
            assert json.loads(conn.execute("SELECT seeds FROM crawls").fetchone()[0]) == record


async def test_seed_command_streams_a_file_into_a_crawl(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    code, _, err = await invoke_cli("db", "upgrade", "--db", str(db))
    assert code == 0, err
    good = [f"http://127.0.0.1:{8000 + i % 4}/s/{i}" for i in range(3000)]
    path = tmp_path / "seeds.txt"
    path.write_text("\n".join([*good, "mailto:someone@example.com"]) + "\n")
    code, _, err = await run_cli(
        "seed", "--seeds-file", str(path), "--db", str(db), "--priority", "low"
    )
    assert code == 0, err
    assert "seeded 3000 URLs" in err
    assert "mailto:someone@example.com" in err
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT url, priority FROM urls").fetchall()
        record = json.loads(conn.execute("SELECT seeds FROM crawls").fetchone()[0])
    assert sorted(rows) == sorted((url, 1) for url in good)
    assert record == good[:1000]


@pytest.fixture(params=["sqlite", "postgresql"])
async def any_store(
    request: pytest.FixtureRequest, make_settings: SettingsFactory
) -> AsyncIterator[SqlStore]:
    if request.param == "sqlite":
        url = make_settings().database_url
    else:
        url = str(request.getfixturevalue("pg_schema_url"))
    async with SqlStore(url) as opened:
        await opened.upgrade()
        yield opened


async def test_add_seeds_keeps_add_urls_rules_on_both_stores(any_store: SqlStore) -> None:
    store = any_store
    crawl_id = await store.ensure_crawl("c")
    urls = ["http://a.test/", "http://a.test/due", "http://b.test/later"]
    rows = [NewUrl(url, url_hash(url), host_key(url), 0, 3) for url in urls]
    for row in rows:
        row.via = "seed"
    await store.add_seeds(crawl_id, rows, 100.0)
    assert (await store.counts(crawl_id)).by_status == {"pending": 3}
    again = {urls[0]: 1e12, urls[1]: 150.0, urls[2]: 1e12}
    await finish_all(store, crawl_id, 100.0, again, {})
    # The same seeds again: nothing added twice; only the completed row now due is pending.
    await store.add_seeds(crawl_id, [*rows, *rows[:1]], 200.0)
    counts = await store.counts(crawl_id)
    assert counts.by_status == {"completed": 2, "pending": 1}
    leased, _ = await store.lease(crawl_id, {"a.test": 10, "b.test": 10}, 200.0, 260.0, "w")
    assert [(r.url, r.priority, r.depth) for r in leased] == [(urls[1], 3, 0)]


async def test_a_crawl_loading_its_file_in_chunks_ends_when_every_seed_is_fetched(
    site: TestSite, tmp_path: Path
) -> None:
    # Chunks of 10: the crawl starts on the first and the rest load while it runs.
    good = [site.url(f"/seeded/{i}") for i in range(45)]
    path = tmp_path / "seeds.txt"
    path.write_text("\n".join(["not a url", *good]) + "\n")
    db = tmp_path / "h.db"
    code, _, err = await run_cli(
        "crawl", "--seeds-file", str(path), "--db", str(db), "--max-depth", "0", *FAST,
        env={"HARVESTMAN_SEEDS_CHUNK_SIZE": "10", "HARVESTMAN_FRONTIER_REFRESH_INTERVAL": "0.2"},
    )  # fmt: skip
    assert code == 0, err
    rows = _seed_rows(db)
    assert sorted(url for url, _ in rows) == sorted(good)
    assert Counter(status for _, status in rows)["pending"] == 0
    assert "skipped seed 'not a url'" in err
