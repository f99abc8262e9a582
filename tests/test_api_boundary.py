"""What enters the API is checked once at its door, and every answer carries the security
headers: in process, over real SQLite and PostgreSQL stores.

- bodies are UTF-8 JSON only; the depth limit holds on what the decoder sees (UTF-16 once hid
  the brackets inside a string);
- a NUL, a lone surrogate or an overlong string in a body, a parameter or a cursor is a 422,
  and no error repeats the input;
- a stored row the API cannot encode is left out of its list (and logged), not a 500;
- CSP, ``frame-ancestors 'none'``, ``X-Frame-Options``, ``nosniff`` and ``Referrer-Policy`` on
  every answer: errors, the OpenAPI document and the docs pages included.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from apiclient import Api, running_api
from conftest import SettingsFactory
from harvestman.store.jobs.tables import jobs as jobs_table

SURROGATE = "\ud800"


@pytest.fixture(params=["sqlite", "postgres"])
async def api(request: pytest.FixtureRequest, make_settings: SettingsFactory) -> AsyncIterator[Api]:
    overrides = {}
    if request.param == "postgres":
        overrides["database_url"] = request.getfixturevalue("pg_schema_url")
    async with running_api(make_settings(**overrides), max_body_bytes=64 * 1024) as running:
        yield running


def _raw(value: Any) -> bytes:
    """JSON as Python writes it: lone surrogates as ``\\ud800`` escapes, as an attacker sends."""
    return json.dumps(value).encode()


async def _source(api: Api) -> int:
    response = await api.post(
        "/api/v1/sources", json={"name": "s", "start_urls": ["http://127.0.0.1:9/"]}
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def _assert_refused_without_echo(response: httpx.Response, *echoes: str) -> None:
    assert response.status_code == 422, response.text
    assert set(response.json()["error"]) >= {"status", "code", "message"}
    for echo in echoes:
        assert echo not in response.text
    assert "\\ud800" not in response.text
    assert "\\u0000" not in response.text


# -- bodies: UTF-8 JSON only, depth on what the decoder sees ------------------------------------


def _utf16_hidden_nesting(depth: int) -> bytes:
    """metadata nested ``depth`` deep in UTF-16LE, with a ``∀`` (0x22 0x22 in UTF-16LE: two
    quote bytes) in front, so a byte scanner reading UTF-8 sees the brackets inside a string."""
    text = '{"source_id": 1, "url": "http://127.0.0.1:9/", "metadata": {"k": "∀", "d": '
    text += "[" * depth + "1" + "]" * depth + "}}"
    return text.encode("utf-16-le")


async def test_a_utf16_body_is_refused_before_it_is_parsed(api: Api) -> None:
    await _source(api)
    for body in (_utf16_hidden_nesting(260), _utf16_hidden_nesting(2)):
        answer = await api.client.post(
            "/api/v1/jobs", content=body, headers={**api.admin, "Content-Type": "application/json"}
        )
        assert answer.status_code == 415, answer.text
        assert answer.json()["error"]["code"] == "unsupported_encoding"
    listed = await api.get("/api/v1/jobs")
    assert (listed.status_code, listed.json()["total"]) == (200, 0)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ('{"name": "s", "start_urls": []}'.encode("utf-32"), "application/json"),
        ('{"name": "s", "start_urls": []}'.encode("utf-16-be"), "application/json"),
        (b'{"name": "caf\xe9", "start_urls": ["http://127.0.0.1:9/"]}', "application/json"),
        (
            b'{"name": "s", "start_urls": ["http://127.0.0.1:9/"]}',
            "application/json; charset=latin-1",
        ),
    ],
)
async def test_bodies_are_utf8_json_only(api: Api, body: bytes, content_type: str) -> None:
    headers = {**api.admin, "Content-Type": content_type}
    answer = await api.client.post("/api/v1/sources", content=body, headers=headers)
    assert answer.status_code == 415, answer.text
    assert answer.json()["error"]["code"] == "unsupported_encoding"


async def test_depth_is_counted_on_the_decoded_text(api: Api) -> None:
    """Brackets after a quote hidden in an escape still nest."""
    await _source(api)
    body = '{"source_id": 1, "url": "http://127.0.0.1:9/", "metadata": {"k": "\\"", "d": '
    body += "[" * 40 + "1" + "]" * 40 + "}}"
    answer = await api.post("/api/v1/jobs", content=body.encode())
    assert (answer.status_code, answer.json()["error"]["code"]) == (422, "json_too_deep")


# -- strings: NUL, lone surrogates, length, at the door -----------------------------------------


async def test_a_lone_surrogate_in_job_metadata_is_refused_and_not_stored(api: Api) -> None:
    source_id = await _source(api)
    job = {"source_id": source_id, "url": "http://127.0.0.1:9/"}
    for metadata in ({"k": SURROGATE}, {SURROGATE: 1}, {"k": [{"x": "a" + SURROGATE}]}):
        answer = await api.post("/api/v1/jobs", content=_raw({**job, "metadata": metadata}))
        _assert_refused_without_echo(answer)
        assert answer.json()["error"]["code"] == "invalid_text"
    listed = await api.get("/api/v1/jobs")
    assert (listed.status_code, listed.json()["total"]) == (200, 0)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/sources", {"name": "s", "start_urls": ["http://127.0.0.1:9/" + SURROGATE]}),
        (
            "/api/v1/sources",
            {
                "name": "s",
                "start_urls": ["http://127.0.0.1:9/"],
                "scope": {"allow_domains": [SURROGATE]},
            },
        ),
        (
            "/api/v1/sources",
            {"name": "s", "start_urls": ["http://127.0.0.1:9/"], "scope": {"include": [SURROGATE]}},
        ),
        ("/api/frontier/add", {"urls": ["http://127.0.0.1:9/" + SURROGATE]}),
        ("/api/v1/sources", {"name": "s\x00", "start_urls": ["http://127.0.0.1:9/"]}),
        ("/api/frontier/add", {"urls": ["http://127.0.0.1:9/\x00"]}),
    ],
)
async def test_bad_text_anywhere_in_a_body_is_a_422_that_repeats_nothing(
    api: Api, path: str, body: dict[str, Any]
) -> None:
    answer = await api.post(path, content=_raw(body))
    _assert_refused_without_echo(answer, "127.0.0.1:9/")
    assert answer.json()["error"]["code"] == "invalid_text"


async def test_an_overlong_string_in_free_form_metadata_is_refused(api: Api) -> None:
    source_id = await _source(api)
    job = {"source_id": source_id, "url": "http://127.0.0.1:9/", "metadata": {"k": "x" * 20_000}}
    answer = await api.post("/api/v1/jobs", json=job)
    _assert_refused_without_echo(answer, "x" * 100)
    assert answer.json()["error"]["details"]["max_length"] == 10_000


@pytest.mark.parametrize("key", ["a" + SURROGATE, "a\x00", "a" * 20_000])
async def test_a_cursor_carrying_bad_text_is_a_422(api: Api, key: str) -> None:
    raw = json.dumps(["domains", key]).encode()
    cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    answer = await api.get("/api/domains", params={"cursor": cursor})
    _assert_refused_without_echo(answer, cursor[:50])


@pytest.mark.parametrize(
    "query",
    [
        "/api/stats?crawl=%00",
        "/api/v1/sources?name=a%00b",
        "/api/domains?host=%00",
        "/api/search?q=a%00",
    ],
)
async def test_a_nul_in_a_parameter_is_a_422_on_both_stores(api: Api, query: str) -> None:
    answer = await api.get(query)
    _assert_refused_without_echo(answer)
    assert answer.json()["error"]["code"] == "invalid_text"


async def test_an_overlong_parameter_is_a_422(api: Api) -> None:
    answer = await api.get("/api/domains", params={"host": "a" * 20_000})
    _assert_refused_without_echo(answer, "a" * 100)


async def test_a_stored_row_the_api_cannot_encode_is_left_out_of_its_list(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    """Such a row can only come from before the door was shut (or a write behind the API)."""
    source_id = await _source(api)
    for n in range(3):
        made = await api.post(
            "/api/v1/jobs", json={"source_id": source_id, "url": f"http://127.0.0.1:9/{n}"}
        )
        assert made.status_code == 201, made.text
    with api.store.engine.begin() as conn:  # as the repository writes it: json.dumps
        conn.execute(
            update(jobs_table)
            .where(jobs_table.c.id == 2)
            .values(metadata=_raw({"k": SURROGATE}).decode())
        )
    with caplog.at_level(logging.WARNING):
        listed = await api.get("/api/v1/jobs")
    assert listed.status_code == 200, listed.text
    assert [job["id"] for job in listed.json()["items"]] == [1, 3]
    assert "left out" in caplog.text
    one = await api.get("/api/v1/jobs/2")
    assert one.status_code == 200
    assert one.json()["metadata"] == {"k": "\ufffd"}


# -- headers on every answer --------------------------------------------------------------------

API_HEADERS = {
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


def _assert_secure(response: httpx.Response) -> str:
    for name, value in API_HEADERS.items():
        assert response.headers.get(name) == value, (response.url, name)
    csp = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp
    return csp


@pytest.fixture
async def small(make_settings: SettingsFactory) -> AsyncIterator[Api]:
    async with running_api(make_settings(), max_body_bytes=4096) as running:

        @running.app.get("/api/test-failure", include_in_schema=False)
        async def failure() -> None:
            raise RuntimeError("boom")

        transport = httpx.ASGITransport(app=running.app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            running.client = client
            yield running


async def test_every_answer_carries_the_security_headers(small: Api) -> None:
    client = small.client
    answers = {
        200: await client.get("/health"),
        401: await client.get("/api/v1/jobs"),
        404: await client.get("/api/v1/jobs/999", headers=small.user),
        405: await client.put("/health"),
        413: await client.post("/api/v1/sources", content=b"x" * 5000, headers=small.admin),
        422: await client.get("/api/v1/jobs?limit=0", headers=small.user),
        500: await client.get("/api/test-failure"),
    }
    for status, response in answers.items():
        assert response.status_code == status, response.text
        assert _assert_secure(response).startswith("default-src 'none'")
    assert _assert_secure(await client.get("/openapi.json")).startswith("default-src 'none'")
    assert "default-src 'self'" in _assert_secure(await client.get("/"))


async def test_the_docs_pages_may_load_what_they_need_and_nothing_more(small: Api) -> None:
    docs = await small.client.get("/docs")
    assert docs.status_code == 200
    csp = _assert_secure(docs)
    inline = re.findall(r"<script>(.*?)</script>", docs.text, re.DOTALL)
    assert len(inline) == 1
    digest = base64.b64encode(hashlib.sha256(inline[0].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp
    assert "'unsafe-inline'" not in csp.split("script-src", 1)[1].split(";", 1)[0]
    assert "'unsafe-eval'" not in csp
    redoc = await small.client.get("/redoc")
    assert redoc.status_code == 200
    redoc_csp = _assert_secure(redoc)
    assert "script-src 'self';" in redoc_csp
    # Nothing from another origin: the pages work where no CDN can be reached.
    assert "http" not in csp
    assert "http" not in redoc_csp
    for asset in re.findall(r'(?:src|href)="(/docs/static/[^"]+)"', docs.text + redoc.text):
        served = await small.client.get(asset)
        assert served.status_code == 200, asset
        assert served.headers["x-content-type-options"] == "nosniff"
    assert "/docs/static/swagger-ui-bundle.js" in docs.text
    assert "/docs/static/redoc.standalone.js" in redoc.text


async def test_nan_and_infinity_are_not_json(api: Api) -> None:
    source_id = await _source(api)
    for constant in ("NaN", "Infinity", "-Infinity"):
        job = f'"source_id": {source_id}, "url": "http://127.0.0.1:9/"'
        body = f'{{{job}, "metadata": {{"x": {constant}}}}}'
        answer = await api.post("/api/v1/jobs", content=body.encode())
        assert (answer.status_code, answer.json()["error"]["code"]) == (422, "invalid_json")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"start_urls": ["http://a.example/", "http://10.1.2.3/private-path"]}, "start_urls.1"),
        ({"start_urls": ["javascript:alert(1)//private-path"]}, "start_urls.0"),
        (
            {"scope": {"allow_domains": ["a.example", "exa mple private-path"]}},
            "scope.allow_domains.1",
        ),
        ({"scope": {"include": ["(private-path"]}}, "scope.include.0"),
    ],
)
async def test_a_refused_value_is_named_by_its_place_not_repeated(
    api: Api, body: dict[str, Any], field: str
) -> None:
    source = {"name": "s", "start_urls": ["http://a.example/"], **body}
    answer = await api.post("/api/v1/sources", json=source)
    _assert_refused_without_echo(answer, "private-path")
    assert answer.json()["error"]["details"]["field"] == field
