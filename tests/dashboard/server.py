"""A real ``harvestman serve`` process on 127.0.0.1, over a SQLite store prepared with a
source of the local test site and a one-time job due now, so the scheduler starts crawling
on its first poll (at start-up) and the dashboard has something live to show."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from harvestman.api.auth import Role, create_token
from harvestman.api.passwords import hash_password
from harvestman.jobs.records import JobSpec, SourceSpec
from harvestman.store import SqlStore
from harvestman.store.jobs.db import JobStore

SECRET = "d7a41c9e05b38f62ea1d4c70b98f25e3a6c1"
USER_RATE = 40  # requests a minute: low enough for a test to reach the limit for real
PERSON, PERSON_PASSWORD = "carol", "carol's long password"  # signs in with the user role
ADMIN_PERSON, ADMIN_PASSWORD = "ada", "ada's longer password"  # signs in with the admin role


@dataclass
class Served:
    base: str
    admin: str  # bearer tokens
    user: str
    source_id: int
    job_id: int
    process: subprocess.Popen[bytes]
    log_path: Path
    workdir: Path
    database_url: str
    env: dict[str, str]  # the HARVESTMAN_* settings it was started with beyond the usual

    def admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin}"}

    def user_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.user}"}

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _prepare(database_url: str, start_url: str | None) -> tuple[int, int]:
    async with SqlStore(database_url) as store:
        await store.upgrade()
        store.create_user(PERSON, hash_password(PERSON_PASSWORD), "user")
        store.create_user(ADMIN_PERSON, hash_password(ADMIN_PASSWORD), "admin")
        if start_url is None:  # an empty service: the test makes its own sources
            return 0, 0
        async with JobStore(store.engine) as jobs:
            # A small crawl delay spreads the test site's ~40 pages over several seconds, so
            # the page count visibly rises while the browser watches.
            source = await jobs.sources.create(
                SourceSpec(name="testsite", start_urls=[start_url], crawl_delay=0.3)
            )
            job = await jobs.jobs.create(JobSpec(source_id=source.id, url=start_url))
    return source.id, job.id


def _command() -> list[str]:
    script = Path(sys.executable).with_name("harvestman")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from harvestman.cli.app import app; app()"]


@contextlib.asynccontextmanager
async def serve_dashboard(
    workdir: Path, start_url: str | None, *, env: dict[str, str] | None = None
) -> AsyncIterator[Served]:
    """``harvestman serve`` crawling ``start_url``'s site (None: no source yet), started
    (``wait_ready`` waits for it to answer: start the browser meanwhile); stopped (SIGINT,
    then killed) on exit. ``env``: more settings, as HARVESTMAN_* variables."""
    database_url = f"sqlite:///{workdir / 'crawl.db'}"
    source_id, job_id = await _prepare(database_url, start_url)
    port = _free_port()
    log_path = workdir / "serve.log"
    extra = dict(env or {})
    process = _start(workdir, database_url, port, log_path, extra)
    served = Served(
        base=f"http://127.0.0.1:{port}",
        admin=create_token(SECRET, Role.ADMIN),
        user=create_token(SECRET, Role.USER),
        source_id=source_id,
        job_id=job_id,
        process=process,
        log_path=log_path,
        workdir=workdir,
        database_url=database_url,
        env=extra,
    )
    try:
        yield served
    finally:
        await asyncio.to_thread(stop, served)  # the site (same loop) answers meanwhile


def _start(
    workdir: Path, database_url: str, port: int, log_path: Path, extra: dict[str, str]
) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTMAN_")}
    env.update(
        HARVESTMAN_API_JWT_SECRET=SECRET,
        HARVESTMAN_API_ALLOW_NETWORKS="127.0.0.0/8",
        HARVESTMAN_API_RATE_USER=str(USER_RATE),
        HARVESTMAN_FETCH_TIMEOUT="1",
        HARVESTMAN_FETCH_RETRY_BACKOFF="0.01",
        HARVESTMAN_FETCH_MAX_PAGE_SIZE=str(1024 * 1024),
        HARVESTMAN_WORKER_HEARTBEAT_INTERVAL="1",
        HARVESTMAN_STORE_FLUSH_INTERVAL="0.1",
        # The frontier screen's test finds a seeded URL still pending: no in-process worker
        # may take it first (serve's workers are tested in tests/test_serve_workers.py).
        HARVESTMAN_SERVE_WORKERS="0",
    )
    env.update(extra)
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [*_command(), "serve", "--port", str(port), "--database-url", database_url],
            env=env,
            cwd=workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


async def wait_ready(served: Served, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    async with httpx.AsyncClient(timeout=2) as client:
        while time.monotonic() < deadline:
            if served.process.poll() is not None:
                raise RuntimeError(f"harvestman serve exited:\n{served.log()}")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(f"{served.base}/health")).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"harvestman serve did not answer in {within} s:\n{served.log()}")


def start_again(served: Served) -> None:
    """Start a stopped server again on the same port and store (``wait_ready`` waits for
    it), as an operator restarting ``serve`` does."""
    port = int(served.base.rsplit(":", 1)[1])
    served.process = _start(served.workdir, served.database_url, port, served.log_path, served.env)


def stop(served: Served) -> None:
    """Stop the server (idempotent): SIGINT lets uvicorn shut down; a kill after 10 s."""
    if served.process.poll() is not None:
        return
    served.process.send_signal(signal.SIGINT)
    try:
        served.process.wait(10)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait(5)
