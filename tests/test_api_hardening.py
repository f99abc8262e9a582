"""The API's defences, in process over real SQLite and PostgreSQL stores: bounded bodies,
callers known before parsing, sign-in, store errors by cause, source ids, frontier counts."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DataError, IntegrityError, OperationalError, ProgrammingError
from typer.testing import CliRunner

from apiclient import Api, running_api
from conftest import SettingsFactory
from harvestman.api.auth import resolve_secret
from harvestman.api.errors import translate
from harvestman.api.passwords import hash_password
from harvestman.errors import ConfigError, StoreError

PASSWORD = "correct horse battery"


@pytest.fixture(params=["sqlite", "postgres"])
async def api(request: pytest.FixtureRequest, make_settings: SettingsFactory) -> AsyncIterator[Api]:
    overrides = {}
    if request.param == "postgres":
        overrides["database_url"] = request.getfixturevalue("pg_schema_url")
    async with running_api(make_settings(**overrides), login_failures=3) as running:
        yield running


@pytest.fixture
async def sqlite_api(make_settings: SettingsFactory) -> AsyncIterator[Api]:
    async with running_api(make_settings(), scheduler=True, max_body_bytes=4096) as running:
        yield running


def _nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth - 1):  # the outermost metadata object is one level too
        value = {"d": value}
    return value


async def _source(api: Api, name: str = "s") -> int:
    response = await api.post(
        "/api/v1/sources", json={"name": name, "start_urls": ["http://127.0.0.1:9/"]}
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


# -- bodies -------------------------------------------------------------------------------------


async def test_a_body_over_the_limit_is_a_413_declared_or_streamed(sqlite_api: Api) -> None:
    big = b'{"name": "' + b"x" * 5000 + b'"}'
    declared = await sqlite_api.client.post("/api/v1/sources", content=big)
    assert declared.status_code == 413
    assert declared.json()["error"] == {
        "status": 413,
        "code": "body_too_large",
        "message": "the request body is larger than 4096 bytes",
        "details": {"max_bytes": 4096},
    }
    sent: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):
            sent.append(1024)
            yield b" " * 1024

    streamed = await sqlite_api.client.post(
        "/api/v1/sources", content=chunks(), headers=sqlite_api.admin
    )
    assert streamed.status_code == 413
    assert sum(sent) < 10 * 1024  # reading stopped at the limit, not at the end
    assert (await sqlite_api.client.get("/api/v1/sources", headers=sqlite_api.user)).json()[
        "total"
    ] == 0


async def test_a_body_within_the_limit_is_served(sqlite_api: Api) -> None:
    assert await _source(sqlite_api) == 1


async def test_json_nested_deeper_than_the_limit_is_refused_and_lists_keep_working(
    api: Api,
) -> None:
    source_id = await _source(api)
    job = {"source_id": source_id, "url": "http://127.0.0.1:9/"}
    deep = await api.post("/api/v1/jobs", json={**job, "metadata": _nested(300)})
    assert deep.status_code == 422
    assert deep.json()["error"]["code"] == "json_too_deep"
    kept = await api.post("/api/v1/jobs", json={**job, "metadata": _nested(30)})
    assert kept.status_code == 201, kept.text
    listed = await api.get("/api/v1/jobs")
    assert listed.status_code == 200
    assert listed.json()["total"] == 1


async def test_a_caller_is_refused_before_the_body_is_parsed(
    make_settings: SettingsFactory,
) -> None:
    async with running_api(make_settings(), rate_anonymous=2) as api:
        broken = b"{not json"
        answers = [
            (await api.client.post("/api/v1/sources", content=broken)).status_code for _ in range(3)
        ]
        # Two anonymous requests are counted (then 401: an admin route); the third is refused
        # before its body is read, let alone parsed.
        assert answers == [401, 401, 429]
        invalid = {"Authorization": "Bearer not-a-token"}
        assert (
            await api.client.post("/api/v1/sources", content=broken, headers=invalid)
        ).status_code == 429


async def test_invalid_tokens_are_rate_limited_like_anonymous_callers(
    make_settings: SettingsFactory,
) -> None:
    async with running_api(make_settings(), rate_anonymous=3) as api:
        invalid = {"Authorization": "Bearer not-a-token"}
        answers = [
            (await api.client.get("/api/v1/jobs", headers=invalid)).status_code for _ in range(4)
        ]
        assert answers == [401, 401, 401, 429]
        assert (await api.client.get("/api/stats")).status_code == 429  # the same client
        assert (await api.get("/api/v1/jobs")).status_code == 200  # a valid token: its own


# -- store errors by cause ----------------------------------------------------------------------


async def test_a_nul_byte_in_a_parameter_is_the_callers_error(api: Api) -> None:
    response = await api.client.get("/api/stats", params={"crawl": "a\x00b"})
    assert (response.status_code, response.json()["error"]["code"]) == (422, "invalid_text")
    sources = await api.get("/api/v1/sources", params={"name": "\x00"})
    assert sources.status_code == 422


def _store_error(cause: Exception) -> StoreError:
    try:
        raise StoreError("failed") from cause
    except StoreError as exc:
        return exc


@pytest.mark.parametrize(
    ("cause", "status", "code"),
    [
        (DataError("SELECT", {}, ValueError("NUL")), 422, "invalid_value"),
        (IntegrityError("INSERT", {}, ValueError("unique")), 409, "conflict"),
        (OperationalError("SELECT", {}, ConnectionError("gone")), 503, "store_unavailable"),
        (ProgrammingError("SELECT", {}, ValueError("no column")), 500, "internal_error"),
    ],
)
def test_store_errors_are_answered_by_their_cause(cause: Exception, status: int, code: str) -> None:
    error = translate(_store_error(cause))
    assert (error.status, error.code) == (status, code)


async def test_a_5xx_is_logged_with_its_traceback(
    sqlite_api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    with sqlite_api.store.engine.begin() as conn:
        conn.execute(text("DROP TABLE sources"))
    with caplog.at_level(logging.ERROR, logger="harvestman.api.errors"):
        response = await sqlite_api.get("/api/v1/sources")
    assert response.status_code == 503
    (record,) = [r for r in caplog.records if r.name == "harvestman.api.errors"]
    assert record.getMessage() == "GET /api/v1/sources failed with 503"
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], StoreError)


# -- sign-in ------------------------------------------------------------------------------------


async def _login(api: Api, name: str, password: str) -> tuple[int, dict]:
    response = await api.client.post("/api/auth/login", json={"name": name, "password": password})
    return response.status_code, response.json()


async def test_a_user_signs_in_and_the_token_carries_their_role(api: Api) -> None:
    store = api.store
    store.create_user("ada", hash_password(PASSWORD), "admin")
    store.create_user("bob", hash_password(PASSWORD), "user")
    status, body = await _login(api, "ada", PASSWORD)
    assert status == 200
    assert (body["user"], body["role"], body["token_type"], body["expires_in"]) == (
        "ada", "admin", "bearer", 86400,
    )  # fmt: skip
    ada = {"Authorization": f"Bearer {body['token']}"}
    whoami = await api.client.get("/api/v1/auth/whoami", headers=ada)
    assert whoami.json() == {"role": "admin", "subject": "ada"}
    assert (await api.client.post("/api/frontier/recover", headers=ada)).status_code == 200
    status, body = await _login(api, "bob", PASSWORD)
    bob = {"Authorization": f"Bearer {body['token']}"}
    assert (await api.client.post("/api/frontier/recover", headers=bob)).status_code == 403
    assert (await api.client.get("/api/v1/jobs", headers=bob)).status_code == 200


async def test_a_disabled_user_or_a_changed_password_ends_their_tokens(api: Api) -> None:
    store = api.store
    store.create_user("ada", hash_password(PASSWORD), "user")
    _, body = await _login(api, "ada", PASSWORD)
    ada = {"Authorization": f"Bearer {body['token']}"}
    assert (await api.client.get("/api/v1/jobs", headers=ada)).status_code == 200
    store.set_user_password("ada", hash_password("another password"))
    assert (await api.client.get("/api/v1/jobs", headers=ada)).status_code == 401
    assert (await _login(api, "ada", PASSWORD))[0] == 401
    status, body = await _login(api, "ada", "another password")
    assert status == 200
    renewed = {"Authorization": f"Bearer {body['token']}"}
    assert (await api.client.get("/api/v1/jobs", headers=renewed)).status_code == 200
    store.set_user_enabled("ada", False)
    assert (await api.client.get("/api/v1/jobs", headers=renewed)).status_code == 401
    assert (await _login(api, "ada", "another password"))[0] == 401


async def test_failed_sign_ins_are_limited_per_name_and_per_client(api: Api) -> None:
    api.store.create_user("ada", hash_password(PASSWORD), "user")
    answers = [(await _login(api, "ada", "wrong password"))[0] for _ in range(3)]
    assert answers == [401, 401, 401]
    status, body = await _login(api, "ada", PASSWORD)  # right, but the name is held
    assert status == 429
    assert body["error"]["details"]["retry_after"] >= 1
    # The client made the three failures too: another name from it is held as well.
    api.store.create_user("bob", hash_password(PASSWORD), "user")
    assert (await _login(api, "bob", PASSWORD))[0] == 429
    assert (await _login(api, "nobody", "x" * 12))[0] == 429


async def test_an_unknown_name_and_a_wrong_password_look_alike(api: Api) -> None:
    api.store.create_user("ada", hash_password(PASSWORD), "user")
    unknown = await _login(api, "nobody", PASSWORD)
    wrong = await _login(api, "ada", "wrong password")
    assert unknown == wrong
    assert unknown[0] == 401


def test_user_commands_manage_the_users_table(tmp_path: Path) -> None:
    from harvestman.cli.app import app

    url = f"sqlite:///{tmp_path / 'users.db'}"
    runner = CliRunner()

    def run(*args: str, stdin: str | None = None) -> tuple[int, str]:
        result = runner.invoke(app, ["user", *args, "--database-url", url], input=stdin)
        return result.exit_code, result.output

    assert run("create", "ada", "--role", "admin", stdin=f"{PASSWORD}\n{PASSWORD}\n")[0] == 0
    assert run("create", "bob", "--password-stdin", stdin=f"{PASSWORD}\n") == (
        0,
        "created user bob\n",
    )
    assert run("create", "bob", "--password-stdin", stdin=f"{PASSWORD}\n")[0] == 2
    assert run("create", "eve", "--password-stdin", stdin="short\n")[0] == 2
    assert run("create", "eve", "--role", "root", "--password-stdin", stdin=f"{PASSWORD}\n")[0] == 2
    assert run("list") == (0, "ada\tadmin\tenabled\nbob\tuser\tenabled\n")
    assert run("disable", "bob") == (0, "disabled bob\n")
    assert run("disable", "nobody")[0] == 1
    assert run("set-password", "ada", "--password-stdin", stdin="a new password\n")[0] == 0
    assert run("list") == (0, "ada\tadmin\tenabled\nbob\tuser\tdisabled\n")


# -- secrets, headers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("secret", "rule"),
    [
        (" " * 32, "different characters"),
        ("ab" * 20, "different characters"),
        ("password" * 5, "different characters"),
        ("0123456789" * 3, "shorter than"),
        ("0123456789abcdef0123456789abcdef", "a repeated block"),
        ("abcdefghijklmnopqrstuvwxyz012345", "a sequence"),
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "a sequence"),
        ("qwertyuiopasdfghjklzxcvbnm123456", "guessable"),
        ("1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik,", "guessable"),
        ("poiuytrewq;lkjhgfdsa/.,mnbvcxz147", "a keyboard walk"),
        ("your-256-bit-secret-your-256-bit", "a published example"),
        ("my-your-512-bit-secret-is-very-long-indeed", "a published example"),
        ("harvestman-secret-harvestman-secret", "a repeated block"),
    ],
)
def test_guessable_secrets_are_refused_by_a_named_rule(secret: str, rule: str) -> None:
    with pytest.raises(ConfigError, match=rule):
        resolve_secret(secret, dev=False)


@pytest.mark.parametrize(
    "secret",
    [
        "9f86d081884c7d659a2feaa0c55ad015",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "OtmgdrY0-9rwnAb499Lx-T6eVDcm7lXQTha1d6yu--Q",
    ],
)
def test_a_random_secret_is_accepted(secret: str) -> None:
    assert resolve_secret(secret, dev=False) == secret


@pytest.mark.parametrize("path", ["/", "/dashboard/index.html", "/dashboard/js/main.js"])
async def test_the_dashboard_has_its_security_headers_on_every_path(
    sqlite_api: Api, path: str
) -> None:
    response = await sqlite_api.client.get(path)
    assert response.status_code == 200
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"


# -- sources and the frontier -------------------------------------------------------------------


async def test_a_deleted_sources_id_is_never_given_again(api: Api) -> None:
    first = await _source(api, "a")
    second = await _source(api, "b")
    assert (
        await api.client.delete(f"/api/v1/sources/{second}", headers=api.admin)
    ).status_code == 204
    third = await _source(api, "c")
    assert (first, second, third) == (1, 2, 3)


async def test_a_source_whose_job_runs_cannot_be_deleted(sqlite_api: Api) -> None:
    api = sqlite_api
    source_id = await _source(api)
    job = await api.post(
        "/api/v1/jobs", json={"source_id": source_id, "url": "http://127.0.0.1:9/"}
    )
    job_id = job.json()["id"]
    # (the source's own recurring job is due too; one execution per source: take this one)
    claims = await api.jobs.locks.claim_due("test", 10, only=[job_id])
    assert job_id in {claim.execution.job_id for claim in claims}
    refused = await api.client.delete(f"/api/v1/sources/{source_id}", headers=api.admin)
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert (error["code"], error["details"]["state"], error["details"]["action"]) == (
        "invalid_state", "running", "delete",
    )  # fmt: skip
    assert (await api.get(f"/api/v1/sources/{source_id}")).status_code == 200


async def test_frontier_add_counts_only_new_urls(api: Api) -> None:
    async def add(*urls: str) -> int:
        response = await api.post("/api/frontier/add", json={"urls": list(urls)})
        assert response.status_code == 200, response.text
        return int(response.json()["added"])

    assert await add("http://127.0.0.1:9/a", "http://127.0.0.1:9/b") == 2
    assert await add("http://127.0.0.1:9/a", "http://127.0.0.1:9/b", "http://127.0.0.1:9/c") == 1
    assert await add("http://127.0.0.1:9/c") == 0
