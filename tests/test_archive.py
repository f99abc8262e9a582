"""WARC files read back by warcio and its command-line tools; the raw archive on disk and on a
real S3-compatible server (moto) on 127.0.0.1; a WARC exported from stored pages."""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from warcio.archiveiterator import ArchiveIterator

from harvestman.archive import (
    ArchiveError,
    ArchiveMissing,
    LocalBlobs,
    RawArchive,
    S3Blobs,
    WarcWriter,
    archive_key,
    export_warc,
)
from harvestman.crawl.fetch import ACCEPT_ENCODING, DEFAULT_ACCEPT, Fetcher

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
HTML = "<!DOCTYPE html><title>Café</title><p>Grüße</p>".encode()
PNG = bytes(range(256)) * 4
REQUEST = {"User-Agent": "Harvestman-test", "Accept": "*/*", "Accept-Encoding": "gzip"}


def sha1_digest(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def read_warc(path: Path) -> list[dict[str, Any]]:
    """Every record, digests verified (warcio raises on a mismatch), as plain values."""
    records = []
    with path.open("rb") as stream:
        for record in ArchiveIterator(stream, check_digests="raise"):
            payload = record.content_stream().read()
            assert record.digest_checker.passed is not False
            http = record.http_headers
            records.append(
                {
                    "type": record.rec_type,
                    "uri": record.rec_headers.get_header("WARC-Target-URI"),
                    "id": record.rec_headers.get_header("WARC-Record-ID"),
                    "warc": dict(record.rec_headers.headers),
                    "version": record.rec_headers.protocol,
                    "status": http.get_statuscode()
                    if http and record.rec_type == "response"
                    else None,
                    "line": (f"{http.protocol} {http.statusline}" if http else None),
                    "http": list(http.headers) if http else [],
                    "payload": payload,
                }
            )
    return records


def write_three_exchanges(path: Path, *, gzip: bool) -> None:
    with WarcWriter(path, gzip=gzip, clock=lambda: T0) as warc:
        warc.write_exchange(
            "https://a.example/page?q=1",
            REQUEST,
            200,
            None,
            [
                ("Content-Type", "text/html; charset=utf-8"),
                ("Content-Encoding", "gzip"),
                ("Content-Length", "77"),
                ("Set-Cookie", "a=1"),
                ("Set-Cookie", "b=2"),
            ],
            HTML,
            T0 + 1.25,
            ip="192.0.2.7",
        )
        warc.write_exchange(
            "https://a.example/logo.png",
            REQUEST,
            200,
            "Fine",
            {"Content-Type": "image/png", "Transfer-Encoding": "chunked"},
            PNG,
            T0 + 2,
        )
        warc.write_exchange(
            "https://a.example/old",
            REQUEST,
            301,
            None,
            {"Location": "https://a.example/page?q=1", "Content-Length": "0"},
            b"",
            T0 + 3,
        )
        assert warc.exchanges == 3


@pytest.mark.parametrize("compressed", [True, False])
def test_exchanges_read_back_with_exact_records_and_verified_digests(
    tmp_path: Path, compressed: bool
) -> None:
    path = tmp_path / ("out.warc.gz" if compressed else "out.warc")
    write_three_exchanges(path, gzip=compressed)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") is compressed

    records = read_warc(path)
    assert [(r["type"], r["uri"], r["status"]) for r in records] == [
        ("warcinfo", None, None),
        ("response", "https://a.example/page?q=1", "200"),
        ("request", "https://a.example/page?q=1", None),
        ("response", "https://a.example/logo.png", "200"),
        ("request", "https://a.example/logo.png", None),
        ("response", "https://a.example/old", "301"),
        ("request", "https://a.example/old", None),
    ]
    assert {r["version"] for r in records} == {"WARC/1.1"}
    info, html, html_req, png, png_req, moved, moved_req = records

    assert info["warc"]["WARC-Date"] == "2026-01-01T00:00:00.000000Z"
    assert info["warc"]["WARC-Filename"] == path.name
    assert info["payload"].decode().splitlines()[:2] == [
        "software: harvestman/0.1.0",
        "format: WARC File Format 1.1",
    ]

    # The body is stored decoded, so the wire headers that described it are renamed.
    assert html["line"] == "HTTP/1.1 200 OK"
    assert html["http"] == [
        ("Content-Type", "text/html; charset=utf-8"),
        ("X-Archive-Orig-Content-Encoding", "gzip"),
        ("X-Archive-Orig-Content-Length", "77"),
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
        ("Content-Length", str(len(HTML))),
    ]
    assert html["payload"] == HTML
    assert html["warc"]["WARC-Payload-Digest"] == sha1_digest(HTML)
    assert html["warc"]["WARC-Date"] == "2026-01-01T00:00:01.250000Z"
    assert html["warc"]["WARC-IP-Address"] == "192.0.2.7"
    assert html_req["warc"]["WARC-Concurrent-To"] == html["id"]
    assert html_req["warc"]["WARC-Date"] == html["warc"]["WARC-Date"]
    assert html_req["warc"]["WARC-IP-Address"] == "192.0.2.7"
    assert html_req["line"] == "GET /page?q=1 HTTP/1.1"
    assert html_req["http"] == [("Host", "a.example"), *REQUEST.items()]
    assert html_req["payload"] == b""

    assert png["line"] == "HTTP/1.1 200 Fine"
    assert png["http"] == [
        ("Content-Type", "image/png"),
        ("X-Archive-Orig-Transfer-Encoding", "chunked"),
        ("Content-Length", "1024"),
    ]
    assert png["payload"] == PNG
    assert png["warc"]["WARC-Payload-Digest"] == sha1_digest(PNG)
    assert "WARC-IP-Address" not in png["warc"]
    assert png_req["warc"]["WARC-Concurrent-To"] == png["id"]

    assert moved["line"] == "HTTP/1.1 301 Moved Permanently"
    assert moved["http"] == [
        ("Location", "https://a.example/page?q=1"),
        ("X-Archive-Orig-Content-Length", "0"),
        ("Content-Length", "0"),
    ]
    assert moved["payload"] == b""
    assert moved_req["warc"]["WARC-Concurrent-To"] == moved["id"]


def warcio_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from warcio.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_warcio_command_line_tools_index_and_check_the_file(tmp_path: Path) -> None:
    path = tmp_path / "out.warc.gz"
    write_three_exchanges(path, gzip=True)

    checked = warcio_cli("check", "-v", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("digest pass") == 7

    indexed = warcio_cli("index", "-f", "warc-type,warc-target-uri,http:status", str(path))
    assert indexed.returncode == 0, indexed.stderr
    lines = [json.loads(line) for line in indexed.stdout.splitlines()]
    assert [(d["warc-type"], d.get("warc-target-uri"), d.get("http:status")) for d in lines] == [
        ("warcinfo", None, None),
        ("response", "https://a.example/page?q=1", "200"),
        ("request", "https://a.example/page?q=1", None),
        ("response", "https://a.example/logo.png", "200"),
        ("request", "https://a.example/logo.png", None),
        ("response", "https://a.example/old", "301"),
        ("request", "https://a.example/old", None),
    ]


def test_a_corrupted_record_fails_warcio_check(tmp_path: Path) -> None:
    path = tmp_path / "out.warc"
    write_three_exchanges(path, gzip=False)
    path.write_bytes(path.read_bytes().replace(b"<title>", b"<TITLE>"))  # same length

    checked = warcio_cli("check", str(path))

    assert checked.returncode == 1
    assert "payload digest failed" in checked.stdout


def test_headers_are_made_safe_to_serialize(tmp_path: Path) -> None:
    path = tmp_path / "out.warc.gz"
    with WarcWriter(path) as warc:
        warc.write_exchange(
            "http://[::1]:8080/",
            {"Host": "given.example", "X-Injected": "a\r\nEvil: 1"},
            204,
            None,
            # aiohttp hands over a header that was not UTF-8 with surrogate escapes.
            {"X-Latin": "caf\udce9", "X-Utf8": "Grüße"},
            b"",
            T0,
        )
    response, request = read_warc(path)[1:]
    assert response["line"] == "HTTP/1.1 204 No Content"
    assert response["http"] == [("X-Latin", "caf%EF%BF%BD"), ("X-Utf8", "Gr%C3%BC%C3%9Fe")]
    assert request["http"] == [("Host", "given.example"), ("X-Injected", "a Evil: 1")]
    assert request["line"] == "GET / HTTP/1.1"


def test_a_truncated_body_is_marked_and_append_adds_a_second_warcinfo(tmp_path: Path) -> None:
    path = tmp_path / "out.warc.gz"
    with WarcWriter(path) as warc:
        warc.write_exchange("https://a.example/", {}, 200, None, {}, b"first", T0)
    with WarcWriter(path, append=True, info={"operator": "tests"}) as warc:
        warc.write_exchange(
            "https://a.example/big", {}, 200, None, {}, b"x" * 10, T0, truncated=True
        )

    records = read_warc(path)
    assert [(r["type"], r["uri"]) for r in records] == [
        ("warcinfo", None),
        ("response", "https://a.example/"),
        ("request", "https://a.example/"),
        ("warcinfo", None),
        ("response", "https://a.example/big"),
        ("request", "https://a.example/big"),
    ]
    assert "WARC-Truncated" not in records[1]["warc"]
    assert records[4]["warc"]["WARC-Truncated"] == "length"
    assert b"operator: tests\r\n" in records[3]["payload"]


def test_writing_outside_the_context_is_refused(tmp_path: Path) -> None:
    warc = WarcWriter(tmp_path / "out.warc.gz")
    with pytest.raises(RuntimeError, match="outside"):
        warc.write_exchange("https://a.example/", {}, 200, None, {}, b"", T0)


async def test_exchanges_written_from_many_threads_stay_whole_and_paired(tmp_path: Path) -> None:
    path = tmp_path / "out.warc.gz"
    bodies = {f"https://a.example/{i}": (b"<p>%d</p>" % i) * (i * 50 + 1) for i in range(40)}
    with WarcWriter(path) as warc:
        await asyncio.gather(
            *(
                asyncio.to_thread(warc.write_exchange, url, REQUEST, 200, None, {}, body, T0)
                for url, body in bodies.items()
            )
        )

    records = read_warc(path)[1:]
    responses = {r["id"]: r for r in records if r["type"] == "response"}
    assert {r["uri"]: r["payload"] for r in responses.values()} == bodies
    requests = [r for r in records if r["type"] == "request"]
    assert {responses[r["warc"]["WARC-Concurrent-To"]]["uri"] for r in requests} == set(bodies)
    assert warcio_cli("check", str(path)).returncode == 0


# --- a real fetch, written as the engine will ---------------------------------------------------

GZIPPED_PAGE = b"<html><body>" + b"<p>gzip on the wire</p>" * 200 + b"</body></html>"


@pytest.fixture
async def server() -> AsyncIterator[str]:
    async def page(request: web.Request) -> web.Response:
        return web.Response(
            body=gzip.compress(GZIPPED_PAGE),
            headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
        )

    async def chunked(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for _ in range(4):
            await response.write(PNG)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/page", page)
    app.router.add_get("/blob", chunked)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_real_fetches_are_archived_with_their_decoded_bodies(
    tmp_path: Path, server: str
) -> None:
    path = tmp_path / "crawl.warc.gz"
    # What the Fetcher sends on every request.
    sent = {"User-Agent": "Harvestman-test", "Accept": DEFAULT_ACCEPT}
    sent["Accept-Encoding"] = ACCEPT_ENCODING
    async with Fetcher(user_agent="Harvestman-test") as fetcher:
        results = [await fetcher.fetch(f"{server}/page"), await fetcher.fetch(f"{server}/blob")]
    with WarcWriter(path) as warc:
        for result in results:
            await asyncio.to_thread(
                warc.write_exchange,
                result.final_url,
                sent,
                result.status,
                None,
                result.headers,
                result.body,
                T0,
                "127.0.0.1",
            )

    page, page_req, blob, _ = read_warc(path)[1:]
    assert (page["uri"], page["payload"]) == (f"{server}/page", GZIPPED_PAGE)
    headers = dict(page["http"])
    assert headers["X-Archive-Orig-Content-Encoding"] == "gzip"
    assert headers["X-Archive-Orig-Content-Length"] == str(len(gzip.compress(GZIPPED_PAGE)))
    assert headers["Content-Length"] == str(len(GZIPPED_PAGE))
    assert "Content-Encoding" not in headers
    assert page_req["http"] == [("Host", server.removeprefix("http://")), *sent.items()]
    assert (blob["uri"], blob["payload"]) == (f"{server}/blob", PNG * 4)
    assert dict(blob["http"])["X-Archive-Orig-Transfer-Encoding"] == "chunked"
    assert warcio_cli("check", str(path)).returncode == 0


# --- the raw archive -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "suffix"),
    [
        ("text/html; charset=utf-8", ".html.gz"),
        ("application/xhtml+xml", ".xhtml.gz"),
        ("Application/PDF", ".pdf.gz"),
        ("application/rss+xml", ".xml.gz"),
        ("image/png", ".bin.gz"),
        ("", ".bin.gz"),
    ],
)
def test_keys_are_the_body_digest_fanned_out_with_a_type_suffix(
    content_type: str, suffix: str
) -> None:
    digest = hashlib.sha256(HTML).hexdigest()
    assert archive_key(HTML, content_type) == f"{digest[:2]}/{digest[2:4]}/{digest}{suffix}"


def test_local_archive_stores_compressed_bodies_once(tmp_path: Path) -> None:
    root = tmp_path / "raw"
    with RawArchive(LocalBlobs(root)) as archive:
        archive.check()
        key = archive.put(HTML, "text/html")
        assert key == archive_key(HTML, "text/html")
        stored = root / key
        assert gzip.decompress(stored.read_bytes()) == HTML
        assert archive.get(key) == HTML

        # A second put of the same body must not touch the object: mark it and put again.
        stored.write_bytes(b"marker")
        assert archive.put(HTML, "text/html") == key
        assert stored.read_bytes() == b"marker"

        png_key = archive.put(PNG, "image/png")
        assert archive.get(png_key) == PNG
        files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        assert files == sorted([key, png_key])


def test_local_archive_refuses_bad_keys_and_reports_missing_and_corrupt_objects(
    tmp_path: Path,
) -> None:
    archive = RawArchive(LocalBlobs(tmp_path / "raw"))
    with pytest.raises(ValueError, match="not an archive key"):
        archive.get("../../etc/passwd")
    missing = archive_key(b"never stored", "text/html")
    with pytest.raises(ArchiveMissing):
        archive.get(missing)

    key = archive.put(HTML, "text/html")
    (tmp_path / "raw" / key).write_bytes(b"not gzip")
    with pytest.raises(ArchiveError, match="not valid gzip"):
        archive.get(key)
    (tmp_path / "raw" / key).write_bytes(gzip.compress(b"other body"))
    with pytest.raises(ArchiveError, match="does not match its digest"):
        archive.get(key)


def test_local_archive_check_reports_an_unusable_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ArchiveError, match="unusable"):
        LocalBlobs(tmp_path / "file" / "raw").check()


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def make_s3(endpoint: str, bucket: str, **kwargs: Any) -> S3Blobs:
    return S3Blobs(
        bucket,
        endpoint_url=endpoint,
        region="us-east-1",
        access_key_id="test",
        secret_access_key="test",
        **kwargs,
    )


def test_s3_archive_stores_compressed_bodies_once(s3_endpoint: str) -> None:
    blobs = make_s3(s3_endpoint, "raw-once", prefix="/crawl-1/")
    blobs._client.create_bucket(Bucket="raw-once")
    with RawArchive(blobs) as archive:
        archive.check()
        key = archive.put(HTML, "text/html; charset=utf-8")
        assert key == archive_key(HTML, "text/html")
        stored = blobs._client.get_object(Bucket="raw-once", Key=f"crawl-1/{key}")
        assert gzip.decompress(stored["Body"].read()) == HTML
        assert stored["ContentType"] == "application/gzip"
        assert stored["Metadata"] == {"content-type": "text/html; charset=utf-8"}
        assert archive.get(key) == HTML

        blobs._client.put_object(Bucket="raw-once", Key=f"crawl-1/{key}", Body=b"marker")
        assert archive.put(HTML, "text/html") == key
        marker = blobs._client.get_object(Bucket="raw-once", Key=f"crawl-1/{key}")
        assert marker["Body"].read() == b"marker"

        png_key = archive.put(PNG, "image/png")
        assert archive.get(png_key) == PNG
        listed = blobs._client.list_objects_v2(Bucket="raw-once")["Contents"]
        assert sorted(o["Key"] for o in listed) == sorted([f"crawl-1/{key}", f"crawl-1/{png_key}"])

        with pytest.raises(ArchiveMissing):
            archive.get(archive_key(b"never stored", "text/html"))


def test_s3_errors_become_archive_errors(s3_endpoint: str, tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="head_bucket bucket no-such-bucket"):
        make_s3(s3_endpoint, "no-such-bucket").check()
    with pytest.raises(ArchiveError, match="put_object"):
        make_s3(s3_endpoint, "no-such-bucket").write("aa/bb/key", b"x", "text/html")

    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    down = make_s3(closed, "raw", timeout=1.0)
    with pytest.raises(ArchiveError, match="Could not connect"):
        down.exists("aa/bb/key")
    down.close()


# --- export from stored pages -------------------------------------------------------------------


def test_export_writes_archived_pages_and_counts_the_rest(tmp_path: Path) -> None:
    archive = RawArchive(LocalBlobs(tmp_path / "raw"))
    html_key = archive.put(HTML, "text/html")
    png_key = archive.put(PNG, "image/png")
    gone = archive_key(b"deleted", "text/html")
    pages = [
        {
            "url": "https://a.example/p",
            "final_url": "https://a.example/page",
            "status_code": 200,
            "content_type": "text/html",
            "charset": "utf-8",
            "fetched_at": T0 + 1,
            "archive_path": html_key,
        },
        {"url": "https://a.example/x", "status_code": 200, "fetched_at": T0, "archive_path": None},
        {"url": "https://a.example/y", "status_code": None, "fetched_at": T0, "error": "timeout"},
        {"url": "https://a.example/z", "status_code": 200, "fetched_at": T0, "archive_path": gone},
        {
            "url": "https://a.example/logo.png",
            "final_url": "https://a.example/logo.png",
            "status_code": 200,
            "fetched_at": T0 + 2,
            "archive_path": png_key,
            "response_headers": json.dumps([["Content-Type", "image/png"], ["ETag", '"v1"']]),
        },
    ]  # fmt: skip
    out = tmp_path / "export.warc.gz"

    counts = export_warc(iter(pages), archive, out, clock=lambda: T0)

    assert (counts.written, counts.skipped, counts.missing) == (2, 2, 1)
    records = read_warc(out)
    assert b"exported from a Harvestman store" in records[0]["payload"]
    assert [(r["type"], r["uri"], r["status"]) for r in records[1:]] == [
        ("response", "https://a.example/page", "200"),
        ("request", "https://a.example/page", None),
        ("response", "https://a.example/logo.png", "200"),
        ("request", "https://a.example/logo.png", None),
    ]
    html, html_req, png, _ = records[1:]
    assert html["http"] == [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Content-Length", str(len(HTML))),
    ]
    assert html["payload"] == HTML
    assert html["warc"]["WARC-Date"] == "2026-01-01T00:00:01.000000Z"
    assert html_req["http"] == [("Host", "a.example")]
    assert png["http"] == [
        ("Content-Type", "image/png"),
        ("ETag", '"v1"'),
        ("Content-Length", "1024"),
    ]
    assert png["payload"] == PNG
    assert warcio_cli("check", str(out)).returncode == 0
