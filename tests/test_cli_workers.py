"""`harvestman seed`, `worker`, `status` and `admin rebuild-cache` against PostgreSQL and Redis."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid

import redis.asyncio as aioredis

from harvestman.store import SqlStore
from testsite import TestSite

CLI = [sys.executable, "-m", "harvestman.cli"]


async def run(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *CLI, *args, env={**os.environ, "COLUMNS": "200", **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_worker_refuses_a_schema_that_is_behind_and_says_what_to_run(
    pg_schema_url: str,
) -> None:
    env = {"HARVESTMAN_DATABASE_URL": pg_schema_url}
    code, _, err = await run("worker", "--exit-when-done", env=env)
    assert code == 1
    assert "harvestman db upgrade" in err

    code, _, err = await run("db", "upgrade", env=env)
    assert code == 0, err
    code, out, _ = await run("db", "current", env=env)
    assert code == 0
    database, code_revision = (line.split()[-1] for line in out.splitlines()[:2])
    assert database == code_revision


async def test_seed_worker_status_and_rebuild_cache(pg_schema_url: str, redis_url: str) -> None:
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    env = {
        "HARVESTMAN_DATABASE_URL": pg_schema_url,
        "HARVESTMAN_REDIS_URL": redis_url,
        "HARVESTMAN_REDIS_PREFIX": prefix,
        "HARVESTMAN_FRONTIER_DELAY": "0",
        "HARVESTMAN_FETCH_TIMEOUT": "1",
        "HARVESTMAN_FETCH_RETRY_BACKOFF": "0.01",
        "HARVESTMAN_FETCH_MAX_PAGE_SIZE": str(1024 * 1024),
        "HARVESTMAN_FRONTIER_REFRESH_INTERVAL": "0.2",
    }
    async with SqlStore(pg_schema_url) as store:
        await store.upgrade()
    async with TestSite() as site:
        host = site.host
        code, _, err = await run("seed", site.url("/"), "mailto:x@y.z", env=env)
        assert code == 0, err
        assert "seeded 1 URLs" in err
        assert "'mailto:x@y.z': scheme" in err

        code, _, err = await run("worker", "--exit-when-done", env=env)
        assert code == 0, err

    code, out, err = await run("status", "--json", env=env)
    assert code == 0, err
    status = json.loads(out)
    assert status["urls"].get("pending", 0) == 0
    assert status["urls"]["completed"] >= 20
    assert status["hosts"][0]["host"] == host
    # The crawl counters the worker kept in Redis agree with the store.
    assert status["counters"]["completed"] == status["urls"]["completed"]
    # The worker has left: the table view says so in a line, not with an empty box.
    code, out, err = await run("status", env=env)
    assert code == 0, err
    assert "live workers (redis): none" in out
    assert f"{host} " in out  # the hosts' table

    redis = aioredis.from_url(redis_url)
    try:
        seen_keys = [key async for key in redis.scan_iter(f"{prefix}:seen:*")]
        assert len(seen_keys) == 1
        known = await redis.scard(seen_keys[0])
        await redis.delete(*seen_keys, *[k async for k in redis.scan_iter(f"{prefix}:robots:*")])

        code, _, err = await run("admin", "rebuild-cache", env=env)
        assert code == 0, err
        rebuilt = await redis.scard(seen_keys[0])
        assert rebuilt >= known  # every URL the store knows (the crawl's own seeds included)
        assert await redis.exists(f"{prefix}:robots:{host}")
    finally:
        keys = [key async for key in redis.scan_iter(f"{prefix}:*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
