"""Proxy passwords encrypted at rest: the store never holds one in clear, it is masked wherever
a proxy URL is shown (API, CLI, stored pages), ``admin rotate-key`` re-encrypts it, and a proxy
with a password is refused without ``proxy_key``; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from sqlalchemy import select

from apiclient import running_api
from conftest import SettingsFactory, serve
from harvestman.config import load_settings
from harvestman.credentials import ProxyCipher
from harvestman.errors import ConfigError, CredentialsError
from harvestman.store import dialect
from harvestman.store.schema import crawled_pages, proxies
from proxyservers import HttpProxy
from storerows import store_url
from support.cli import run_cli
from support.crawling import crawl

PASSWORD = "hunter2-Zq8"
PARAGRAPH = (
    "<p>Every item in this shop is made by hand in a small workshop by the river, tested for a"
    " week before it is sold, and sent out in plain recycled paper with a note from its maker.</p>"
)


@pytest.fixture
async def target() -> AsyncIterator[str]:
    async def handle(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            raise web.HTTPNotFound()
        html = f"<html><head><title>t</title></head><body>{PARAGRAPH}</body></html>"
        return web.Response(text=html, content_type="text/html")

    async with serve(handle) as port:
        yield f"http://127.0.0.1:{port}/"


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_url(request, tmp_path)


def stored_text(database_url: str, tmp_path: Path) -> bytes:
    """Every byte the store holds of the proxies and pages: the SQLite files whole (WAL
    included), or PostgreSQL's rows as text."""
    if database_url.startswith("sqlite"):
        return b"".join(p.read_bytes() for p in sorted(tmp_path.glob("store.db*")))
    engine = dialect.make_engine(database_url)
    try:
        with engine.connect() as conn:
            found = [repr(row) for t in (proxies, crawled_pages) for row in conn.execute(select(t))]
    finally:
        engine.dispose()
    return "\n".join(found).encode()


def proxy_rows(database_url: str) -> list[dict[str, object]]:
    engine = dialect.make_engine(database_url)
    try:
        with engine.connect() as conn:
            return [dict(row) for row in conn.execute(select(proxies)).mappings()]
    finally:
        engine.dispose()


def test_a_proxy_password_without_a_key_is_refused_at_start() -> None:
    with pytest.raises(
        ConfigError, match=r"'http://u:\*\*\*@127.0.0.1:3128' carries a password: set proxy_key"
    ):
        load_settings(proxy_urls="http://u:secret@127.0.0.1:3128")
    with pytest.raises(ConfigError, match="proxy_key is not a Fernet key"):
        load_settings(proxy_urls="http://u:secret@127.0.0.1:3128", proxy_key="not-a-key")
    # No password, no key needed.
    assert load_settings(proxy_urls="http://u@127.0.0.1:3128").proxy_key == ""


async def test_the_crawl_command_refuses_a_proxy_password_without_a_key(tmp_path: Path) -> None:
    status, _, err = await run_cli(
        "crawl", "http://127.0.0.1:9/", "--db", str(tmp_path / "x.db"),
        env={"HARVESTMAN_PROXY_URLS": f"http://u:{PASSWORD}@127.0.0.1:3128"},
    )  # fmt: skip
    assert status == 2
    assert "carries a password: set proxy_key" in err
    assert PASSWORD not in err
    assert not (tmp_path / "x.db").exists()


async def test_stored_proxies_hold_no_password_and_rotate_key_re_encrypts_them(
    database_url: str, make_settings: SettingsFactory, target: str, tmp_path: Path
) -> None:
    old, new = ProxyCipher.generate_key(), ProxyCipher.generate_key()
    async with HttpProxy() as proxy:
        with_password = proxy.url.replace("http://", f"http://shopper:{PASSWORD}@")
        masked = proxy.url.replace("http://", "http://shopper:***@")
        settings = make_settings(
            database_url=database_url,
            proxy_urls=[with_password],
            proxy_key=old,
            proxy_domain_rate=1000.0,
            discovery_sitemaps=False,
        )
        await crawl(settings, target)
        assert proxy.proxy_auth[-1] is not None  # the password reached the proxy

        # At rest: the masked URL and a token; no byte of the password anywhere.
        assert PASSWORD.encode() not in stored_text(database_url, tmp_path)
        [row] = proxy_rows(database_url)
        assert (row["url"], row["successes"]) == (masked, 2)  # robots.txt, then the page
        token = str(row["secret"])
        assert ProxyCipher(old).decrypt(token) == PASSWORD

        # Shown masked: the CLI and the API.
        db_args = ["--database-url", database_url]
        status, out, err = await run_cli("admin", "proxies", "--json", *db_args)
        assert status == 0, err
        assert [r["url"] for r in json.loads(out)] == [masked]
        assert PASSWORD not in out
        async with running_api(make_settings(database_url=database_url)) as api:
            listed = await api.client.get("/api/admin/proxies", headers=api.admin)
            assert (await api.client.get("/api/admin/proxies", headers=api.user)).status_code == 403
        assert [r["url"] for r in listed.json()] == [masked]
        assert "secret" not in listed.json()[0]
        assert PASSWORD not in listed.text

        # A wrong --old key changes nothing.
        status, _, err = await run_cli("admin", "rotate-key", "--old", new, "--new", old, *db_args)
        assert status == 2
        assert "cannot be decrypted with this key" in err
        assert proxy_rows(database_url)[0]["secret"] == token

        keys = {"HARVESTMAN_PROXY_KEY": old, "HARVESTMAN_NEW_PROXY_KEY": new}
        status, _, err = await run_cli("admin", "rotate-key", *db_args, env=keys)
        assert status == 0, err
        assert "re-encrypted 1 proxy password(s)" in err
        rotated = str(proxy_rows(database_url)[0]["secret"])
        assert ProxyCipher(new).decrypt(rotated) == PASSWORD
        with pytest.raises(CredentialsError):
            ProxyCipher(old).decrypt(rotated)

        # The next crawl under the new key restores the proxy's health and counts on.
        await crawl(settings.model_copy(update={"proxy_key": new}), f"{target}again")
    [row] = proxy_rows(database_url)
    assert (row["url"], row["successes"]) == (masked, 3)  # the new page; robots.txt still fresh
    assert PASSWORD.encode() not in stored_text(database_url, tmp_path)


def test_the_credentials_examples_hold() -> None:
    import doctest

    from harvestman import credentials

    assert doctest.testmod(credentials).failed == 0


async def test_a_crawl_under_another_key_starts_the_proxy_health_afresh(
    database_url: str,
    make_settings: SettingsFactory,
    target: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, second = ProxyCipher.generate_key(), ProxyCipher.generate_key()
    async with HttpProxy() as proxy:
        with_password = proxy.url.replace("http://", f"http://shopper:{PASSWORD}@")
        settings = make_settings(
            database_url=database_url,
            proxy_urls=[with_password],
            proxy_key=first,
            proxy_domain_rate=1000.0,
            discovery_sitemaps=False,
        )
        await crawl(settings, target)
        with caplog.at_level("WARNING", logger="harvestman.crawl.session"):
            await crawl(settings.model_copy(update={"proxy_key": second}), f"{target}again")

    assert "health not restored: a stored proxy password cannot be decrypted" in caplog.text
    assert PASSWORD not in caplog.text
    [row] = proxy_rows(database_url)
    assert row["successes"] == 1  # the second crawl's own, under the key it stored it with
    assert ProxyCipher(second).decrypt(str(row["secret"])) == PASSWORD
