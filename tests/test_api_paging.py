"""Keyset pagination of the list endpoints: cursors, the cached totals, and the plans behind
them on SQLite and PostgreSQL (every list's filters and order are served by an index)."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, insert, select

from apiclient import Api, running_api
from conftest import POSTGRES_URL, pg_schema, require_service
from harvestman.api.paging import decode_cursor, encode_cursor
from harvestman.config import Settings
from harvestman.coord.redis import RedisCoordinator
from harvestman.resilience import BreakerRecord, BreakerState
from harvestman.store import dialect
from harvestman.store.jobs.tables import job_executions, jobs, sources
from harvestman.store.lists import DomainFilter, PageFilter, RowFilter, UrlFilter, columns
from harvestman.store.schema import crawls as crawls_table
from harvestman.store.schema import domains
from storerows import NOW, add_crawl, add_page, add_url, open_store


@pytest.fixture
async def api(make_settings: Any) -> AsyncIterator[Api]:
    async with running_api(make_settings(), count_cache_seconds=3600.0, max_offset=20) as api:
        yield api


async def _walk(api: Api, path: str, limit: int, **params: Any) -> tuple[list[Any], list[int]]:
    """Every item of a list, page by page along next_cursor; and the totals each page said."""
    items: list[Any] = []
    totals: list[int] = []
    cursor = None
    for _ in range(100):
        query = {**params, "limit": limit, **({"cursor": cursor} if cursor else {})}
        answer = await api.get(path, params=query)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        items += body["items"]
        totals.append(body["total"])
        cursor = body["next_cursor"]
        if cursor is None:
            return items, totals
    raise AssertionError("the cursor never ended")


def _crawl_rows(engine: Engine) -> int:
    crawl = add_crawl(engine, "default")
    for n in range(23):
        host = f"h{n % 3}.test"
        add_url(engine, crawl, f"http://{host}/{n}", "failed" if n % 4 == 0 else "pending", 1.0)
        add_page(engine, crawl, f"http://{host}/{n}", 1.0, status_code=404 if n % 5 == 0 else 200)
    with engine.begin() as conn:
        conn.execute(
            insert(domains),
            [{"host": f"d{n:02d}.test", "updated_at": NOW, "page_count": 0} for n in range(13)],
        )
    return crawl


async def test_the_crawl_lists_page_by_cursor_through_every_row_once(api: Api) -> None:
    _crawl_rows(api.store.engine)

    pages, totals = await _walk(api, "/api/pages", 5)
    ids = [p["id"] for p in pages]
    assert (ids, totals) == (list(range(23, 0, -1)), [23] * 5)

    not_found, _ = await _walk(api, "/api/pages", 2, status_code=404)
    assert [p["url"] for p in not_found] == [
        f"http://h{n % 3}.test/{n}" for n in (20, 15, 10, 5, 0)
    ]
    on_host, _ = await _walk(api, "/api/pages", 3, host="H1.test")
    assert [p["id"] for p in on_host] == [n + 1 for n in range(22, -1, -1) if n % 3 == 1]

    frontier, totals = await _walk(api, "/api/frontier/urls", 4, status="failed")
    assert [u["url"] for u in frontier] == [f"http://h{n % 3}.test/{n}" for n in range(0, 23, 4)]
    assert totals == [6, 6]
    every, _ = await _walk(api, "/api/frontier/urls", 7)
    assert [u["id"] for u in every] == list(range(1, 24))

    hosts, _ = await _walk(api, "/api/domains", 4)
    assert [d["host"] for d in hosts] == [f"d{n:02d}.test" for n in range(13)]
    some, _ = await _walk(api, "/api/domains", 2, host="1")
    assert [d["host"] for d in some] == ["d01.test", "d10.test", "d11.test", "d12.test"]


async def test_domains_count_their_failed_urls_in_the_crawl(api: Api) -> None:
    engine = api.store.engine
    _crawl_rows(engine)  # URLs 0, 4, 8, ... failed: two on each of h0, h1 and h2
    with engine.begin() as conn:
        conn.execute(insert(domains), [{"host": f"h{n}.test", "updated_at": NOW} for n in range(3)])
    listed, _ = await _walk(api, "/api/domains", 20, host="h")
    assert {d["host"]: d["errors"] for d in listed} == {"h0.test": 2, "h1.test": 2, "h2.test": 2}
    quiet, _ = await _walk(api, "/api/domains", 20, host="d0")
    assert {d["errors"] for d in quiet} == {0}
    add_crawl(engine, "elsewhere")
    elsewhere, _ = await _walk(api, "/api/domains", 20, host="h", crawl="elsewhere")
    assert {d["errors"] for d in elsewhere} == {0}  # another crawl failed nothing there
    unknown = await api.get("/api/domains", params={"crawl": "nowhere"})
    assert unknown.status_code == 404


async def test_domains_show_the_breaker_states_workers_publish_in_redis(
    make_settings: Any, redis_url: str
) -> None:
    prefix = f"t{uuid.uuid4().hex[:12]}"
    settings = make_settings(redis_url=redis_url, redis_prefix=prefix)
    async with running_api(settings, redis_url=redis_url, redis_prefix=prefix) as api:
        with api.store.engine.begin() as conn:
            conn.execute(
                insert(domains), [{"host": f"b{n}.test", "updated_at": NOW} for n in range(3)]
            )
        coordinator = RedisCoordinator(redis_url, api.store.hosts, prefix=prefix)
        try:
            opened = BreakerRecord(BreakerState.OPEN, failures=5, opened_at=NOW).to_dict()
            half = BreakerRecord(BreakerState.HALF_OPEN, failures=5).to_dict()
            await coordinator.put_breakers({"b0.test": opened, "b1.test": half})
            listed, _ = await _walk(api, "/api/domains", 20, host="b")
            await coordinator.redis.delete(f"{prefix}:breakers")
        finally:
            await coordinator.close()
    states = {d["host"]: d["breaker"] for d in listed}
    assert states == {"b0.test": "open", "b1.test": "half_open", "b2.test": "closed"}


async def test_without_redis_breaker_states_are_not_known(api: Api) -> None:
    with api.store.engine.begin() as conn:
        conn.execute(insert(domains), [{"host": "b0.test", "updated_at": NOW}])
    listed, _ = await _walk(api, "/api/domains", 20)
    assert [d["breaker"] for d in listed] == [None]


async def test_the_jobs_domain_lists_page_by_cursor(api: Api) -> None:
    created = []
    for n in range(7):
        body = {"name": f"s{n}", "start_urls": [f"http://127.0.0.1:9/{n}"], "enabled": False}
        created.append((await api.post("/api/v1/sources", json=body)).json()["id"])
    listed, totals = await _walk(api, "/api/v1/sources", 3)
    assert ([s["id"] for s in listed], totals) == (created, [7, 7, 7])

    for n in range(5):
        job = {"source_id": created[n % 2], "url": f"http://127.0.0.1:9/j{n}"}
        assert (await api.post("/api/v1/jobs", json=job)).status_code == 201
    every, totals = await _walk(api, "/api/v1/jobs", 2)
    assert ([j["id"] for j in every], totals) == ([1, 2, 3, 4, 5], [5, 5, 5])
    of_source, _ = await _walk(api, "/api/v1/jobs", 1, source_id=created[1])
    assert [j["url"] for j in of_source] == ["http://127.0.0.1:9/j1", "http://127.0.0.1:9/j3"]

    with api.store.engine.begin() as conn:  # seven runs of job 1, every third one failed
        conn.execute(
            insert(job_executions),
            [
                {
                    "job_id": 1,
                    "execution_number": n,
                    "status": "failed" if n % 3 == 0 else "completed",
                    "started_at": time.time() - 100 + n,
                }
                for n in range(1, 8)
            ],
        )
    runs, totals = await _walk(api, "/api/v1/jobs/1/executions", 3)
    assert ([e["execution_number"] for e in runs], totals) == ([7, 6, 5, 4, 3, 2, 1], [7, 7, 7])
    failed, _ = await _walk(api, "/api/v1/jobs/1/executions", 1, status="failed")
    assert [e["execution_number"] for e in failed] == [6, 3]


async def test_totals_are_cached_but_never_below_the_page_and_api_writes_refresh_them(
    api: Api,
) -> None:
    engine = api.store.engine
    crawl = _crawl_rows(engine)
    first = (await api.get("/api/pages", params={"limit": 5})).json()
    assert first["total"] == 23
    add_page(engine, crawl, "http://h9.test/new", 0.0)  # a crawler's write: not seen by the API
    again = (await api.get("/api/pages", params={"limit": 5})).json()
    assert (again["total"], again["total_as_of"]) == (23, first["total_as_of"])
    assert again["items"][0]["url"] == "http://h9.test/new"  # the items are live
    whole = (await api.get("/api/pages", params={"limit": 500})).json()
    assert (whole["total"], whole["next_cursor"]) == (24, None)  # the end was in view

    deleted = await api.client.delete(
        "/api/admin/pages", params={"host": "h9.test"}, headers=api.admin
    )
    assert deleted.json() == {"deleted": 1}
    assert (await api.get("/api/pages", params={"limit": 5})).json()["total"] == 23


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"cursor": "not a cursor"}, "invalid cursor"),
        ({"cursor": encode_cursor("jobs", 3)}, "invalid cursor"),  # another list's
        ({"cursor": encode_cursor("pages", "h1.test")}, "invalid cursor"),  # a host, not an id
        ({"cursor": encode_cursor("pages", 3), "offset": 1}, "either cursor or offset"),
        ({"offset": 21}, "offset above 20"),
    ],
)
async def test_bad_cursors_and_deep_offsets_are_a_422_that_says_why(
    api: Api, params: dict[str, Any], message: str
) -> None:
    _crawl_rows(api.store.engine)
    answer = await api.get("/api/pages", params=params)
    assert answer.status_code == 422
    assert message in answer.json()["error"]["message"]


def test_a_cursor_round_trips_only_for_its_own_list() -> None:
    assert decode_cursor("domains", encode_cursor("domains", "a.test"), text_key=True) == "a.test"
    assert decode_cursor("pages", encode_cursor("pages", 2**62)) == 2**62
    assert encode_cursor("pages", None) is None


# -- plans ------------------------------------------------------------------------------------


def _fill(engine: Engine, n: int = 6000) -> None:
    """Rows shaped like a crawl's (20 hosts, few 404s and soft verdicts; a crawl's rows written
    together), then statistics, so the planners choose as they would on a real store."""
    from harvestman.store.schema import crawled_pages, urls

    def common(i: int) -> dict[str, Any]:
        host = f"{chr(97 + i % 20)}.test"
        crawl = 1 if i < n // 10 else 2  # the listed crawl: older rows, beside a bigger one
        return {
            "crawl_id": crawl,
            "url_hash": f"{i:064d}",
            "url": f"http://{host}/{i}",
            "host": host,
        }

    with engine.begin() as conn:
        add = {"created_at": NOW, "seeds": "[]"}
        conn.execute(insert(crawls_table), [{"name": "default", **add}, {"name": "b", **add}])
        conn.execute(
            insert(crawled_pages),
            [
                {
                    **common(i),
                    "final_url": "x",
                    "status_code": 404 if i % 20 == 7 else 200,
                    "validation_status": "soft" if i % 33 == 5 else "ok",
                    "links_count": 0,
                    "fetched_at": NOW + i,
                }
                for i in range(n)
            ],
        )
        conn.execute(
            insert(urls),
            [
                {
                    **common(i),
                    "status": ("pending", "completed", "completed", "failed")[i % 4],
                    "next_crawl_at": NOW,
                    "discovered_at": NOW,
                    "updated_at": NOW,
                }
                for i in range(n)
            ],
        )
        conn.execute(
            insert(domains), [{"host": f"{i}.test", "updated_at": NOW} for i in range(500)]
        )
        conn.execute(
            insert(sources),
            [
                {"name": f"s{i}", "start_urls": "[]", "scope": "{}", "created_at": NOW,
                 "updated_at": NOW}
                for i in range(50)
            ],
        )  # fmt: skip
        conn.execute(
            insert(jobs),
            [
                {
                    "source_id": 1 + i % 50,
                    "url": "x",
                    "status": "paused" if i % 30 == 0 else ("scheduled", "completed")[i % 2],
                    "next_run_at": NOW + i,
                    "created_at": NOW,
                    "updated_at": NOW,
                }
                for i in range(300)
            ],
        )
        conn.execute(
            insert(job_executions),
            [
                {
                    "job_id": 1 + i % 300,
                    "execution_number": 1 + i // 300,
                    "status": ("completed", "failed")[i % 7 == 0],
                    "started_at": NOW + i,
                }
                for i in range(30_000)
            ],
        )
        if dialect.is_sqlite(engine):
            conn.exec_driver_sql("ANALYZE")
        else:  # this schema's tables only: a bare ANALYZE reads (and waits on) every schema
            conn.exec_driver_sql(
                "ANALYZE crawls, crawled_pages, urls, domains, sources, jobs, job_executions"
            )


# The plan tests share the filled stores: on one worker each store is filled once.
PLANS = pytest.mark.xdist_group("api_paging_plans")


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Engine]:
    """One filled store per database for the module: the plan tests only read it."""
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('lists') / 'store.db'}"
        else:
            require_service("PostgreSQL", "127.0.0.1", 5432)
            url = stack.enter_context(pg_schema(POSTGRES_URL))
        engine = open_store(url)
        stack.callback(engine.dispose)
        _fill(engine)
        yield engine


LISTS: list[tuple[str, RowFilter]] = [
    ("pages", PageFilter(crawl_id=1)),
    ("pages by host", PageFilter(crawl_id=1, host="a.test")),
    ("pages by status", PageFilter(crawl_id=1, status_code=404)),
    ("pages by verdict", PageFilter(crawl_id=1, validation_status="soft")),
    ("urls", UrlFilter(crawl_id=1)),
    ("urls by status", UrlFilter(crawl_id=1, status="pending")),
    ("urls by host", UrlFilter(crawl_id=1, host="a.test")),
    ("domains", DomainFilter()),
]


def _plan(engine: Engine, query: Any, params: Any = None) -> str:
    """The plan of a query (SQLAlchemy, or SQL and its driver parameters)."""
    if not isinstance(query, str):
        query = str(query.compile(engine, compile_kwargs={"literal_binds": True}))
    sql = query
    with engine.connect() as conn:
        if dialect.is_sqlite(engine):
            rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params).all()
            return "\n".join(str(row[3]) for row in rows)
        # Small tables: penalize the other paths, so a Sort or Seq Scan left in the plan
        # means no index can serve the query.
        for path in ("seqscan", "bitmapscan", "sort"):
            conn.exec_driver_sql(f"SET enable_{path} = off")
        return "\n".join(row[0] for row in conn.exec_driver_sql(f"EXPLAIN {sql}", params))


def _keyset_query(engine: Engine, where: RowFilter, after: Any = 300) -> Any:
    """The query ``SqlStore.list_rows`` runs (``after`` inside crawl 1)."""
    after = "3.test" if isinstance(where, DomainFilter) else after
    query = select(*columns(where)).where(*where.page_conditions(engine.dialect.name))
    return where.keyset.paged(query, after=after, prefix=where.index_prefix())


@PLANS
@pytest.mark.parametrize(("name", "where"), LISTS, ids=[name for name, _ in LISTS])
def test_every_list_page_is_one_index_range_without_a_sort(
    engine: Engine, name: str, where: RowFilter
) -> None:
    plan = _plan(engine, _keyset_query(engine, where))
    for sign in ("Sort", "TEMP B-TREE", "Seq Scan", f"SCAN {where.table.name}"):
        assert sign not in plan, plan
    # an index holds the equal columns, then the key: a page is one range of it (PostgreSQL
    # may still prefer the primary key when it guesses the rows match often)
    wanted = [c.name for c in (*where.index_prefix(), where.keyset.key)]
    assert (
        wanted in [[c.name for c in i.columns] for i in where.table.indexes]
        or not where.index_prefix()
    )
    if dialect.is_sqlite(engine):
        equal = [c.left.name for c in where.conditions()]  # type: ignore[attr-defined]
        assert plan.startswith(f"SEARCH {where.table.name} USING"), plan
        assert all(f"{column}=?" in plan for column in equal), plan


def test_postgresql_reads_the_newest_matches_from_their_index_not_the_primary_key(
    pg_schema_url: str,
) -> None:
    """A crawl's pending URLs are its newest rows. Held equal, ``status`` left the ORDER BY
    and the planner walked the primary key from the oldest row, filtering (~1 s at 1,000,000
    URLs); as a range of one value it keeps the status index, which starts at the matches."""
    from harvestman.store.schema import urls

    engine = open_store(pg_schema_url)
    try:
        n = 40_000
        with engine.begin() as conn:
            conn.execute(
                insert(crawls_table), [{"name": "default", "created_at": NOW, "seeds": "[]"}]
            )
            conn.execute(
                insert(urls),
                [
                    {"crawl_id": 1, "url_hash": f"{i:064d}", "url": f"http://a.test/{i}",
                     "host": "a.test", "status": "completed" if i < n // 2 else "pending",
                     "next_crawl_at": NOW, "discovered_at": NOW, "updated_at": NOW}
                    for i in range(n)
                ],
            )  # fmt: skip
            conn.exec_driver_sql("ANALYZE urls")
        where = UrlFilter(crawl_id=1, status="pending")
        for after in (None, n // 4, 3 * n // 4):  # the first page, a cursor before, in them
            query = str(
                _keyset_query(engine, where, after).compile(
                    engine, compile_kwargs={"literal_binds": True}
                )
            )
            with engine.connect() as conn:
                plan = "\n".join(row[0] for row in conn.exec_driver_sql(f"EXPLAIN {query}"))
            assert "using ix_urls_status on urls" in plan, plan
    finally:
        engine.dispose()


JOB_LISTS: list[tuple[str, str, dict[str, Any]]] = [
    ("jobs", "jobs", {}),
    ("jobs by status", "jobs", {"status": "paused"}),
    ("jobs by source", "jobs", {"source_id": 3}),
    ("sources", "sources", {}),
    ("executions", "executions", {"job_id": 7}),
    ("executions by status", "executions", {"job_id": 7, "status": "failed"}),
]


@PLANS
@pytest.mark.parametrize(
    ("name", "repository", "filters"), JOB_LISTS, ids=[name for name, _, _ in JOB_LISTS]
)
async def test_the_jobs_domain_lists_are_one_index_range_too(
    engine: Engine, name: str, repository: str, filters: dict[str, Any]
) -> None:
    from sqlalchemy import event

    from harvestman.store.jobs.db import JobStore

    statements: list[tuple[str, Any]] = []

    def capture(*args: Any) -> None:
        statements.append((args[2], args[3]))

    async with JobStore(engine) as store:
        event.listen(engine, "before_cursor_execute", capture)
        try:
            if repository == "executions":
                rest = {k: v for k, v in filters.items() if k != "job_id"}
                await store.executions.list(filters["job_id"], after=90, **rest)
            else:
                await getattr(store, repository).list(after=10, **filters)
        finally:
            event.remove(engine, "before_cursor_execute", capture)
    sql, params = next(s for s in statements if "ORDER BY" in s[0])
    plan = _plan(engine, sql, params)
    for sign in ("Sort", "TEMP B-TREE", "Seq Scan", f"SCAN {repository}"):
        assert sign not in plan, plan


def test_settings_reach_the_api_through_the_usual_chain(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from harvestman.api.settings import ApiSettings
    from harvestman.config import load_settings

    config = tmp_path / "h.toml"
    config.write_text('[api]\nrate_user = 7\nmax_offset = 100\nallow_networks = ["10.0.0.0/8"]\n')
    monkeypatch.setenv("HARVESTMAN_CONFIG", str(config))
    monkeypatch.setenv("HARVESTMAN_API_MAX_OFFSET", "50")
    monkeypatch.setenv("HARVESTMAN_API_JWT_SECRET", "s" * 40)
    api = ApiSettings.from_settings(load_settings(api_count_cache_seconds=0.5), dev=True)
    assert (api.rate_user, api.max_offset, api.count_cache_seconds) == (7, 50, 0.5)
    assert (api.allow_networks, api.jwt_secret, api.dev) == (["10.0.0.0/8"], "s" * 40, True)
    monkeypatch.setenv("HARVESTMAN_API_ALLOW_NETWORKS", "127.0.0.0/8, a.test")
    assert Settings().api_allow_networks == ["127.0.0.0/8", "a.test"]
    assert "s" * 40 not in repr(api) + repr(Settings())
