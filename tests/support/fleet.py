"""A crawl service as it is deployed: one ``harvestman serve`` and ``harvestman worker``s, real
subprocesses of this interpreter over one PostgreSQL, one Redis and one RabbitMQ.

The queue prefix, Redis prefix and database schema are the caller's, unique per use; the
queue is deleted afterwards. Used by tests/test_jobs_broker.py and bench/jobs_broker_bench.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from apiclient import SECRET, bearer
from harvestman.api.auth import Role
from support.cli import run_cli

CLI = [sys.executable, "-m", "harvestman.cli"]
BROKER_URL = "amqp://guest:guest@127.0.0.1:5672/"
ADMIN = bearer(Role.ADMIN)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fleet_env(database_url: str, redis_url: str, **settings: str) -> dict[str, str]:
    """The environment of every process: fast heartbeats and renewals, 127.0.0.1 allowed."""
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTMAN_")}
    env.update(
        HARVESTMAN_DATABASE_URL=database_url,
        HARVESTMAN_REDIS_URL=redis_url,
        HARVESTMAN_REDIS_PREFIX=prefix,
        HARVESTMAN_BROKER_URL=BROKER_URL,
        HARVESTMAN_BROKER_QUEUE_PREFIX=prefix,
        HARVESTMAN_BROKER_RENEW_INTERVAL="0.5",
        HARVESTMAN_BROKER_TAKEOVER_SECONDS="3",
        HARVESTMAN_API_JWT_SECRET=SECRET,
        HARVESTMAN_API_RATE_ADMIN="1000000",  # the tests poll the API
        HARVESTMAN_NETWORK_ALLOW="127.0.0.0/8",
        HARVESTMAN_WORKER_HEARTBEAT_INTERVAL="0.5",
        HARVESTMAN_WORKER_HEARTBEAT_TIMEOUT="5",
        HARVESTMAN_FRONTIER_SWEEP_INTERVAL="1",
        HARVESTMAN_FRONTIER_REFRESH_INTERVAL="0.3",
        HARVESTMAN_FETCH_TIMEOUT="5",
        HARVESTMAN_FETCH_RETRY_BACKOFF="0.05",
        HARVESTMAN_STORE_FLUSH_INTERVAL="0.05",
    )
    env.update(settings)
    return env


@dataclass
class Fleet:
    env: dict[str, str]
    directory: Path
    base: str = ""
    serve: asyncio.subprocess.Process | None = None
    workers: list[asyncio.subprocess.Process] = field(default_factory=list)
    client: httpx.AsyncClient = field(default_factory=lambda: httpx.AsyncClient(timeout=30))

    async def start_serve(self) -> None:
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        out = (self.directory / "serve.log").open("wb")
        self.serve = await asyncio.create_subprocess_exec(
            *CLI, "serve", "--port", str(port), env=self.env, stdout=out, stderr=out
        )

    async def wait_serving(self) -> None:
        assert self.serve is not None
        while True:  # the caller's timeout bounds the wait for the server to listen
            try:
                if (await self.client.get(f"{self.base}/health")).status_code == 200:
                    return
            except httpx.TransportError:
                assert self.serve.returncode is None, self.logs()
            await asyncio.sleep(0.1)

    async def start_worker(self) -> asyncio.subprocess.Process:
        out = (self.directory / f"worker{len(self.workers)}.log").open("wb")
        worker = await asyncio.create_subprocess_exec(
            *CLI, "worker", env=self.env, stdout=out, stderr=out
        )
        self.workers.append(worker)
        return worker

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        """The API's JSON answer to an admin's request; any status but 2xx fails."""
        response = await self.client.request(method, self.base + path, json=body, headers=ADMIN)
        assert response.is_success, (method, path, response.status_code, response.text)
        return response.json()

    async def add_job(self, name: str, url: str, **source: Any) -> int:
        """A source of ``url`` and an hourly job, due tomorrow: only a force-run runs it. The
        source is disabled so that it gets no recurring job of its own (due at once)."""
        made = await self.call(
            "POST",
            "/api/v1/sources",
            {"name": name, "start_urls": [url], "enabled": False, **source},
        )
        job = await self.call(
            "POST",
            "/api/v1/jobs",
            {
                "source_id": made["id"],
                "url": url,
                "interval_minutes": 60,
                "adaptive_scheduling": False,
                "next_run_at": time.time() + 86400,
            },
        )
        return int(job["id"])

    async def executions(self, job_id: int) -> list[dict[str, Any]]:
        page = await self.call("GET", f"/api/v1/jobs/{job_id}/executions?limit=100")
        return list(page["items"])

    async def log_lines(self, job_id: int, execution_id: int) -> list[str]:
        answer = await self.call(
            "GET", f"/api/v1/jobs/{job_id}/logs?execution_id={execution_id}&limit=10000"
        )
        return [line["message"] for line in answer["lines"]]

    async def wait_final(self, job_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
        """Each job's executions once every job has one and none is running (the caller's
        timeout bounds the wait)."""
        while True:
            found = {job_id: await self.executions(job_id) for job_id in job_ids}
            if all(runs and all(r["status"] != "running" for r in runs) for runs in found.values()):
                return found
            await asyncio.sleep(0.2)

    def logs(self) -> str:
        return "\n".join(
            path.read_text(errors="replace")[-3000:]
            for path in sorted(self.directory.glob("*.log"))
        )

    async def stop(self) -> None:
        processes = [p for p in [*self.workers, self.serve] if p is not None]
        for process in processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                await asyncio.wait_for(process.wait(), 20)
            except TimeoutError:
                process.kill()
                await process.wait()
        await self.client.aclose()


@contextlib.asynccontextmanager
async def fleet(env: dict[str, str], directory: Path, *, workers: int = 2) -> AsyncIterator[Fleet]:
    """``harvestman db upgrade``, ``serve``, then ``workers`` workers; all stopped after."""
    code, _, err = await run_cli("db", "upgrade", env=env)
    assert code == 0, err
    running = Fleet(env, directory)
    try:
        await running.start_serve()
        for _ in range(workers):  # they start together: each needs only the schema
            await running.start_worker()
        await running.wait_serving()
        await wait_consumers(env["HARVESTMAN_BROKER_QUEUE_PREFIX"], workers)
        yield running
    finally:
        await running.stop()
        await delete_queue(env["HARVESTMAN_BROKER_QUEUE_PREFIX"])


async def delete_queue(prefix: str) -> None:
    import aio_pika

    connection = await aio_pika.connect(BROKER_URL)
    async with connection:
        channel = await connection.channel()
        await channel.queue_delete(f"{prefix}.executions")


async def wait_consumers(prefix: str, count: int) -> None:
    """Wait until ``count`` workers consume the executions queue (the caller's timeout bounds
    the wait)."""
    import aio_pika

    connection = await aio_pika.connect(BROKER_URL)
    async with connection:
        channel = await connection.channel()
        while True:
            with contextlib.suppress(aio_pika.exceptions.ChannelClosed):
                queue = await channel.declare_queue(f"{prefix}.executions", passive=True)
                if (queue.declaration_result.consumer_count or 0) >= count:
                    return
            if channel.is_closed:  # a passive declare of a missing queue closes the channel
                channel = await connection.channel()
            await asyncio.sleep(0.1)
