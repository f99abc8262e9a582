"""Errors and dead letters over the API, on a real SQLite store with rows of known kinds, and the
time series read from the stats history."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import Engine, insert, select

from apiclient import Api, running_api
from conftest import SettingsFactory
from harvestman.store.history import add_counts
from harvestman.store.schema import error_logs, urls
from harvestman.store.transaction import transaction as write_transaction
from storerows import DAY, NOW, add_crawl, add_url


@pytest.fixture
async def api(make_settings: SettingsFactory) -> AsyncIterator[Api]:
    async with running_api(make_settings()) as running:
        yield running


def log_error(
    engine: Engine, crawl_id: int, category: str, error_class: str, task: str, at: float
) -> None:
    with engine.begin() as conn:
        conn.execute(
            insert(error_logs).values(
                crawl_id=crawl_id, category=category, error_class=error_class,
                message=f"{error_class} at {task}", task=task, created_at=at,
            )
        )  # fmt: skip


def arrange(engine: Engine) -> tuple[int, int]:
    main, other = add_crawl(engine, "default"), add_crawl(engine, "other")
    log_error(engine, main, "network", "FetchTimeout", "http://a.test/1", NOW - 50)
    log_error(engine, main, "http", "HttpStatusError", "http://a.test/2", NOW - 40)
    log_error(engine, main, "http", "HttpStatusError", "https://b.test:8443/x", NOW - 30)
    log_error(engine, main, "parse", "ValueError", "http://a.test.evil/3", NOW - 20)
    log_error(engine, other, "http", "HttpStatusError", "http://a.test/9", NOW - 10)
    for n, (host, error) in enumerate(
        [("a.test", "HttpStatusError"), ("a.test", "FetchTimeout"), ("b.test", "HttpStatusError")]
    ):
        add_url(engine, main, f"http://{host}/dead{n}", "failed", 1, attempts=3, error_class=error)
    add_url(engine, main, "http://a.test/fine", "completed", 1)
    add_url(engine, other, "http://a.test/dead-elsewhere", "failed", 1, error_class="X")
    return main, other


async def errors(api: Api, **params: Any) -> dict[str, Any]:
    response = await api.get("/api/errors", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def tasks(page: dict[str, Any]) -> list[str]:
    return [item["task"] for item in page["items"]]


async def test_errors_newest_first_with_each_filter(api: Api) -> None:
    arrange(api.store.engine)
    everything = await errors(api)
    assert tasks(everything) == [
        "http://a.test/9", "http://a.test.evil/3", "https://b.test:8443/x", "http://a.test/2",
        "http://a.test/1",
    ]  # fmt: skip
    first = everything["items"][-1]
    assert {k: first[k] for k in ("crawl", "category", "type", "message", "created_at")} == {
        "crawl": "default", "category": "network", "type": "FetchTimeout",
        "message": "FetchTimeout at http://a.test/1", "created_at": NOW - 50,
    }  # fmt: skip
    assert tasks(await errors(api, crawl="default", category="http")) == [
        "https://b.test:8443/x", "http://a.test/2",
    ]  # fmt: skip
    assert tasks(await errors(api, type="HttpStatusError", crawl="other")) == ["http://a.test/9"]
    # A host is the store's host key: not a prefix of another host, with its port when it has one.
    assert tasks(await errors(api, host="A.test", crawl="default")) == [
        "http://a.test/2", "http://a.test/1",
    ]  # fmt: skip
    assert tasks(await errors(api, host="b.test:8443")) == ["https://b.test:8443/x"]
    assert tasks(await errors(api, since=NOW - 30)) == [
        "http://a.test/9", "http://a.test.evil/3", "https://b.test:8443/x",
    ]  # fmt: skip
    unknown = await api.get("/api/errors", params={"crawl": "nope"})
    assert unknown.status_code == 404
    bad = await api.get("/api/errors", params={"category": "cosmic"})
    assert bad.status_code == 422


async def test_errors_page_backwards_to_the_end(api: Api) -> None:
    arrange(api.store.engine)
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2}
    pages = 0
    while True:
        page = await errors(api, **params)
        seen += tasks(page)
        pages += 1
        if page["next_before"] is None:
            break
        params["before"] = page["next_before"]
    assert pages == 3
    assert seen == tasks(await errors(api))


async def test_the_summary_counts_by_category_and_type(api: Api) -> None:
    arrange(api.store.engine)
    response = await api.get("/api/errors/summary", params={"crawl": "default"})
    assert response.status_code == 200
    assert response.json() == {
        "total": 4,
        "by_category": {"network": 1, "http": 2, "parse": 1, "validation": 0, "storage": 0},
        "by_type": [
            {"category": "http", "type": "HttpStatusError", "count": 2},
            {"category": "network", "type": "FetchTimeout", "count": 1},
            {"category": "parse", "type": "ValueError", "count": 1},
        ],
    }
    everywhere = (await api.get("/api/errors/summary", params={"since": NOW - 15})).json()
    assert (everywhere["total"], everywhere["by_category"]["http"]) == (1, 1)


async def test_dead_letters_are_the_failed_urls_of_a_crawl(api: Api) -> None:
    arrange(api.store.engine)
    everywhere = (await api.get("/api/dead-letter")).json()  # every crawl's
    assert [(i["crawl"], i["url"]) for i in everywhere["items"]] == [
        ("default", "http://a.test/dead0"),
        ("default", "http://a.test/dead1"),
        ("default", "http://b.test/dead2"),
        ("other", "http://a.test/dead-elsewhere"),
    ]
    one = {"crawl": "default"}
    listed = (await api.get("/api/dead-letter", params=one)).json()
    assert (listed["total"], [i["url"] for i in listed["items"]]) == (
        3,
        ["http://a.test/dead0", "http://a.test/dead1", "http://b.test/dead2"],
    )
    assert listed["items"][0]["attempts"] == 3
    # When a run asks for it again on its own (its re-crawl time), unless it is re-queued.
    assert listed["items"][0]["next_crawl_at"] == NOW - DAY + 7 * DAY
    only = await api.get(
        "/api/dead-letter", params={**one, "host": "a.test", "type": "FetchTimeout"}
    )
    assert [i["url"] for i in only.json()["items"]] == ["http://a.test/dead1"]
    paged = (await api.get("/api/dead-letter", params={**one, "limit": 1, "offset": 2})).json()
    assert (paged["total"], [i["url"] for i in paged["items"]]) == (3, ["http://b.test/dead2"])


async def test_dead_letters_are_counted_by_error_class_for_a_filter(api: Api) -> None:
    arrange(api.store.engine)
    listed = (await api.get("/api/dead-letter", params={"limit": 1, "crawl": "default"})).json()
    assert (listed["crawl"], listed["by_type"]) == (
        "default",
        [{"type": "HttpStatusError", "count": 2}, {"type": "FetchTimeout", "count": 1}],
    )
    everywhere = (await api.get("/api/dead-letter", params={"limit": 1})).json()
    assert (everywhere["crawl"], everywhere["by_type"]) == (
        None,
        [
            {"type": "HttpStatusError", "count": 2},
            {"type": "FetchTimeout", "count": 1},
            {"type": "X", "count": 1},
        ],
    )
    # The counts follow the host (the class filter offers what the host holds), not the class.
    of_b = await api.get(
        "/api/dead-letter", params={"host": "b.test", "type": "FetchTimeout", "crawl": "default"}
    )
    assert (of_b.json()["total"], of_b.json()["by_type"]) == (
        0,
        [{"type": "HttpStatusError", "count": 1}],
    )


def statuses(engine: Engine) -> dict[str, tuple[str, int]]:
    with engine.connect() as conn:
        return {
            url.rsplit("/", 1)[1]: (status, attempts)
            for url, status, attempts in conn.execute(
                select(urls.c.url, urls.c.status, urls.c.attempts)
            )
        }


async def requeue(api: Api, **body: Any) -> Any:
    return await api.post("/api/admin/dead-letter/requeue", json=body)


async def test_requeue_by_ids_host_or_all_with_a_dry_run_first(api: Api) -> None:
    engine = api.store.engine
    arrange(engine)
    before = statuses(engine)
    default = {"crawl": "default"}
    ids = [i["id"] for i in (await api.get("/api/dead-letter", params=default)).json()["items"]]

    dry = await requeue(api, all=True, dry_run=True)
    assert dry.json() == {"crawl": "default", "dry_run": True, "matched": 3, "requeued": 0}
    assert statuses(engine) == before

    # Ids of rows that are not dead letters of this crawl are left alone.
    by_ids = await requeue(api, ids=[ids[0], 10**6])
    assert by_ids.json()["requeued"] == 1
    assert statuses(engine)["dead0"] == ("pending", 0)

    by_host = await requeue(api, host="b.test")
    assert by_host.json()["requeued"] == 1
    rest = await requeue(api, all=True, crawl="default")
    assert rest.json()["requeued"] == 1
    after = statuses(engine)
    assert {k: after[k] for k in ("dead0", "dead1", "dead2")} == dict.fromkeys(
        ("dead0", "dead1", "dead2"), ("pending", 0)
    )
    assert after["dead-elsewhere"] == ("failed", 0)  # the other crawl's
    assert after["fine"] == ("completed", 0)


@pytest.mark.parametrize(
    "body",
    [{}, {"all": True, "host": "a.test"}, {"ids": []}, {"ids": [0]}, {"all": False}],
    ids=["none", "two", "empty-ids", "id-0", "all-false"],
)
async def test_requeue_needs_exactly_one_selector(api: Api, body: dict[str, Any]) -> None:
    arrange(api.store.engine)
    response = await requeue(api, **body)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid"


async def test_requeue_is_for_admins_only(api: Api) -> None:
    arrange(api.store.engine)
    response = await api.client.post(
        "/api/admin/dead-letter/requeue", json={"all": True}, headers=api.user
    )
    assert response.status_code == 403
    assert statuses(api.store.engine)["dead0"] == ("failed", 3)


async def test_the_time_series_route_reads_the_history(api: Api) -> None:
    engine = api.store.engine
    crawl, _ = arrange(engine)
    minute = time.time() // 60 * 60
    with write_transaction(engine) as conn:
        add_counts(conn, crawl, "minute", {minute - 120: {"pages": 12, "status_2xx": 12}})
    response = await api.get(
        "/api/stats/timeseries",
        params={"crawl": "default", "minutes": 10, "bucket_seconds": 60},
    )
    assert response.status_code == 200
    [point] = response.json()["points"]
    assert (point["t"], point["pages"], point["pages_per_second"], point["success_rate"]) == (
        minute - 120, 12, 0.2, 1.0,
    )  # fmt: skip
