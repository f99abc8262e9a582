"""Site parsers and main text in the crawl: records, success rates, failures, exports, stats."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from conftest import SettingsFactory
from couriersite import ARTICLES, HEADLINE, Courier, rows, running_courier
from harvestman.config import Settings
from harvestman.display import render_report
from harvestman.export import export_pages
from harvestman.store import SqlStore
from harvestman.store.lifecycle.replay import replay
from siteparsers import write_distribution
from support.crawling import crawl
from test_crawler_yield import run_cli

DAY = 86400.0
COURIER = "siteparsers:LocalCourierParser"


@pytest.fixture
async def courier() -> AsyncIterator[Courier]:
    async for site in running_courier():
        yield site


def courier_settings(make_settings: SettingsFactory, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "crawl_max_depth": 1,
        "crawl_visited_ttl": 0,  # every crawl fetches every page again
        "discovery_sitemaps": False,
        "parsers": [COURIER],
    }
    return make_settings(**{**values, **overrides})


def stats_of(settings: Settings) -> list[dict[str, Any]]:
    store = SqlStore(settings.database_url)
    try:
        [crawl_id] = store.crawl_ids().values()
        return store.parser_stats(crawl_id, with_days=True)
    finally:
        store.engine.dispose()


async def test_records_are_stored_with_the_parser_name_and_version_and_rewritten_on_change(
    courier: Courier, make_settings: SettingsFactory
) -> None:
    settings = courier_settings(make_settings)
    await crawl(settings, [courier.root])

    stored = rows(
        settings,
        "SELECT page_url, parser, parser_version, record_key, kind, data FROM parsed_records"
        " ORDER BY page_url",
    )
    assert [row[:5] for row in stored] == [
        (courier.url(path), "courier-article", "1.2.0", "#0", "article")
        for path in sorted(ARTICLES)
    ]
    assert json.loads(stored[0][5]) == {
        "author": "Hannah Okafor",
        "first": "The Thames Barrier is expected to close around 40 times this winter, more than"
        " in any season since it opened in 1982, the Environment Agency has said.",
        "headline": HEADLINE,
        "paragraphs": 7,
        "title": f"{HEADLINE} | The Riverside Courier",
    }
    [(first_seen, last_seen, updated)] = rows(
        settings,
        "SELECT first_seen_at, last_seen_at, updated_at FROM parsed_records"
        f" WHERE page_url = '{courier.url(ARTICLES[0])}'",
    )
    assert first_seen == last_seen == updated

    await crawl(settings, [courier.root])  # unchanged: seen again, not rewritten
    [(first_again, seen_again, updated_again)] = rows(
        settings,
        "SELECT first_seen_at, last_seen_at, updated_at FROM parsed_records"
        f" WHERE page_url = '{courier.url(ARTICLES[0])}'",
    )
    assert (first_again, updated_again) == (first_seen, updated)
    assert seen_again > last_seen

    courier.headline = "Thames Barrier closures: the agency's winter forecast"
    await crawl(settings, [courier.root])
    changed = rows(settings, "SELECT updated_at, data FROM parsed_records")
    assert len(changed) == 2
    assert all(moved > updated for moved, _ in changed)
    assert {json.loads(data)["headline"] for _, data in changed} == {courier.headline}


async def test_a_parser_installed_as_an_entry_point_runs_in_the_crawl(
    courier: Courier,
    make_settings: SettingsFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    write_distribution(
        plugins,
        "courier_extras",
        "[harvestman.parsers]\nbylines = courier_bylines:BylineParser\n",
        {
            "courier_bylines": """\
            import re
            from harvestman.extract.plugins import Record

            class BylineParser:
                name = "courier-bylines"
                version = "2024.11"
                hosts = ["127.0.0.1"]

                def parse(self, page_html, url, page):
                    found = re.findall(r'rel="author" href="([^"]+)">([^<]+)<', page_html)
                    return [Record("byline", {"name": name}, key=href) for href, name in found]
            """
        },
    )
    monkeypatch.syspath_prepend(str(plugins))
    settings = courier_settings(make_settings, parsers=[])

    crawler = (await crawl(settings, [courier.root])).crawler

    assert [parser.name for parser in crawler.parsers.parsers] == ["courier-bylines"]  # type: ignore[union-attr]
    assert rows(
        settings,
        "SELECT page_url, parser, parser_version, record_key, kind, data FROM parsed_records"
        " WHERE page_url LIKE '%/2024/%' ORDER BY page_url",
    ) == [
        (courier.url(path), "courier-bylines", "2024.11", "/profile/hannah-okafor", "byline",
         '{"name":"Hannah Okafor"}')
        for path in sorted(ARTICLES)
    ]  # fmt: skip
    # The front page has no byline: handled, nothing found (it counts against the rate).
    [line] = stats_of(settings)
    assert (line["parser"], line["attempts"], line["successes"], line["empty"]) == (
        "courier-bylines", 3, 2, 1,
    )  # fmt: skip


async def test_a_changed_layout_shows_as_a_drop_in_the_success_rate(
    courier: Courier, make_settings: SettingsFactory
) -> None:
    settings = courier_settings(make_settings)
    await crawl(settings, [courier.root])
    courier.layout = "story-2025"  # the site's redesign: the parser finds no story any more
    await crawl(settings, [courier.root], clock=lambda: time.time() + DAY)

    [line] = stats_of(settings)
    assert (line["host"], line["parser"], line["version"]) == (
        f"127.0.0.1:{courier.port}", "courier-article", "1.2.0",
    )  # fmt: skip
    assert [
        (d["attempts"], d["successes"], d["empty"], d["success_rate"]) for d in line["days"]
    ] == [
        (2, 2, 0, 1.0),
        (2, 0, 2, 0.0),
    ]
    assert line["days"][1]["day"] - line["days"][0]["day"] == DAY
    assert (line["success_rate"], line["last_day_rate"], line["earlier_rate"], line["drop"]) == (
        0.5, 0.0, 1.0, 1.0,
    )  # fmt: skip
    # What was found before the redesign is kept.
    assert rows(settings, "SELECT count(*) FROM parsed_records") == [(2,)]

    store = SqlStore(settings.database_url)
    [crawl_id] = store.crawl_ids().values()
    report = store.report(crawl_id)
    store.engine.dispose()
    console = Console(width=120, record=True)
    console.print(render_report(report))
    shown = console.export_text()
    assert (
        f"│ 127.0.0.1:{courier.port} │ courier-article │ 1.2.0   │     4 │  2 │     2 │      0 │"
        "  50% │     0% ↓ │   100% │"
    ) in shown.splitlines()
    assert "records stored by site parsers: 2" in shown


async def test_a_raising_parser_is_recorded_and_the_crawl_goes_on(
    courier: Courier, make_settings: SettingsFactory
) -> None:
    settings = courier_settings(
        make_settings, parsers=["siteparsers:LocalRaisingParser", COURIER, "nowhere:Parser"]
    )

    crawler = (await crawl(settings, [courier.root])).crawler

    assert rows(settings, "SELECT status, count(*) FROM urls GROUP BY status") == [("completed", 3)]
    failures = rows(
        settings,
        "SELECT category, error_class, message, task, stack_trace FROM error_logs ORDER BY task",
    )
    assert [row[:4] for row in failures] == [
        ("parse", "ParserFailed", "local-raising 0.1: KeyError: 'missing'", url)
        for url in sorted([courier.root, *(courier.url(path) for path in ARTICLES)])
    ]
    assert all('{"a": 1}["missing"]' in row[4] for row in failures)
    # The other parser still ran on every page.
    assert rows(settings, "SELECT count(*) FROM parsed_records") == [(2,)]
    lines = {line["parser"]: line for line in stats_of(settings)}
    assert (lines["local-raising"]["attempts"], lines["local-raising"]["errors"]) == (3, 3)
    assert (lines["courier-article"]["attempts"], lines["courier-article"]["successes"]) == (2, 2)
    # The plugin that could not be imported was skipped, and said why.
    assert crawler.stats["parsers/load_failed"] == 1
    assert crawler.parsers is not None
    assert [(f.source, f.reason) for f in crawler.parsers.failures] == [
        ("setting nowhere:Parser", "ModuleNotFoundError: No module named 'nowhere'")
    ]


async def test_main_text_is_stored_only_when_opted_in(
    courier: Courier, make_settings: SettingsFactory, tmp_path: Path
) -> None:
    plain = courier_settings(make_settings, parsers=[])
    await crawl(plain, [courier.root])
    assert rows(plain, "SELECT count(*), count(main_text) FROM crawled_pages") == [(3, 0)]

    opted = courier_settings(
        make_settings, parsers=[], extract_main_text=True,
        database_url=f"sqlite:///{tmp_path / 'opted.db'}",
    )  # fmt: skip
    await crawl(opted, [courier.root])
    texts = dict(rows(opted, "SELECT url, main_text FROM crawled_pages"))
    article = texts[courier.url(ARTICLES[0])]
    assert article.startswith("The Thames Barrier is expected to close around 40 times")
    assert article.endswith("which the agency sends by text message and telephone.")
    assert "Subscribe" not in article
    assert "Rail strike called off" not in article  # the ticker
    assert texts[courier.root].startswith("Today's news from the river towns")


async def test_records_export_as_jsonl_csv_and_elasticsearch_bulk(
    courier: Courier, make_settings: SettingsFactory
) -> None:
    settings = courier_settings(make_settings)
    await crawl(settings, [courier.root])
    store = SqlStore(settings.database_url)
    [crawl_id] = store.crawl_ids().values()

    out = io.BytesIO()
    assert export_pages(store, crawl_id, "csv", out, what="records") == 2
    table = list(csv.DictReader(io.StringIO(out.getvalue().decode())))
    assert [(r["parser"], r["parser_version"], r["kind"]) for r in table] == [
        ("courier-article", "1.2.0", "article")
    ] * 2
    assert json.loads(table[0]["data"])["author"] == "Hannah Okafor"

    out = io.BytesIO()
    assert export_pages(store, crawl_id, "es", out, what="records") == 2
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    store.engine.dispose()
    assert lines[0]["index"]["_index"] == "harvestman-records"
    assert lines[0]["index"]["_id"].endswith("-courier-article-#0")
    assert lines[1]["data"]["headline"] == HEADLINE  # the record's data as an object

    code, output = await run_cli(
        "export", "--what", "records", env={"HARVESTMAN_DATABASE_URL": settings.database_url},
        out=True,
    )  # fmt: skip
    assert code == 0
    exported = [json.loads(line) for line in output.splitlines()]
    assert sorted(r["page_url"] for r in exported) == sorted(courier.url(p) for p in ARTICLES)
    assert {(r["parser"], r["parser_version"], r["record_key"]) for r in exported} == {
        ("courier-article", "1.2.0", "#0")
    }


async def test_records_and_stats_on_postgres(
    courier: Courier, make_settings: SettingsFactory, pg_schema_url: str
) -> None:
    settings = courier_settings(make_settings, database_url=pg_schema_url)
    await crawl(settings, [courier.root])
    updated = rows(settings, "SELECT id, updated_at FROM parsed_records ORDER BY id")
    await crawl(settings, [courier.root])
    courier.layout = "story-2025"
    await crawl(settings, [courier.root], clock=lambda: time.time() + DAY)

    assert rows(settings, "SELECT id, updated_at FROM parsed_records ORDER BY id") == updated
    [line] = stats_of(settings)
    assert [(d["attempts"], d["successes"]) for d in line["days"]] == [(4, 4), (2, 0)]
    assert line["drop"] == 1.0


async def test_replay_after_a_parser_change_parses_the_stored_pages_again(
    courier: Courier, make_settings: SettingsFactory
) -> None:
    settings = courier_settings(make_settings, crawl_visited_ttl=7 * DAY)
    await crawl(settings, [courier.root])
    store = SqlStore(settings.database_url)
    [crawl_id] = store.crawl_ids().values()
    plan = replay(
        store.engine, crawl_id, f"127.0.0.1:{courier.port}", 0.0, dry_run=False, now=time.time()
    )
    store.engine.dispose()
    assert plan.requeue == 3

    upgraded = courier_settings(
        make_settings, crawl_visited_ttl=7 * DAY, parsers=["siteparsers:LocalCourierParserV2"]
    )
    await crawl(upgraded, [courier.root])

    assert rows(settings, "SELECT DISTINCT parser, parser_version FROM parsed_records") == [
        ("courier-article", "1.3.0")
    ]
    assert {(line["version"], line["attempts"]) for line in stats_of(settings)} == {
        ("1.2.0", 2), ("1.3.0", 2),
    }  # fmt: skip
