"""The ``stats`` event of /sse/crawler/events carries what the dashboard's overview draws:
bytes downloaded, robots.txt denials and the live workers with their current hosts."""

from __future__ import annotations

import json
import time

from apiclient import running_api
from conftest import SettingsFactory
from storerows import add_crawl, add_page, add_url


def _events(body: str) -> list[tuple[str, dict[str, object]]]:
    found, event = [], ""
    for line in body.splitlines():
        if line.startswith("event:"):
            event = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            found.append((event, json.loads(line.split(":", 1)[1])))
    return found


async def test_the_stats_event_carries_bytes_denials_and_workers(
    make_settings: SettingsFactory,
) -> None:
    async with running_api(make_settings()) as api:
        engine = api.store.engine
        crawl = add_crawl(engine, "default")
        add_page(engine, crawl, "http://a.test/", 0, content_length=1000)
        add_page(engine, crawl, "http://a.test/gone", 0, content_length=234, status_code=404)
        add_url(engine, crawl, "http://a.test/private/x", "blocked", 0)
        add_url(engine, crawl, "http://a.test/next", "pending", 0)
        now = time.time()
        await api.store.register_worker("w-live", "box", 4242, now)
        info = {"crawl": "default", "current_host": "a.test", "pages": 2, "rate": 0.5}
        assert await api.store.heartbeat("w-live", now, now + 60, info)
        await api.store.register_worker("w-silent", "box", 17, now - 600)

        response = await api.get("/sse/crawler/events", params={"count": 1, "interval": 1})

    assert response.status_code == 200
    [(event, stats)] = _events(response.text)
    assert event == "stats"
    assert (stats["pages"], stats["bytes"], stats["robots_denials"]) == (2, 1234, 1)
    assert (stats["frontier_size"], stats["status_codes"]) == (1, {"200": 1, "404": 1})
    assert stats["workers"] == [
        {
            "id": "w-live",
            "hostname": "box",
            "pid": 4242,
            "heartbeat_at": now,
            "crawl": "default",
            "current_host": "a.test",
            "pages": 2,
            "rate": 0.5,
        }
    ]


async def test_the_event_interval_has_bounds(make_settings: SettingsFactory) -> None:
    async with running_api(make_settings()) as api:
        for interval in ("0.5", "61", "nan"):
            response = await api.get("/sse/crawler/events", params={"interval": interval})
            assert response.status_code == 422, interval
            assert response.json()["error"]["details"]["errors"][0]["loc"] == ["query", "interval"]
