"""`harvestman export --format warc` finds a crawl's bodies where the crawl archived them."""

from __future__ import annotations

import asyncio
import doctest
import sqlite3
from pathlib import Path
from typing import Any

from aiohttp import web
from typer.testing import CliRunner
from warcio.archiveiterator import ArchiveIterator

from conftest import SettingsFactory, serve
from harvestman.archive import location as archive_location
from harvestman.archive.location import open_blobs
from harvestman.cli.app import app
from harvestman.config import Settings
from harvestman.crawl.crawler import Crawler
from harvestman.store import SqlStore
from test_archive import make_s3, s3_endpoint  # noqa: F401  (the moto server fixture)


async def two_pages(request: web.Request) -> web.Response:
    if request.path == "/robots.txt":
        return web.Response(text="User-agent: *\nAllow: /\n")
    if request.path == "/":
        return web.Response(text='<title>Home</title><a href="/b">b</a>', content_type="text/html")
    if request.path == "/b":
        return web.Response(
            text="<title>B</title><p>The second page.</p>", content_type="text/html"
        )
    raise web.HTTPNotFound()


def crawl(settings: Settings) -> str:
    """Crawl the two pages into ``settings``' store; the site's base URL (it stops after)."""

    async def run() -> str:
        async with serve(two_pages) as port, SqlStore(settings.database_url) as store:
            await store.upgrade()
            await Crawler(settings, store, [f"http://127.0.0.1:{port}/"]).run()
        return f"http://127.0.0.1:{port}"

    return asyncio.run(run())


def export_warc(database_url: str, out: Path, **env: str) -> tuple[int, str]:
    result = CliRunner(env=env).invoke(
        app, ["export", "--format", "warc", "-o", str(out), "--database-url", database_url]
    )
    return result.exit_code, " ".join(result.stderr.split())


def responses(path: Path) -> set[str]:
    with path.open("rb") as stream:
        return {
            record.rec_headers.get_header("WARC-Target-URI")
            for record in ArchiveIterator(stream)
            if record.rec_type == "response"
        }


def test_the_location_helpers_examples_hold() -> None:
    assert doctest.testmod(archive_location).failed == 0


def test_the_export_reads_the_archive_the_crawl_recorded_and_fails_on_lost_bodies(
    make_settings: SettingsFactory, tmp_path: Path, monkeypatch: Any
) -> None:
    # The crawl archives into ./bodies of its working directory; the export runs elsewhere
    # with the default settings, whose ./harvestman-archive holds nothing.
    settings = make_settings(archive_enabled=True, archive_dir="bodies", discovery_sitemaps=False)
    base = crawl(settings)
    bodies = (tmp_path / "bodies").resolve()
    with sqlite3.connect(tmp_path / "crawl.db") as conn:
        assert conn.execute("SELECT archive_location FROM crawls").fetchall() == [(str(bodies),)]
        keys = dict(conn.execute("SELECT url, archive_path FROM crawled_pages"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    out = tmp_path / "all.warc.gz"
    code, err = export_warc(settings.database_url, out)
    assert (code, err) == (0, "exported 2 pages")
    assert responses(out) == {f"{base}/", f"{base}/b"}

    (bodies / keys[f"{base}/b"]).unlink()
    out = tmp_path / "some.warc.gz"
    code, err = export_warc(settings.database_url, out)
    assert (code, err) == (
        1,
        "skipped 0 pages without an archived body, 1 lost exported 1 pages "
        f"error: 1 archived bodies are not in {bodies}",
    )
    assert responses(out) == {f"{base}/"}
    assert not (elsewhere / "harvestman-archive").exists()


def test_a_crawl_without_a_recorded_location_exports_from_the_settings_archive(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings = make_settings(archive_enabled=True, archive_dir="bodies", discovery_sitemaps=False)
    crawl(settings)
    with sqlite3.connect(tmp_path / "crawl.db") as conn:  # as a crawl before migration 0012
        conn.execute("UPDATE crawls SET archive_location = NULL")

    code, err = export_warc(settings.database_url, tmp_path / "a.warc")
    default = Path("harvestman-archive").resolve()
    assert (code, err) == (
        1,
        "skipped 0 pages without an archived body, 2 lost exported 0 pages "
        f"error: 2 archived bodies are not in {default}",
    )
    code, err = export_warc(
        settings.database_url, tmp_path / "b.warc", HARVESTMAN_ARCHIVE_DIR=str(tmp_path / "bodies")
    )
    assert (code, err) == (0, "exported 2 pages")


def test_a_bucket_location_reads_what_the_crawl_wrote_under_its_prefix(
    s3_endpoint: str,  # noqa: F811
) -> None:
    written = make_s3(s3_endpoint, "located", prefix="/crawl-9/")
    written._client.create_bucket(Bucket="located")
    written.write("ab/cd/key.html.gz", b"body", "text/html")
    reader = Settings(
        archive_s3_endpoint_url=s3_endpoint, archive_s3_region="us-east-1",
        archive_s3_access_key_id="test", archive_s3_secret_access_key="test",
    )  # fmt: skip
    crawler = reader.model_copy(update={"archive_s3_bucket": "located",
                                        "archive_s3_prefix": "/crawl-9/"})  # fmt: skip

    location = archive_location.archive_location(crawler)
    assert location == "s3://located/crawl-9"
    assert open_blobs(location, reader).read("ab/cd/key.html.gz") == b"body"


def test_a_row_with_a_key_outside_the_archive_is_reported_not_a_crash(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings = make_settings(archive_enabled=True, archive_dir="bodies", discovery_sitemaps=False)
    crawl(settings)
    (tmp_path / "secret").write_text("not a body")
    with sqlite3.connect(tmp_path / "crawl.db") as conn:  # a row from a crafted archive
        conn.execute("UPDATE crawled_pages SET archive_path = '../secret' WHERE url LIKE '%/b'")

    code, err = export_warc(settings.database_url, tmp_path / "a.warc")

    assert (code, err) == (
        1,
        "skipped 0 pages without an archived body, 0 lost, 1 with a key outside the archive "
        "exported 1 pages error: 1 pages name a key outside the archive",
    )
    assert (tmp_path / "secret").read_text() == "not a body"
