"""Shared fixtures: an isolated environment, test settings, the local test site, databases."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from harvestman.config import Settings
from harvestman.store import SqlStore
from servicelock import MARKER, run_directory, service_lock
from support import profiles
from support.sqlite_template import SchemaTemplate
from support.tiers import sort_into_tiers
from testsite import TestSite

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
HYPOTHESIS_PROFILE = profiles.load()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core for the fast tier (``-m "not slow"``: CPU-bound, 54 s
    with 2 workers on 2 cores against 68 s with 3), one more for a run with the slow tier, whose
    tests wait on servers, subprocesses and the browser (2 cores: 641 s at 2 workers, 571 s
    at 3, which used 138 % of the 200 % of CPU)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    fast_tier_only = "not slow" in (config.getoption("markexpr") or "")
    return (cores or 1) + (0 if fast_tier_only else 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test sorted into its tier (``slow`` or not, by what it uses: support/tiers.py).
    Tests that run alone go first: the other workers are then on short tests, not waited for."""
    sort_into_tiers(items)
    if HYPOTHESIS_PROFILE == "dev":
        profiles.cap_examples(items, profiles.DEV_EXAMPLES)
    items.sort(key=lambda item: item.get_closest_marker(MARKER) is None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    """A test that stops a shared server runs alone, its fixtures' set-up and teardown too."""
    exclusive = item.get_closest_marker(MARKER) is not None
    with service_lock(run_directory(item.config), exclusive=exclusive):
        return (yield)


@pytest.fixture(scope="session")
def schema_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store's schema template directory (``store_schema_cache``) of this test process:
    a crawl's subprocess copies its new store from there, never from the user's cache."""
    return tmp_path_factory.mktemp("schema-cache")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, schema_cache: Path) -> None:
    """No HARVESTMAN_* variable of the caller leaks in; each test runs in its own directory."""
    for name in list(os.environ):
        if name.startswith("HARVESTMAN_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HARVESTMAN_STORE_SCHEMA_CACHE", str(schema_cache))
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
def schema_template(tmp_path_factory: pytest.TempPathFactory) -> SchemaTemplate:
    """The SQLite schema migrated once per test process (each xdist worker its own)."""
    from harvestman.store import migrate

    return SchemaTemplate(tmp_path_factory.mktemp("schema"), migrate.upgrade)


@pytest.fixture(autouse=True)
def _migrated_sqlite_copied(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, schema_template: SchemaTemplate
) -> None:
    """A fresh SQLite store gets a copy of the template rather than twenty-odd migrations
    (support/sqlite_template.py); a test about the migrations opts out by its marker."""
    if request.node.get_closest_marker("migrate_from_scratch") is not None:
        return
    from harvestman.store import migrate

    monkeypatch.setattr(migrate, "upgrade", schema_template.upgrade)


SettingsFactory = Callable[..., Settings]


@pytest.fixture
def make_settings(tmp_path: Path) -> SettingsFactory:
    """Settings for a fast crawl of the local test site; keyword arguments override."""

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "database_url": f"sqlite:///{tmp_path / 'crawl.db'}",
            "fetch_timeout": 1.0,
            "fetch_retry_backoff": 0.01,
            "fetch_max_page_size": 1024 * 1024,
            "frontier_delay": 0.0,
            "store_flush_interval": 0.02,
        }
        values.update(overrides)
        return Settings(**values)

    return make


@contextlib.asynccontextmanager
async def serve(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> AsyncIterator[int]:
    """Serve ``handler`` for every GET on 127.0.0.1 (an ephemeral port, yielded)."""
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    try:
        yield tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


@pytest.fixture
async def site() -> AsyncIterator[TestSite]:
    """The test site's quick variant (no page that holds a crawl for seconds): for every test
    that is not about slowness; its ``expected*`` attributes say what a crawl ends with."""
    async with TestSite(quick=True) as running:
        yield running


@pytest.fixture
async def full_site() -> AsyncIterator[TestSite]:
    """The whole test site, ``/slow.html`` (a 3 s answer to a 1 s timeout) included."""
    async with TestSite(slow_seconds=3.0) as running:
        yield running


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def require_service(name: str, host: str, port: int) -> None:
    """Skip when a server is not running here; in CI its absence is a failure."""
    if _reachable(host, port):
        return
    message = f"{name} is not reachable on {host}:{port}"
    if IN_CI:
        pytest.fail(f"{message} (CI must provide it: see .ci/run)")
    pytest.skip(f"{message}; start it to run this test")


POSTGRES_URL = os.environ.get(
    "HARVESTMAN_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


@pytest.fixture
def postgres_url() -> str:
    require_service("PostgreSQL", "127.0.0.1", 5432)
    return POSTGRES_URL


REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def redis_url() -> str:
    require_service("Redis", "127.0.0.1", 6379)
    return REDIS_URL


@contextlib.contextmanager
def pg_schema(postgres_url: str) -> Iterator[str]:
    """A database URL whose search_path is a fresh schema, dropped afterwards."""
    import uuid

    from sqlalchemy import create_engine, text

    schema = f"t_{uuid.uuid4().hex[:12]}"
    url = postgres_url.replace("postgresql://", "postgresql+psycopg://", 1)
    # pre_ping: a test may restart the server, killing pooled connections.
    admin = create_engine(url, pool_pre_ping=True)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{postgres_url}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        admin.dispose()


@pytest.fixture
def pg_schema_url(postgres_url: str) -> Iterator[str]:
    """A database URL whose search_path is a fresh schema, dropped afterwards."""
    with pg_schema(postgres_url) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
async def store_on_each_database(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[SqlStore]:
    """An open store at the head revision, on SQLite and on a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'store.db'}"
    else:
        url = request.getfixturevalue("pg_schema_url")
    async with SqlStore(url) as opened:
        await opened.upgrade()
        yield opened
