"""The API on a real uvicorn server: SSE streams, and ``serve`` starting (or refusing to)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from apiclient import Api, running_api
from conftest import SettingsFactory

SERVE = "import typer; from harvestman.api.commands import serve; typer.run(serve)"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def server(make_settings: SettingsFactory) -> AsyncIterator[tuple[str, Api]]:
    async with running_api(make_settings(), scheduler=True) as api:
        port = _free_port()
        config = uvicorn.Config(api.app, host="127.0.0.1", port=port, log_level="warning")
        uv = uvicorn.Server(config)
        task = asyncio.create_task(uv.serve())
        while not uv.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
            await asyncio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}", api
        finally:
            uv.should_exit = True
            await task


async def _events(url: str, headers: dict[str, str], n: int) -> list[tuple[str, dict]]:
    found: list[tuple[str, dict]] = []
    event = ""
    async with (
        httpx.AsyncClient(timeout=5) as client,
        client.stream("GET", url, headers=headers) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                found.append((event, json.loads(line.split(":", 1)[1])))
                if len(found) == n:
                    break
    return found


async def test_sse_streams_deliver_events(server: tuple[str, Api]) -> None:
    base, api = server
    health = await _events(f"{base}/sse/health/events", api.user, 2)
    assert [(e, d["status"], d["store"]) for e, d in health] == [
        ("health", "ok", {"status": "ok"}),
        ("health", "ok", {"status": "ok"}),
    ]
    assert health[0][1]["scheduler"]["status"] == "ok"
    crawler = await _events(f"{base}/sse/crawler/events?count=1", api.user, 1)
    assert (crawler[0][0], crawler[0][1]["pages"]) == ("stats", 0)
    metrics = await _events(f"{base}/sse/metrics/events?count=1", api.user, 1)
    assert metrics[0][0] == "metrics"
    assert metrics[0][1]["jobs"]["total"] == 0


async def test_log_stream_replays_stored_lines_then_ends(server: tuple[str, Api]) -> None:
    from harvestman.jobs.lifecycle import after_failure
    from harvestman.jobs.records import ExecutionResult, ExecutionStatus, LogLine

    base, api = server
    source = await api.post(
        "/api/v1/sources", json={"name": "s", "start_urls": ["http://127.0.0.1:9/"]}
    )
    # The source's recurring job was created when it was enabled (the scheduler is wired in).
    assert (await api.get("/api/v1/jobs")).json()["total"] == 1
    await api.post(
        "/api/v1/jobs", json={"source_id": source.json()["id"], "url": "http://127.0.0.1:9/"}
    )
    claims = await api.jobs.locks.claim_due("test", 1)
    execution = claims[0].execution
    lines = [LogLine(execution.id, n, 1.0, "INFO", "harvestman.t", f"line {n}") for n in (1, 2)]
    await api.jobs.executions.append_logs(lines)
    result = ExecutionResult(status=ExecutionStatus.FAILED, error_message="gone")
    await api.jobs.locks.finish(claims[0], result, after_failure(claims[0].job, time.time()))
    url = f"{base}/api/v1/jobs/{execution.job_id}/logs/stream"
    events = await _events(url, api.user, 3)
    assert [(e, d.get("message") or d.get("status")) for e, d in events] == [
        ("log", "line 1"),
        ("log", "line 2"),
        ("end", "failed"),
    ]


async def test_metrics_are_prometheus_text(server: tuple[str, Api]) -> None:
    base, api = server
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{base}/metrics", headers=api.user)
    assert response.status_code == 200
    text = response.text
    for name in (
        "harvestman_pages_fetched_total 0.0",
        "harvestman_frontier_size 0.0",
        "harvestman_active_workers 0.0",
        "harvestman_robots_denials_total 0.0",
        'harvestman_scheduler_jobs{state="scheduled"} 0.0',
    ):
        assert name in text


def _serve(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", SERVE, *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_serve_refuses_to_start_without_a_secret(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTMAN_")}
    proc = _serve(["--port", str(_free_port())], env, tmp_path)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert b"HARVESTMAN_API_JWT_SECRET is missing" in err


def test_serve_in_dev_mode_answers_health(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTMAN_")}
    env["HARVESTMAN_DATABASE_URL"] = f"sqlite:///{tmp_path / 'serve.db'}"
    port = _free_port()
    proc = _serve(["--port", str(port), "--dev"], env, tmp_path)
    try:
        for _ in range(200):  # a bound on the wait for the server to listen, not a speed check
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
                time.sleep(0.1)
        else:
            pytest.fail("serve never answered /health")
        assert response.status_code == 200
        assert response.json()["scheduler"]["status"] == "ok"
        assert httpx.get(f"http://127.0.0.1:{port}/openapi.json").status_code == 200
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    # uvicorn shuts down gracefully, then re-raises SIGTERM so the exit status tells why.
    assert proc.returncode in (0, -15)
    assert b"Finished server process" in err
