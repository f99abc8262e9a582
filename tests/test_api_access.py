"""Who may call what: bearer tokens, roles on every route (a table), rate limits, secrets."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import jwt
import pytest

from apiclient import SECRET, Api, bearer, running_api
from conftest import SettingsFactory
from harvestman.api.app import create_app
from harvestman.api.auth import Role, VerifiedTokens, create_token, resolve_secret
from harvestman.api.errors import ApiError
from harvestman.api.ratelimit import MemoryLimiter, RedisLimiter
from harvestman.api.settings import DEV_SECRET, ApiSettings
from harvestman.errors import ConfigError

A, U, N = Role.ADMIN, Role.USER, Role.ANONYMOUS

# Every route with the least role that may call it.
ROUTES: list[tuple[str, str, Role]] = [
    ("GET", "/health", N),
    ("GET", "/api/stats", N),
    ("GET", "/api/stats/timeseries", U),
    ("GET", "/api/crawls", U),
    ("GET", "/api/v1/sources", U),
    ("POST", "/api/v1/sources", A),
    ("GET", "/api/v1/sources/{source_id}", U),
    ("PUT", "/api/v1/sources/{source_id}", A),
    ("DELETE", "/api/v1/sources/{source_id}", A),
    ("GET", "/api/v1/jobs", U),
    ("POST", "/api/v1/jobs", A),
    ("GET", "/api/v1/jobs/status-counts", U),
    ("GET", "/api/v1/jobs/{job_id}", U),
    ("PUT", "/api/v1/jobs/{job_id}", A),
    ("DELETE", "/api/v1/jobs/{job_id}", A),
    ("POST", "/api/v1/jobs/{job_id}/pause", A),
    ("POST", "/api/v1/jobs/{job_id}/resume", A),
    ("POST", "/api/v1/jobs/{job_id}/cancel", A),
    ("POST", "/api/v1/jobs/{job_id}/retry", A),
    ("POST", "/api/v2/jobs/{job_id}/force-run", A),
    ("GET", "/api/v1/jobs/{job_id}/stats", U),
    ("POST", "/api/v1/admin/sync-enabled-sources", A),
    ("GET", "/api/v1/jobs/{job_id}/executions", U),
    ("GET", "/api/v1/executions/{execution_id}", U),
    ("GET", "/api/v1/executions/{execution_id}/progress", U),
    ("GET", "/api/v1/jobs/{job_id}/logs", U),
    ("GET", "/api/v1/jobs/{job_id}/logs/stream", U),
    ("GET", "/api/v1/scheduler/metrics", U),
    ("GET", "/api/v1/scheduler/distribution", U),
    ("POST", "/api/v1/scheduler/rebalance/preview", A),
    ("POST", "/api/v1/scheduler/rebalance", A),
    ("GET", "/api/frontier/stats", U),
    ("GET", "/api/frontier/urls", U),
    ("POST", "/api/frontier/add", A),
    ("POST", "/api/frontier/seed", A),
    ("POST", "/api/frontier/recover", A),
    ("DELETE", "/api/frontier", A),
    ("GET", "/api/pages", U),
    ("GET", "/api/pages/export", U),
    ("GET", "/api/pages/{page_id}", U),
    ("GET", "/api/pages/{page_id}/body", U),
    ("DELETE", "/api/admin/pages", A),
    ("GET", "/api/admin/storage", A),
    ("GET", "/api/domains", U),
    ("GET", "/api/domains/{domain}/robots", U),
    ("GET", "/api/search", U),
    ("GET", "/api/products", U),
    ("GET", "/api/products/export", U),
    ("GET", "/api/products/{product_id}", U),
    ("GET", "/api/products/{product_id}/history", U),
    ("GET", "/api/parsers/stats", U),
    ("POST", "/api/admin/domains/{domain}/reset", A),
    ("GET", "/api/domains/{domain}/settings", A),
    ("PUT", "/api/domains/{domain}/settings", A),
    ("GET", "/api/admin/proxies", A),
    ("GET", "/api/errors", U),
    ("GET", "/api/errors/summary", U),
    ("GET", "/api/dead-letter", U),
    ("GET", "/api/workers", U),
    ("POST", "/api/admin/dead-letter/requeue", A),
    ("GET", "/sse/crawler/events", U),
    ("GET", "/sse/health/events", U),
    ("GET", "/sse/metrics/events", U),
    ("GET", "/metrics", U),
    ("GET", "/api/v1/auth/whoami", N),
    ("GET", "/api/v1/frontier", U),
    ("POST", "/api/v1/frontier", A),
    ("DELETE", "/api/v1/frontier", A),
    ("GET", "/api/v1/frontier/{url_id}", U),
    ("GET", "/api/v1/discovered-links", U),
    ("GET", "/api/v1/discovered-links/{url_id}", U),
    ("GET", "/api/v1/jobs/{job_id}/logs/stream/v2", U),
    ("GET", "/api/parsers/rollouts", U),
    ("PUT", "/api/admin/parsers/{parser}/rollout", A),
    ("POST", "/api/admin/parsers/{parser}/promote", A),
    ("POST", "/api/admin/parsers/{parser}/rollback", A),
    ("POST", "/api/auth/login", N),
]


@pytest.fixture
async def api(make_settings: SettingsFactory) -> AsyncIterator[Api]:
    async with running_api(make_settings()) as running:
        yield running


def test_the_table_covers_every_route(make_settings: SettingsFactory) -> None:
    from apiclient import api_settings

    app = create_app(
        make_settings(),
        sql_store=None,
        job_store=None,
        api_settings=api_settings(),  # type: ignore[arg-type]
    )
    served = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    }
    assert served == {(method, path) for method, path, _ in ROUTES}


def _expected(caller: Role, needed: Role) -> int | None:
    """401 or 403 when refused; None when let through (any answer but those)."""
    if caller.rank >= needed.rank:
        return None
    return 401 if caller is Role.ANONYMOUS else 403


@pytest.mark.parametrize(("method", "path", "needed"), ROUTES)
async def test_roles_on_every_route(api: Api, method: str, path: str, needed: Role) -> None:
    url = path.format(
        source_id=1,
        job_id=1,
        execution_id=1,
        domain="example.com",
        url_id=1,
        parser="acme",
        product_id=1,
        page_id=1,
    )
    params = {"count": 1} if url.startswith("/sse/") else {}
    for caller in (Role.ANONYMOUS, Role.USER, Role.ADMIN):
        headers = {} if caller is Role.ANONYMOUS else bearer(caller)
        response = await api.client.request(method, url, headers=headers, params=params)
        expected = _expected(caller, needed)
        if expected is None:
            assert response.status_code not in (401, 403, 500), (caller, response.text)
        else:
            assert response.status_code == expected, (caller, response.text)
            assert response.json()["error"]["status"] == expected
            if expected == 401:
                assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "header",
    [
        f"Bearer {create_token('another-secret-0123456789abcdef0123', Role.ADMIN)}",
        f"Bearer {create_token(SECRET, Role.ADMIN, days=-1)}",
        "Bearer not-a-token",
        "Basic dXNlcjpwYXNz",
        "Bearer "
        + jwt.encode(
            {"sub": "x", "role": "root", "iss": "harvestman", "exp": 2**40},
            SECRET,
            algorithm="HS256",
        ),
        "Bearer "
        + jwt.encode(
            {"sub": "x", "role": "admin", "iss": "harvestman", "exp": 2**40},
            SECRET + "-" * 30,
            algorithm="HS512",
        ),
    ],
    ids=["other-secret", "expired", "garbage", "basic", "unknown-role", "other-algorithm"],
)
async def test_an_invalid_token_is_a_401_even_where_anonymous_may_read(
    api: Api, header: str
) -> None:
    response = await api.client.get("/health", headers={"Authorization": header})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


def test_verified_tokens_are_kept_until_they_expire_and_no_longer() -> None:
    now = time.time()
    clock = [now]
    tokens = VerifiedTokens(SECRET, max_entries=2, clock=lambda: clock[0])
    first, second, third = (create_token(SECRET, Role.USER, subject=s, days=1) for s in "abc")
    assert [tokens.principal(t).subject for t in (first, second, third)] == ["a", "b", "c"]
    for _ in range(2):  # an invalid token is checked every time
        with pytest.raises(ApiError):
            tokens.principal(first[:-4])
    tokens.secret = "another-secret-" + "x" * 32  # from here on, only kept tokens pass
    assert (tokens.principal(third).subject, tokens.principal(second).role) == ("c", Role.USER)
    with pytest.raises(ApiError):  # the least recently used went beyond max_entries
        tokens.principal(first)
    clock[0] = now + 86400 + 1  # past their expiry: verified again, and refused
    with pytest.raises(ApiError):
        tokens.principal(third)


def test_the_secret_must_be_set_outside_dev_mode(make_settings: SettingsFactory) -> None:
    for secret in ("", "changeme", "secret", "short-but-not-default", DEV_SECRET):
        with pytest.raises(ConfigError):
            resolve_secret(secret, dev=False)
    assert resolve_secret("", dev=True) == DEV_SECRET
    assert resolve_secret(SECRET, dev=False) == SECRET
    with pytest.raises(ConfigError):
        create_app(
            make_settings(),
            sql_store=None,  # type: ignore[arg-type]
            job_store=None,  # type: ignore[arg-type]
            api_settings=ApiSettings(jwt_secret="changeme"),
        )


async def test_rate_limits_per_role_with_retry_after(make_settings: SettingsFactory) -> None:
    limits = {"rate_anonymous": 3, "rate_user": 5, "rate_admin": 7, "rate_seed": 2}
    async with running_api(make_settings(), **limits) as api:
        anonymous = [(await api.client.get("/health")).status_code for _ in range(4)]
        assert anonymous == [200, 200, 200, 429]
        refused = await api.client.get("/api/stats")
        assert refused.status_code == 429
        assert 59 <= int(refused.headers["retry-after"]) <= 60
        assert refused.json()["error"]["details"]["limit"] == 3
        # Each token subject counts on its own.
        users = [(await api.get("/api/v1/jobs")).status_code for _ in range(6)]
        assert users == [200] * 5 + [429]
        other = bearer(Role.USER, subject="someone-else")
        assert (await api.client.get("/api/v1/jobs", headers=other)).status_code == 200
        seeds = [
            (
                await api.post("/api/frontier/seed", json={"urls": ["http://127.0.0.1:9/"]})
            ).status_code
            for _ in range(3)
        ]
        assert seeds == [200, 200, 429]
        assert (await api.post("/api/frontier/recover")).status_code == 200


async def test_memory_window_slides() -> None:
    now = [1000.0]
    limiter = MemoryLimiter(60.0, clock=lambda: now[0])
    for _ in range(2):
        await limiter.check("k", 2)
    with pytest.raises(ApiError) as refused:
        await limiter.check("k", 2)
    assert (refused.value.status, refused.value.headers) == (429, {"Retry-After": "60"})
    now[0] += 30
    with pytest.raises(ApiError) as again:
        await limiter.check("k", 2)
    assert again.value.headers == {"Retry-After": "30"}
    now[0] += 30.5
    await limiter.check("k", 2)  # the first two left the window
    await limiter.check("other", 2)


async def test_redis_window_is_shared_by_instances(redis_url: str) -> None:
    import uuid

    prefix = f"test-{uuid.uuid4().hex[:8]}"
    now = [5000.0]
    first = RedisLimiter(redis_url, 60.0, prefix=prefix, clock=lambda: now[0])
    second = RedisLimiter(redis_url, 60.0, prefix=prefix, clock=lambda: now[0])
    try:
        await first.check("client", 3)
        await second.check("client", 3)
        await first.check("client", 3)
        with pytest.raises(ApiError) as refused:
            await second.check("client", 3)
        assert refused.value.headers == {"Retry-After": "60"}
        now[0] += 45
        with pytest.raises(ApiError) as again:
            await first.check("client", 3)
        assert again.value.headers == {"Retry-After": "15"}
        now[0] += 16
        await second.check("client", 3)
    finally:
        await first.close()
        await second.close()


async def test_redis_away_falls_back_to_memory() -> None:
    limiter = RedisLimiter("redis://127.0.0.1:1/0", 60.0)
    try:
        await limiter.check("k", 1)
        with pytest.raises(ApiError):
            await limiter.check("k", 1)
    finally:
        await limiter.close()
