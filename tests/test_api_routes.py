"""The API's resources over a real SQLite store: sources, jobs and their state machine,
executions, frontier, pages, the error shape and URL safety."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import update

from apiclient import Api, running_api
from conftest import SettingsFactory
from harvestman.jobs.adaptive import AdaptiveState
from harvestman.jobs.states import JobStatus
from harvestman.parse import parse_html
from harvestman.store.jobs.tables import jobs as jobs_table
from harvestman.urls import UrlNormalizer, url_hash


@pytest.fixture
async def api(make_settings: SettingsFactory) -> AsyncIterator[Api]:
    async with running_api(make_settings()) as running:
        yield running


async def _source(api: Api, name: str = "news", **extra: object) -> dict[str, object]:
    body = {"name": name, "start_urls": ["http://127.0.0.1:9/"], **extra}
    response = await api.post("/api/v1/sources", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def _job(api: Api, source_id: object, **extra: object) -> dict[str, object]:
    body = {"source_id": source_id, "url": "http://127.0.0.1:9/", **extra}
    response = await api.post("/api/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def _set_status(api: Api, job_id: int, status: JobStatus) -> None:
    with api.jobs.begin() as conn:
        conn.execute(
            update(jobs_table).where(jobs_table.c.id == job_id).values(status=status.value)
        )


async def test_a_source_answers_with_its_jobs(make_settings: SettingsFactory) -> None:
    """Creating an enabled source makes its job: the answer says which, as lists do."""
    async with running_api(make_settings(), scheduler=True) as api:
        created = await _source(api)
        [made] = created["jobs"]
        job = (await api.get(f"/api/v1/jobs/{made['id']}")).json()
        assert (job["source_id"], made["status"]) == (created["id"], job["status"])
        second = await _job(api, created["id"])
        listed = (await api.get("/api/v1/sources")).json()["items"]
        assert [j["id"] for j in listed[0]["jobs"]] == [made["id"], second["id"]]
        off = await _source(api, "off", enabled=False)
        assert off["jobs"] == []


async def test_source_crud(api: Api) -> None:
    created = await _source(api, max_depth=2, scope={"allow_domains": ["127.0.0.1"]})
    assert created["start_urls"] == ["http://127.0.0.1:9/"]
    assert created["scope"] == {"allow_domains": ["127.0.0.1"], "include": [], "exclude": []}
    sid = created["id"]

    listed = (await api.get("/api/v1/sources", params={"name": "ew"})).json()
    assert (listed["total"], [s["id"] for s in listed["items"]]) == (1, [sid])

    updated = await api.client.put(
        f"/api/v1/sources/{sid}", json={"enabled": False, "max_pages": 10}, headers=api.admin
    )
    assert updated.status_code == 200
    assert (updated.json()["enabled"], updated.json()["max_pages"], updated.json()["name"]) == (
        False,
        10,
        "news",
    )
    duplicate = await api.post(
        "/api/v1/sources", json={"name": "news", "start_urls": ["http://127.0.0.1:9/x"]}
    )
    assert (duplicate.status_code, duplicate.json()["error"]["code"]) == (409, "name_taken")

    deleted = await api.client.delete(f"/api/v1/sources/{sid}", headers=api.admin)
    assert deleted.status_code == 204
    missing = await api.get(f"/api/v1/sources/{sid}")
    assert missing.status_code == 404
    assert missing.json() == {
        "error": {
            "status": 404,
            "code": "not_found",
            "message": f"no source with id {sid}",
            "details": {"kind": "source", "id": sid},
        }
    }


async def test_a_job_for_an_unknown_source_is_a_422(api: Api) -> None:
    response = await api.post("/api/v1/jobs", json={"source_id": 999, "url": "http://127.0.0.1/"})
    assert response.status_code == 422
    assert response.json()["error"] == {
        "status": 422,
        "code": "invalid",
        "message": "source_id: no source with id 999",
        "details": {"field": "source_id"},
    }
    assert (await api.get("/api/v1/jobs")).json()["total"] == 0


async def test_job_crud_and_listing(api: Api) -> None:
    source = await _source(api)
    once = await _job(api, source["id"])
    every = await _job(api, source["id"], interval_minutes=30, metadata={"team": "a"})
    assert once["status"] == "scheduled"
    assert once["interval_minutes"] is None
    assert once["allowed_actions"] == ["pause", "cancel", "force-run"]
    assert every["metadata"] == {"team": "a"}

    page = (await api.get("/api/v1/jobs", params={"limit": 1, "offset": 1})).json()
    assert (page["total"], [j["id"] for j in page["items"]]) == (2, [every["id"]])
    by_source = await api.get("/api/v1/jobs", params={"source_id": source["id"] + 1})
    assert by_source.json()["total"] == 0

    changed = await api.client.put(
        f"/api/v1/jobs/{every['id']}", json={"max_retries": 5}, headers=api.admin
    )
    assert (changed.status_code, changed.json()["max_retries"]) == (200, 5)
    counts = (await api.get("/api/v1/jobs/status-counts")).json()
    assert counts == {
        "pending": 0,
        "scheduled": 2,
        "running": 0,
        "completed": 0,
        "failed": 0,
        "paused": 0,
        "cancelled": 0,
        "total": 2,
    }
    stats = (await api.get(f"/api/v1/jobs/{once['id']}/stats")).json()
    assert (stats["total"], stats["success_rate"], stats["status"]) == (0, None, "scheduled")
    assert (
        await api.client.delete(f"/api/v1/jobs/{once['id']}", headers=api.admin)
    ).status_code == 204
    assert (await api.get(f"/api/v1/jobs/{once['id']}")).status_code == 404


async def test_actions_follow_the_state_machine(api: Api) -> None:
    source = await _source(api)
    job = await _job(api, source["id"], interval_minutes=60)
    jid = job["id"]
    paused = await api.post(f"/api/v1/jobs/{jid}/pause")
    assert (paused.status_code, paused.json()["status"]) == (200, "paused")
    assert paused.json()["allowed_actions"] == ["resume", "cancel"]

    refused = await api.post(f"/api/v2/jobs/{jid}/force-run")
    assert refused.status_code == 409
    assert refused.json()["error"] == {
        "status": 409,
        "code": "invalid_state",
        "message": f"job {jid} is paused: cannot force-run (allowed: resume, cancel)",
        "details": {
            "job_id": jid,
            "state": "paused",
            "action": "force-run",
            "allowed_actions": ["resume", "cancel"],
        },
    }
    resumed = await api.post(f"/api/v1/jobs/{jid}/resume")
    assert resumed.json()["status"] == "scheduled"
    forced = await api.post(f"/api/v2/jobs/{jid}/force-run")
    assert forced.json()["next_run_at"] <= time.time()

    _set_status(api, jid, JobStatus.FAILED)
    assert (await api.post(f"/api/v1/jobs/{jid}/pause")).json()["error"]["details"][
        "allowed_actions"
    ] == ["retry"]
    retried = await api.post(f"/api/v1/jobs/{jid}/retry")
    assert (retried.json()["status"], retried.json()["current_retry_count"]) == ("pending", 0)
    cancelled = await api.post(f"/api/v1/jobs/{jid}/cancel")
    assert (cancelled.json()["status"], cancelled.json()["next_run_at"]) == ("cancelled", None)
    again = await api.post(f"/api/v1/jobs/{jid}/cancel")
    assert (again.status_code, again.json()["error"]["details"]["allowed_actions"]) == (
        409,
        ["resume", "force-run"],
    )
    # A cancelled job is stopped, not gone: it can be resumed (or run now).
    resumed = await api.post(f"/api/v1/jobs/{jid}/resume")
    assert (resumed.json()["status"], resumed.json()["cancelled_at"]) == ("scheduled", None)
    assert resumed.json()["next_run_at"] is not None


async def test_jobs_show_the_interval_adaptive_scheduling_chose(api: Api) -> None:
    source = await _source(api)
    adaptive = await _job(api, source["id"], interval_minutes=30)
    fixed = await _job(api, source["id"], interval_minutes=30, adaptive_scheduling=False)
    assert adaptive["adapted_interval_seconds"] is None  # no run observed yet

    state = AdaptiveState(source_id=int(source["id"]), unchanged_count=2, current_interval=7200.0)
    await api.jobs.sources.save_adaptive_state(state)

    one = (await api.get(f"/api/v1/jobs/{adaptive['id']}")).json()
    assert one["adapted_interval_seconds"] == 7200.0
    listed = (await api.get("/api/v1/jobs")).json()["items"]
    adapted = {job["id"]: job["adapted_interval_seconds"] for job in listed}
    assert adapted == {adaptive["id"]: 7200.0, fixed["id"]: None}  # a fixed job keeps its own
    assert listed[0] == one  # a list item is the job as its own endpoint shows it


async def test_running_job_cannot_be_deleted(api: Api) -> None:
    source = await _source(api)
    job = await _job(api, source["id"])
    _set_status(api, job["id"], JobStatus.RUNNING)
    response = await api.client.delete(f"/api/v1/jobs/{job['id']}", headers=api.admin)
    assert response.status_code == 409
    assert response.json()["error"]["details"]["state"] == "running"


async def test_executions_and_logs_of_a_job_that_never_ran(api: Api) -> None:
    source = await _source(api)
    job = await _job(api, source["id"])
    page = (await api.get(f"/api/v1/jobs/{job['id']}/executions")).json()
    assert page.pop("total_as_of") > 0
    assert page == {"items": [], "next_cursor": None, "total": 0, "limit": 50, "offset": 0}
    logs = await api.get(f"/api/v1/jobs/{job['id']}/logs")
    assert (logs.status_code, logs.json()["error"]["message"]) == (
        404,
        f"job {job['id']} has not run yet",
    )
    assert (await api.get("/api/v1/executions/1")).status_code == 404
    assert (await api.get("/api/v1/jobs/77/executions")).status_code == 404


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("http://10.1.2.3/", True),
        ("http://192.168.0.1/x", True),
        ("http://169.254.169.254/latest/meta-data", True),
        ("http://[::1]/", True),
        ("http://0.0.0.0/", True),
        ("ftp://8.8.8.8/", True),
        ("http://127.0.0.1:8080/", False),  # the tests' allow-list
        ("http://8.8.8.8/", False),
    ],
)
async def test_private_urls_are_refused(api: Api, url: str, refused: bool) -> None:
    source = await _source(api)
    response = await api.post("/api/v1/jobs", json={"source_id": source["id"], "url": url})
    if refused:
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] in ("url_refused", "invalid")
    else:
        assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("not a url", "scheme: only http:// and https:// addresses are crawled"),
        ("ftp://example.com/", "scheme: ftp: is not http(s)"),
        ("http://example.com:99999/", "bad_port: the port is not a number up to 65535"),
        ("", "empty: nothing was given"),
    ],
)
async def test_a_refused_url_says_why_in_words(api: Api, url: str, reason: str) -> None:
    answer = await api.post("/api/v1/sources", json={"name": "a", "start_urls": [url]})
    assert (answer.status_code, answer.json()["error"]["code"]) == (422, "url_refused")
    assert answer.json()["error"]["details"]["reason"] == f"not a crawlable URL ({reason})"


async def test_allow_list_by_host_name(make_settings: SettingsFactory) -> None:
    async with running_api(make_settings(), allow_networks=["intranet.example"]) as api:
        bad = await api.post(
            "/api/v1/sources", json={"name": "a", "start_urls": ["http://127.0.0.1/"]}
        )
        assert (bad.status_code, bad.json()["error"]["code"]) == (422, "url_refused")
        assert bad.json()["error"]["details"]["reason"] == (
            "127.0.0.1 port 80 is a non-public address outside the network allow-list"
        )


async def test_validation_errors_share_the_shape(api: Api) -> None:
    response = await api.post("/api/v1/jobs", json={"url": "http://8.8.8.8/", "max_retries": -1})
    assert response.status_code == 422
    error = response.json()["error"]
    assert (error["code"], error["message"]) == ("invalid", "the request is invalid")
    assert sorted(e["loc"][-1] for e in error["details"]["errors"]) == ["max_retries", "source_id"]
    unknown_route = await api.get("/api/v1/nothing")
    assert unknown_route.json() == {
        "error": {"status": 404, "code": "not_found", "message": "Not Found"}
    }


async def test_frontier_and_pages(api: Api) -> None:
    empty = await api.get("/api/frontier/stats", params={"crawl": "default"})
    assert (empty.status_code, empty.json()["error"]["details"]) == (
        404,
        {"crawl": "default", "crawls": []},
    )
    assert (await api.get("/api/frontier/stats")).json()["total"] == 0  # every crawl: none
    seeded = await api.post(
        "/api/frontier/seed",
        json={"urls": ["http://127.0.0.1:9/a", "http://127.0.0.1:9/a#x", "not a url"]},
    )
    assert seeded.status_code == 200, seeded.text
    assert (seeded.json()["added"], len(seeded.json()["rejected"])) == (1, 1)
    await api.post("/api/frontier/add", json={"urls": ["http://127.0.0.1:9/b"], "priority": "low"})

    stats = (await api.get("/api/frontier/stats")).json()
    assert (stats["total"], stats["pending"], stats["due_now"], stats["pending_hosts"]) == (
        2,
        2,
        2,
        1,
    )
    urls = (await api.get("/api/frontier/urls", params={"status": "pending"})).json()
    assert [(u["url"], u["priority"]) for u in urls["items"]] == [
        ("http://127.0.0.1:9/a", 3),
        ("http://127.0.0.1:9/b", 1),
    ]
    pages = (await api.get("/api/pages", params={"host": "127.0.0.1:9"})).json()
    assert pages.pop("total_as_of") > 0
    assert pages == {"items": [], "next_cursor": None, "total": 0, "limit": 50, "offset": 0}
    assert (await api.post("/api/frontier/recover")).json() == {"recovered": 0}
    cleared = await api.client.delete("/api/frontier", headers=api.admin)
    assert cleared.json() == {"deleted": 2}
    stats = (await api.client.get("/api/stats")).json()
    assert (stats["pages"], stats["frontier_size"], stats["jobs"]["scheduled"]) == (0, 0, 0)
    refused = await api.post("/api/frontier/add", json={"urls": ["http://10.0.0.1/"]})
    assert refused.status_code == 422


@pytest.mark.parametrize(
    ("rule", "seeded", "found"),
    [("add", "http://127.0.0.1:9/docs", "/docs/"), ("strip", "http://127.0.0.1:9/docs/", "/docs")],
)
async def test_a_url_seeded_over_the_api_hashes_as_the_crawler_finds_it(
    make_settings: SettingsFactory, rule: str, seeded: str, found: str
) -> None:
    """The API and the crawler build their normalizer from the same settings (trailing slash
    included): the URL seeded and the one a page links to are one frontier row."""
    settings = make_settings(url_trailing_slash=rule)
    crawler = UrlNormalizer.from_settings(settings)
    page = parse_html(f'<a href="{found}">docs</a>', "http://127.0.0.1:9/", normalizer=crawler)
    async with running_api(settings) as api:
        response = await api.post("/api/frontier/seed", json={"urls": [seeded]})
        assert response.json()["added"] == 1
        again = await api.post("/api/frontier/add", json={"urls": page.links})
        assert again.json()["added"] == 0
        urls = (await api.get("/api/frontier/urls")).json()["items"]
    assert [url_hash(u["url"]) for u in urls] == [url_hash(page.links[0])]


async def test_domains_and_robots(api: Api) -> None:
    assert (await api.get("/api/domains")).json()["total"] == 0
    assert (await api.get("/api/domains/nowhere.example/robots")).status_code == 404
    reset = await api.post("/api/admin/domains/nowhere.example/reset")
    assert reset.status_code == 404


async def test_scheduler_endpoints(api: Api) -> None:
    source = await _source(api)
    await _job(api, source["id"], interval_minutes=60)
    dist = (await api.get("/api/v1/scheduler/distribution")).json()
    assert (dist["total_jobs"], dist["distribution_score"]) == (1, 1.0)
    preview = (await api.post("/api/v1/scheduler/rebalance/preview")).json()
    assert (preview["dry_run"], preview["moves"]) == (True, [])
    metrics = (await api.get("/api/v1/scheduler/metrics")).json()
    assert metrics["jobs"]["scheduled"] == 1
    sync = (await api.post("/api/v1/admin/sync-enabled-sources")).json()
    assert (sync["dry_run"], sync["create_for_sources"]) == (True, [])
