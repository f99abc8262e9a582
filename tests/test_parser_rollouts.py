"""Parser rollouts: a new version of a site parser on a share of a domain's pages (a hash of
the URL decides), its success rate beside the stable version's, promotion and rollback over
the API; the parser health gauges after real crawls."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError

from apiclient import Api, running_api
from conftest import SettingsFactory, serve
from harvestman.config import Settings
from harvestman.errors import ConfigError
from harvestman.extract.plugins import ParserRegistry
from harvestman.extract.rollouts import in_share, parse_rollout
from harvestman.parse import parse_html
from harvestman.records import ParserRollout
from harvestman.store import SqlStore
from harvestman.store.parsed import DAY, day_of
from siteparsers import ShelfParser, ShelfParserV2
from support.crawling import crawl

BOTH = ["siteparsers:ShelfParser", "siteparsers:ShelfParserV2"]
ITEMS = 40
TEXT = "<p>Words enough to make this a real page that a validator keeps as content.</p>"


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'crawl.db'}"
    return str(request.getfixturevalue("pg_schema_url"))


class Shop:
    """A home page linking ``ITEMS`` item pages, each with its name in an <h1>."""

    def __init__(self) -> None:
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    @property
    def items(self) -> list[str]:
        return [self.url(f"/item/{n}") for n in range(ITEMS)]

    async def handle(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/":
            body = "".join(f'<a href="/item/{n}">{n}</a> ' for n in range(ITEMS))
        elif request.path.startswith("/item/"):
            body = f'<h1 class="name">Item {request.path[6:]}</h1>'
        else:
            raise web.HTTPNotFound()
        html = f"<html><head><title>Shop</title></head><body>{TEXT}{body}</body></html>"
        return web.Response(text=html, content_type="text/html")


@pytest.fixture
async def shop() -> AsyncIterator[Shop]:
    site = Shop()
    async with serve(site.handle) as port:
        site.port = port
        yield site


def _version_for(registry: ParserRegistry, url: str) -> str:
    html = '<html><body><h1 class="name">x</h1></body></html>'
    [run] = registry.parse(html, url, parse_html(html, url)).runs
    return run.version


def test_a_rollout_picks_one_version_per_page_by_its_share() -> None:
    registry = ParserRegistry([ShelfParser(), ShelfParserV2()])
    assert [p.version for p in registry.parsers] == ["1", "2"]
    assert registry.versioned == {"shelf"}
    urls = [f"http://127.0.0.1:8/item/{n}" for n in range(1000)]
    assert {_version_for(registry, url) for url in urls} == {"1"}  # no rollout: the first

    def candidates(share: float, domain: str = "127.0.0.1") -> set[str]:
        registry.set_rollouts([ParserRollout("shelf", "2", share, domain)])
        return {url for url in urls if _version_for(registry, url) == "2"}

    third = candidates(0.3)
    assert third == {url for url in urls if in_share("shelf", url, 0.3)}
    assert 250 <= len(third) <= 350
    assert candidates(0.3) == third  # the same pages every time
    assert candidates(0.6) > third  # a larger share only adds pages
    assert candidates(1.0) == set(urls)
    assert candidates(0.0) == set()
    assert candidates(1.0, "*") == set(urls)
    assert candidates(1.0, "elsewhere.test") == set()
    # A host's own rollout wins over the one for every domain.
    registry.set_rollouts(
        [ParserRollout("shelf", "2", 1.0, "*"), ParserRollout("shelf", "2", 0.0, "127.0.0.1")]
    )
    assert {_version_for(registry, url) for url in urls} == {"1"}
    # A rollout naming a version that is not loaded leaves the stable one.
    registry.set_rollouts([ParserRollout("shelf", "3", 1.0)])
    assert {_version_for(registry, url) for url in urls} == {"1"}


@pytest.mark.parametrize(
    ("text", "rollout"),
    [
        ("shelf@2=0.25", ParserRollout("shelf", "2", 0.25, "*")),
        ("shelf@2@Shop.Test=1", ParserRollout("shelf", "2", 1.0, "shop.test")),
    ],
)
def test_a_rollout_setting(text: str, rollout: ParserRollout) -> None:
    assert parse_rollout(text) == rollout


@pytest.mark.parametrize("text", ["shelf=0.5", "shelf@2", "shelf@2=2", "shelf@2=x", "@2=0.1"])
def test_a_bad_rollout_setting_is_refused(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_rollout(text)
    with pytest.raises(ValidationError, match="parser rollout"):
        Settings(parser_rollouts=[text])


def _counts(settings: Settings, crawl_name: str | None = None) -> dict[str, tuple[int, int]]:
    import sqlalchemy as sa

    url = settings.database_url
    if url.startswith("postgresql://"):
        url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT parser_version, sum(attempts), sum(successes) FROM parser_stats"
                    " GROUP BY parser_version"
                )
            ).all()
    finally:
        engine.dispose()
    return {version: (int(attempts), int(successes)) for version, attempts, successes in rows}


async def test_a_rollout_splits_a_crawl_and_an_admin_promotes_or_rolls_it_back(
    shop: Shop, make_settings: SettingsFactory, database_url: str
) -> None:
    settings = make_settings(
        database_url=database_url, parsers=BOTH, discovery_sitemaps=False, crawl_visited_ttl=0
    )
    candidate = sum(in_share("shelf", url, 0.5) for url in shop.items)
    async with running_api(settings) as api:
        set_ = await api.client.put(
            "/api/admin/parsers/shelf/rollout",
            headers=api.admin,
            json={"version": "2", "share": 0.5, "domain": "127.0.0.1"},
        )
        assert set_.status_code == 200, set_.text
        assert (set_.json()["share"], set_.json()["origin"]) == (0.5, "store")

        await crawl(settings, shop.url("/"))
        assert _counts(settings) == {
            "1": (ITEMS - candidate, ITEMS - candidate),
            "2": (candidate, 0),
        }
        stats = await _stats(api, settings)
        [rollout] = stats["rollouts"]
        assert (rollout["parser"], rollout["version"], rollout["domain"]) == (
            "shelf",
            "2",
            "127.0.0.1",
        )
        assert rollout["versions"] == [
            {"version": "2", "candidate": True, "attempts": candidate, "successes": 0,
             "success_rate": 0.0},
            {"version": "1", "candidate": False, "attempts": ITEMS - candidate,
             "successes": ITEMS - candidate, "success_rate": 1.0},
        ]  # fmt: skip

        back = await api.post("/api/admin/parsers/shelf/rollback", json={"domain": "127.0.0.1"})
        assert (back.json()["version"], back.json()["share"]) == ("2", 0.0)
        await crawl(settings, shop.url("/"))
        assert _counts(settings) == {
            "1": (2 * ITEMS - candidate, 2 * ITEMS - candidate), "2": (candidate, 0),
        }  # fmt: skip

        up = await api.post("/api/admin/parsers/shelf/promote", json={"domain": "127.0.0.1"})
        assert (up.json()["version"], up.json()["share"]) == ("2", 1.0)
        await crawl(settings, shop.url("/"))
        assert _counts(settings) == {
            "1": (2 * ITEMS - candidate, 2 * ITEMS - candidate), "2": (ITEMS + candidate, 0),
        }  # fmt: skip
        listed = (await api.get("/api/parsers/rollouts")).json()["items"]
        assert [(r["parser"], r["version"], r["share"], r["domain"]) for r in listed] == [
            ("shelf", "2", 1.0, "127.0.0.1")
        ]


async def _stats(api: Api, settings: Settings) -> dict:
    answer = await api.get("/api/parsers/stats", params={"crawl": settings.crawl_name})
    assert answer.status_code == 200, answer.text
    return answer.json()


async def test_a_rollout_from_the_settings_and_the_admin_routes_refusals(
    shop: Shop, make_settings: SettingsFactory
) -> None:
    settings = make_settings(
        parsers=BOTH, discovery_sitemaps=False, parser_rollouts=["shelf@2=1.0"]
    )
    await crawl(settings, shop.url("/"))
    assert _counts(settings) == {"2": (ITEMS, 0)}
    async with running_api(settings) as api:
        [rollout] = (await api.get("/api/parsers/rollouts")).json()["items"]
        assert (rollout["domain"], rollout["share"], rollout["origin"]) == ("*", 1.0, "settings")
        # Rolling the setting's rollout back stores one that replaces it.
        back = await api.post("/api/admin/parsers/shelf/rollback", json={})
        assert (back.status_code, back.json()["share"], back.json()["domain"]) == (200, 0.0, "*")
        [stored] = (await api.get("/api/parsers/rollouts")).json()["items"]
        assert (stored["share"], stored["origin"]) == (0.0, "store")

        none = await api.post("/api/admin/parsers/other/promote", json={})
        assert (none.status_code, none.json()["error"]["details"]) == (
            404, {"parser": "other", "domain": "*"},
        )  # fmt: skip
        named = await api.post("/api/admin/parsers/other/promote", json={"version": "7"})
        assert (named.status_code, named.json()["share"]) == (200, 1.0)
        assert (await api.post("/api/admin/parsers/nope/rollback", json={})).status_code == 404
        for body in ({"version": "2", "share": 1.5}, {"version": "", "share": 0.5}, {"share": 0.5}):
            refused = await api.client.put(
                "/api/admin/parsers/shelf/rollout", headers=api.admin, json=body
            )
            assert refused.status_code == 422, body
        as_user = await api.client.put(
            "/api/admin/parsers/shelf/rollout", headers=api.user, json={"version": "2", "share": 1}
        )
        assert as_user.status_code == 403


def _gauges(text: str) -> dict[tuple[str, ...], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("harvestman_parser_"):
            for sample in family.samples:
                labels = sample.labels
                key = (sample.name, labels["parser"], labels["version"], labels["domain"],
                       labels.get("baseline", ""))  # fmt: skip
                found[key] = sample.value
    return found


async def test_the_parser_health_gauges_after_two_days_of_crawls(
    shop: Shop, make_settings: SettingsFactory, database_url: str
) -> None:
    today = day_of(time.time())
    started = time.monotonic()

    def noon_of(day: float) -> Callable[[], float]:
        return lambda: day + DAY / 2 + (time.monotonic() - started)

    base = {"database_url": database_url, "discovery_sitemaps": False, "crawl_visited_ttl": 0}
    # Yesterday only version 1 ran; today version 2 runs on half the pages.
    await crawl(make_settings(**base, parsers=BOTH[:1]), shop.url("/"), clock=noon_of(today - DAY))
    settings = make_settings(**base, parsers=BOTH, parser_rollouts=["shelf@2=0.5"])
    await crawl(settings, shop.url("/"), clock=noon_of(today))
    candidate = sum(in_share("shelf", url, 0.5) for url in shop.items)

    async with running_api(settings) as api:
        metrics = await api.get("/metrics")
    assert metrics.status_code == 200
    host = f"127.0.0.1:{shop.port}"  # the host key, as the stats keep it
    assert _gauges(metrics.text) == {
        ("harvestman_parser_success_ratio", "shelf", "1", host, ""): 1.0,
        ("harvestman_parser_attempts", "shelf", "1", host, ""): ITEMS - candidate,
        ("harvestman_parser_baseline_ratio", "shelf", "1", host, "previous_day"): 1.0,
        ("harvestman_parser_success_ratio", "shelf", "2", host, ""): 0.0,
        ("harvestman_parser_attempts", "shelf", "2", host, ""): candidate,
        ("harvestman_parser_baseline_ratio", "shelf", "2", host, "previous_version"): 1.0,
    }
    # What the alert holds: version 2 is under half its previous version's rate.
    async with SqlStore(database_url) as store:
        health = {line["version"]: line for line in store.parser_health(time.time())}
    assert health["2"]["success_ratio"] < 0.5 * health["2"]["previous_version"]


async def test_a_crawl_reads_the_stored_rollouts_at_most_every_refresh(
    make_settings: SettingsFactory,
) -> None:
    from harvestman.crawl.gates import Gate
    from harvestman.crawl.run import CrawlRun
    from harvestman.crawl.steps import ParsersStep
    from harvestman.records import CrawlRequest
    from harvestman.stats import Stats

    now = [100.0]
    settings = make_settings(parsers=BOTH, parser_rollout_refresh=60.0)
    url = "http://127.0.0.1:8/item/1"
    request = CrawlRequest(1, url, "h", "127.0.0.1:8", 1, 2)
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        step = ParsersStep.from_settings(
            settings, Stats(), CrawlRun(store, Stats(), lambda: now[0])
        )
        assert step is not None
        assert isinstance(step, Gate)
        await store.set_parser_rollout(ParserRollout("shelf", "2", 1.0, "127.0.0.1"))
        await step.check(request)  # the first check reads them
        assert _version_for(step.registry, url) == "2"

        await store.set_parser_rollout(ParserRollout("shelf", "2", 0.0, "127.0.0.1"))
        now[0] = 159.0
        await step.check(request)
        assert _version_for(step.registry, url) == "2"  # not read again yet
        now[0] = 160.0
        await step.check(request)
        assert _version_for(step.registry, url) == "1"

    one = ParsersStep.from_settings(
        make_settings(parsers=BOTH[:1]), Stats(), CrawlRun(store, Stats(), lambda: now[0])
    )
    assert one is not None
    assert not isinstance(one, Gate)  # one version per parser: nothing to read, no gate
