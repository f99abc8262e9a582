"""A schemathesis run over the OpenAPI schema, in process, on SQLite and PostgreSQL: no
request makes a 5xx.

Each generated case is sent as generated and, where it has a JSON body, again with a lone
surrogate (``\ud800``) and a NUL put into its first string, as UTF-16 and as Latin-1 bytes;
where it has parameters, again with a NUL and the UTF-8 bytes of a surrogate
(``%ED%A0%80``) after each value and after the path. None may be a 5xx, and every error has
the one error shape.

Bounded: ``HARVESTMAN_FUZZ_EXAMPLES`` examples per operation (3 in the suite), as the admin
(who may call everything). The SSE streams are left out (a stream without ``count`` never
ends). ``HARVESTMAN_FUZZ_REPORT=1`` prints the statuses per variant.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from starlette.testclient import TestClient

from apiclient import api_settings, bearer
from harvestman.api.app import create_app
from harvestman.api.auth import Role
from harvestman.config import Settings
from harvestman.store import SqlStore
from harvestman.store.jobs.db import JobStore


@pytest.fixture(params=["sqlite", "postgres"])
def api_schema(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        database_url = f"sqlite:///{tmp_path / 'fuzz.db'}"
    else:
        database_url = request.getfixturevalue("pg_schema_url")
    crawl_settings = Settings(database_url=database_url)
    store = SqlStore(crawl_settings.database_url)
    jobs = JobStore(store.engine)

    async def open_() -> None:
        await store.__aenter__()
        await jobs.__aenter__()
        await store.upgrade()

    asyncio.run(open_())
    try:
        app = create_app(
            crawl_settings, sql_store=store, job_store=jobs, api_settings=api_settings()
        )
        schema = schemathesis.openapi.from_asgi("/openapi.json", app)
        yield schema.exclude(path_regex=r"^/sse/|/logs/stream(/v2)?$"), app
    finally:

        async def close() -> None:
            await jobs.__aexit__(None, None, None)
            await store.__aexit__(None, None, None)

        asyncio.run(close())


ADMIN = bearer(Role.ADMIN)
# Read at import: the autouse fixture clears HARVESTMAN_* before a test runs.
EXAMPLES = int(os.environ.get("HARVESTMAN_FUZZ_EXAMPLES", "3"))
REPORT = bool(os.environ.get("HARVESTMAN_FUZZ_REPORT"))
SURROGATE_BYTES = "%ED%A0%80"  # U+D800 as UTF-8 would write it, were it allowed


def _inject(value: Any, bad: str) -> Any:
    """``value`` with ``bad`` after its first string, or as a key of the outermost object."""
    done = False

    def walk(item: Any) -> Any:
        nonlocal done
        if done:
            return item
        if isinstance(item, str):
            done = True
            return item + bad
        if isinstance(item, dict):
            return {key: walk(child) for key, child in item.items()}
        if isinstance(item, list):
            return [walk(child) for child in item]
        return item

    changed = walk(value)
    if not done and isinstance(changed, dict):
        changed[bad] = "x"
    return changed


def _variants(kwargs: dict[str, Any], path_params: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """The hostile forms of one generated request, as TestClient arguments."""
    method, url = kwargs["method"], kwargs["url"]
    headers = {**ADMIN, "Content-Type": "application/json"}
    body = kwargs.get("json")
    if isinstance(body, dict | list):
        for name, bad in (("surrogate", "\ud800"), ("nul", "\x00")):
            content = json.dumps(_inject(body, bad)).encode()  # \ud800, \u0000 escapes
            yield name, {"method": method, "url": url, "headers": headers, "content": content}
        text = json.dumps(_inject(body, "é"), ensure_ascii=False)
        for name, codec in (("utf-16", "utf-16"), ("latin-1", "latin-1")):
            content = text.encode(codec, errors="replace")
            yield name, {"method": method, "url": url, "headers": headers, "content": content}
    params = kwargs.get("params") or {}
    if params or path_params:
        query = "&".join(
            f"{quote(str(k))}={quote(str(v))}{SURROGATE_BYTES}%00" for k, v in params.items()
        )
        path = f"{url}{SURROGATE_BYTES}%00" if path_params else url
        yield "parameters", {"method": method, "url": f"{path}?{query}", "headers": ADMIN}


def test_no_request_makes_a_500(api_schema: Any) -> None:
    # The schemathesis pytest plugin does not run under pytest 9: drive hypothesis directly.
    schema, app = api_schema
    client = TestClient(app, raise_server_exceptions=False)
    seen: Counter[tuple[str, int]] = Counter()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 35

    def check(variant: str, response: Any, where: tuple[str, str]) -> None:
        seen[variant, response.status_code] += 1
        assert response.status_code < 500, (variant, *where, response.text[:500])
        if response.status_code >= 400 and response.content:
            assert set(response.json()["error"]) >= {"status", "code", "message"}, where

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def run(case: Any) -> None:
            where = (case.method, case.formatted_path)
            check("generated", case.call(headers=ADMIN), where)
            kwargs = case.as_transport_kwargs(headers=ADMIN)
            for variant, request in _variants(kwargs, "{" in case.operation.path):
                check(variant, client.request(**request), where)

        run()
    if REPORT:
        print(f"\n{sum(seen.values())} requests:", dict(sorted(seen.items())))
    statuses = {status for _, status in seen}
    assert sum(seen.values()) >= 300
    assert {200, 404, 422} <= statuses
    assert {variant for variant, _ in seen} >= {"surrogate", "nul", "utf-16", "parameters"}
    assert seen["utf-16", 415] > 0
