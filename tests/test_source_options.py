"""Per-source crawl options over the API, and what they change in the source's crawl; parser
success rates over the API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

import pytest

from apiclient import Api, running_api
from conftest import SettingsFactory
from couriersite import Courier, rows, running_courier
from harvestman.api.schemas import SourceOptionsIn
from harvestman.config import SOURCE_OPTIONS, Settings
from harvestman.errors import ConfigError
from harvestman.jobs.errors import InvalidSpec
from harvestman.jobs.records import ScopeRules, Source, SourceOptions
from harvestman.jobs.runner import source_settings
from harvestman.jobs.scheduler import Scheduler

COURIER = "siteparsers:LocalCourierParser"
NO_OPTIONS = dict.fromkeys(
    (
        "main_text", "feeds", "pagination", "archives", "near_duplicates", "store_text", "images",
        "ingest_rate", "trailing_slash",
    )
)  # fmt: skip


@pytest.fixture
async def courier() -> AsyncIterator[Courier]:
    async for site in running_courier():
        yield site


@pytest.fixture
async def api(make_settings: SettingsFactory) -> AsyncIterator[Api]:
    settings = make_settings(discovery_sitemaps=False, crawl_max_depth=1, parsers=[COURIER])
    async with running_api(settings, scheduler=True) as running:
        yield running


def source_body(name: str, url: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "start_urls": [url], **extra}


async def test_options_round_trip_and_unknown_ones_are_refused(api: Api) -> None:
    sent = {"main_text": True, "feeds": False}
    created = await api.post(
        "/api/v1/sources", json=source_body("news", "http://a.test/", options=sent)
    )
    assert created.status_code == 201, created.text
    source_id = created.json()["id"]
    assert created.json()["options"] == {**NO_OPTIONS, **sent}
    assert (await api.get(f"/api/v1/sources/{source_id}")).json()["options"] == {
        **NO_OPTIONS, **sent,
    }  # fmt: skip

    changed = await api.client.put(
        f"/api/v1/sources/{source_id}", headers=api.admin, json={"options": {"store_text": True}}
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["options"] == {**NO_OPTIONS, "store_text": True}  # replaced whole
    renamed = await api.client.put(
        f"/api/v1/sources/{source_id}", headers=api.admin, json={"name": "news-2"}
    )
    assert renamed.json()["options"] == {**NO_OPTIONS, "store_text": True}  # left alone
    stored = await api.jobs.sources.get(source_id)
    assert stored.options == SourceOptions(store_text=True)

    for options in ({"javascript": True}, {"main_text": "maybe"}):
        refused = await api.post(
            "/api/v1/sources", json=source_body("other", "http://a.test/", options=options)
        )
        assert refused.status_code == 422, refused.text
        refused = await api.client.put(
            f"/api/v1/sources/{source_id}", headers=api.admin, json={"options": options}
        )
        assert refused.status_code == 422, refused.text
    assert (await api.jobs.sources.get(source_id)).options == SourceOptions(store_text=True)


def test_options_map_onto_the_crawl_settings(make_settings: SettingsFactory) -> None:
    base = make_settings(discovery_feeds=True, store_text=True)
    source = Source(
        id=3, name="s", start_urls=["http://a.test/"], created_at=0.0, updated_at=0.0,
        options=SourceOptions(main_text=True, feeds=False, pagination=True, archives=True,
                              near_duplicates=True, images=True),
    )  # fmt: skip

    settings = source_settings(base, source)

    assert (
        settings.extract_main_text, settings.discovery_feeds, settings.discovery_pagination,
        settings.discovery_archives, settings.near_duplicates, settings.store_text,
        settings.crawl_images,
    ) == (True, False, True, True, True, True, True)  # fmt: skip
    plain = source_settings(base, Source(id=4, name="p", start_urls=["http://a.test/"],
                                         created_at=0.0, updated_at=0.0))  # fmt: skip
    assert (plain.extract_main_text, plain.discovery_feeds, plain.store_text) == (False, True, True)
    assert plain.crawl_images is False


async def run_source(api: Api, site: Courier, name: str, options: dict[str, bool]) -> int:
    """Create an (enabled) source over the API and run the job the service gives it; the
    source's id."""
    created = await api.post("/api/v1/sources", json=source_body(name, site.root, options=options))
    source_id = int(created.json()["id"])
    scheduler: Scheduler = api.app.state.ctx.scheduler
    assert [claim.job.source_id for claim in await scheduler.poll()] == [source_id]
    await scheduler.wait_idle()
    return source_id


async def test_a_sources_options_change_its_crawl_and_parser_stats_are_served(
    api: Api,
    courier: Courier,
) -> None:
    with_text = await run_source(api, courier, "with-text", {"main_text": True})
    without = await run_source(api, courier, "without", {})

    settings = api.app.state.ctx.crawler_settings
    counts = dict(
        rows(
            settings,
            "SELECT c.name, count(p.main_text) FROM crawled_pages p"
            " JOIN crawls c ON c.id = p.crawl_id GROUP BY c.name",
        )
    )
    assert counts == {f"with-text-{with_text}": 3, f"without-{without}": 0}

    answer = await api.get("/api/parsers/stats", params={"source_id": with_text, "days": True})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["crawl"] == f"with-text-{with_text}"
    [line] = body["items"]
    assert (line["host"], line["parser"], line["version"]) == (
        f"127.0.0.1:{courier.port}", "courier-article", "1.2.0",
    )  # fmt: skip
    assert (line["attempts"], line["successes"], line["success_rate"], line["drop"]) == (
        2, 2, 1.0, None,
    )  # fmt: skip
    assert [day["attempts"] for day in line["days"]] == [2]
    filtered = await api.get(
        "/api/parsers/stats", params={"source_id": with_text, "parser": "other"}
    )
    assert filtered.json()["items"] == []

    assert (await api.get("/api/parsers/stats", params={"crawl": "nope"})).status_code == 404
    both = await api.get("/api/parsers/stats", params={"crawl": "x", "source_id": 1})
    assert both.status_code == 422


def test_each_source_option_is_a_setting_with_its_type_and_bounds() -> None:
    # Declared once (config.SOURCE_OPTIONS); the API's body, the record and the runner follow.
    assert set(SOURCE_OPTIONS) == set(NO_OPTIONS) == set(SourceOptionsIn.model_fields)
    for option, setting in SOURCE_OPTIONS.items():
        declared, taken = Settings.model_fields[setting], SourceOptionsIn.model_fields[option]
        kind = Annotated[(declared.annotation, *declared.metadata)] if declared.metadata else (
            declared.annotation
        )  # fmt: skip
        assert taken.annotation == kind | None, option
        assert (taken.default, taken.description) == (None, declared.description)
    assert SourceOptions.of(NO_OPTIONS) == SourceOptions()


@pytest.mark.parametrize(
    ("option", "value"),
    [("main_text", True), ("feeds", True), ("pagination", True), ("archives", True),
     ("near_duplicates", True), ("store_text", True), ("images", True), ("ingest_rate", 7),
     ("trailing_slash", "strip")],
)  # fmt: skip
def test_each_source_option_sets_its_setting(
    make_settings: SettingsFactory, option: str, value: object
) -> None:
    source = Source(id=3, name="s", start_urls=["http://a.test/"], created_at=0.0,
                    updated_at=0.0, options=SourceOptions.of({option: value}))  # fmt: skip

    settings = source_settings(make_settings(), source)

    assert getattr(settings, SOURCE_OPTIONS[option]) == value
    assert getattr(make_settings(), SOURCE_OPTIONS[option]) != value


def test_an_option_value_its_setting_refuses_is_refused_with_a_clear_error() -> None:
    with pytest.raises(InvalidSpec) as caught:
        SourceOptions(ingest_rate=2_000_000)
    assert (caught.value.field, caught.value.message) == (
        "options.ingest_rate", "Input should be less than or equal to 1000000"
    )  # fmt: skip
    with pytest.raises(InvalidSpec) as unknown:
        SourceOptions.of({"speed": True})
    assert (unknown.value.field, unknown.value.message) == (
        "options.speed",
        "is not an option (archives, feeds, images, ingest_rate, main_text, near_duplicates,"
        " pagination, store_text, trailing_slash)",
    )


def test_source_settings_refuse_what_the_settings_refuse(make_settings: SettingsFactory) -> None:
    # The scope is checked when applied too: a pattern longer than the service allows.
    source = Source(id=3, name="s", start_urls=["http://a.test/"], created_at=0.0,
                    updated_at=0.0, scope=ScopeRules(include=["a" * 50]))  # fmt: skip

    with pytest.raises(ConfigError, match="pattern of 50 characters is longer than"):
        source_settings(make_settings(pattern_max_length=20), source)
    assert source_settings(make_settings(), source).crawl_include == ["a" * 50]
