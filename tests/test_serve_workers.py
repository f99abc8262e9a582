"""``harvestman serve`` alone on SQLite crawls what is seeded through the API, with its
in-process worker; its own log lines (and uvicorn's) go to stderr as JSON lines."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from apiclient import SECRET
from harvestman.api.auth import Role, create_token
from testsite import TestSite

ADMIN = {"Authorization": f"Bearer {create_token(SECRET, Role.ADMIN)}"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _until(check: Any, what: str, within: float = 60.0) -> Any:
    """Poll ``check()`` (async) until it returns something truthy; fail after ``within`` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"not within {within} s: {what}")


def _serve_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTMAN_")}
    env.update(
        HARVESTMAN_DATABASE_URL=f"sqlite:///{tmp_path / 'crawl.db'}",
        HARVESTMAN_API_JWT_SECRET=SECRET,
        HARVESTMAN_NETWORK_ALLOW="127.0.0.0/8",
        HARVESTMAN_FRONTIER_DELAY="0",
        HARVESTMAN_FRONTIER_REFRESH_INTERVAL="0.2",
        HARVESTMAN_FETCH_TIMEOUT="1",
        HARVESTMAN_FETCH_RETRY_BACKOFF="0.01",
        HARVESTMAN_FETCH_MAX_PAGE_SIZE=str(1024 * 1024),
        HARVESTMAN_WORKER_HEARTBEAT_INTERVAL="0.5",
        HARVESTMAN_STORE_FLUSH_INTERVAL="0.1",
        **extra,
    )
    return env


async def test_serve_alone_on_sqlite_crawls_what_the_api_seeds(tmp_path: Path) -> None:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    err_path = tmp_path / "serve.err"
    env = _serve_env(tmp_path, HARVESTMAN_LOG_FORMAT="json")
    with err_path.open("wb") as err:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "harvestman.cli", "serve", "--port", str(port),
            env=env, cwd=tmp_path, stdout=asyncio.subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:
        async with TestSite() as site, httpx.AsyncClient(base_url=base, timeout=5) as client:

            async def ready() -> bool:
                if process.returncode is not None:
                    raise AssertionError(f"serve exited:\n{err_path.read_text()}")
                try:
                    return (await client.get("/health")).status_code == 200
                except httpx.HTTPError:
                    return False

            await _until(ready, "serve answers /health")
            seeded = await client.post(
                "/api/frontier/seed", json={"urls": [site.url("/")]}, headers=ADMIN
            )
            assert seeded.status_code == 200, seeded.text

            async def pages() -> int:
                answer = await client.get("/api/pages", params={"limit": 1}, headers=ADMIN)
                assert answer.status_code == 200, answer.text
                return int(answer.json()["total"])

            await _until(pages, "the seeded site's pages are stored")

            async def crawling_worker() -> dict[str, Any] | None:
                answer = await client.get("/api/workers", headers=ADMIN)
                assert answer.status_code == 200, answer.text
                for worker in answer.json()["items"]:
                    if worker["current_host"] and worker["rate"]:
                        return dict(worker)
                return None

            worker = await _until(crawling_worker, "the worker reports its host and rate")
            assert site.hits["/"] >= 1
            site_host = site.host
            # The dashboard's worker table draws the stats event's workers: it is there too.
            event = await client.get(
                "/sse/crawler/events", params={"count": 1, "interval": 1}, headers=ADMIN
            )
            [data] = [line[5:] for line in event.text.splitlines() if line.startswith("data:")]
            drawn = {w["id"]: w for w in json.loads(data)["workers"]}
            assert drawn[worker["id"]]["current_host"] == site_host
            assert drawn[worker["id"]]["rate"] is not None
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                process.kill()
                await process.wait()
    # uvicorn shuts down on SIGINT, then exits by the signal it caught (130).
    assert process.returncode in (0, 130), err_path.read_text()
    # The worker runs inside serve: its pid, this machine, the seeded site's host.
    assert (worker["pid"], worker["hostname"]) == (process.pid, socket.gethostname())
    assert worker["current_host"] == site_host
    assert worker["crawl"] == "default"
    assert worker["rate"] > 0
    assert worker["pages"] >= 1

    # Every line serve wrote to stderr, uvicorn's included, is one JSON object.
    records = [json.loads(line) for line in err_path.read_text().splitlines()]
    assert records, "serve logged nothing"
    for record in records:
        assert {"time", "level", "logger", "message"} <= set(record), record
    said = {(r["logger"], r["message"]) for r in records}
    assert ("harvestman.crawl.workers", "1 in-process crawl worker on crawl 'default'") in said
    assert ("uvicorn.error", "Application shutdown complete.") in said
    assert not any("color_message" in record for record in records)  # uvicorn's ANSI copy
    # Leases were given back: the worker left the workers table when serve stopped.
    from harvestman.store import SqlStore

    async with SqlStore(env["HARVESTMAN_DATABASE_URL"]) as store:
        assert await store.workers() == []


async def test_serve_on_sqlite_with_no_workers_crawls_nothing_and_logs_text(
    tmp_path: Path,
) -> None:
    from support.cli import CLI

    port = _free_port()
    env = _serve_env(tmp_path, HARVESTMAN_SERVE_WORKERS="0", HARVESTMAN_LOG_LEVEL="info")
    process = await asyncio.create_subprocess_exec(
        *CLI, "serve", "--port", str(port), env=env, cwd=tmp_path,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:

            async def workers() -> dict[str, Any] | None:
                if process.returncode is not None:
                    raise AssertionError("serve exited")
                try:
                    answer = await client.get("/api/workers", headers=ADMIN)
                except httpx.HTTPError:
                    return None
                return dict(answer.json())

            listed = await _until(workers, "serve answers /api/workers")
    finally:
        process.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(process.communicate(), 30)
    assert listed == {"items": [], "total": 0, "pages_per_second": 0}
    text = err.decode()
    assert "in-process crawl worker" not in text
    # Readable text: "time LEVEL logger: message", uvicorn's lines too.
    started = [line for line in text.splitlines() if "Application startup complete" in line]
    assert len(started) == 1
    assert " INFO uvicorn.error: Application startup complete." in started[0]
