"""What retention removes with a page: its products and images (exported first), and its body in
the raw archive (a local directory or an S3 bucket) once no page refers to it any more."""

from __future__ import annotations

import functools
import gzip
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import orjson
import pytest
from sqlalchemy import Engine, insert, select, update

from harvestman.archive.location import open_blobs
from harvestman.archive.raw import LocalBlobs, RawArchive, S3Blobs
from harvestman.config import Settings
from harvestman.store.lifecycle.retention import RetentionRules, apply_retention
from harvestman.store.schema import crawled_pages, crawls, images, products
from harvestman.urls import url_hash
from storerows import DAY, NOW, add_crawl, add_page, open_store, store_url, table_rows

OLD, YOUNG = 91, 10  # days: the page rule keeps 90


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    opened = open_store(store_url(request, tmp_path))
    yield opened
    opened.dispose()


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


def add_product(engine: Engine, crawl: int, page: str, position: int, name: str,
                pictures: int = 0) -> None:  # fmt: skip
    with engine.begin() as conn:
        product = conn.execute(
            insert(products).values(
                crawl_id=crawl, url_hash=url_hash(page), position=position, page_url=page,
                name=name, price=Decimal("19.9900"), currency="EUR", source="json-ld",
                parser="json-ld@1", content_hash="c" * 64, created_at=NOW, updated_at=NOW,
            ).returning(products.c.id)
        ).scalar_one()  # fmt: skip
        for n in range(pictures):
            conn.execute(insert(images).values(
                product_id=product, position=n, url=f"{page}img{n}.jpg", alt=f"{name} {n}"
            ))  # fmt: skip


def arrange(engine: Engine, archive: RawArchive, location: str) -> tuple[str, str, str]:
    """Two crawls sharing a body; old pages with products; keys (shared, alone, other crawl)."""
    shared = archive.put(b"<p>the same body twice", "text/html")
    alone = archive.put(b"<p>only the old page has this", "text/html")
    other = archive.put(b"<p>crawl two, old", "text/html")
    one, two = add_crawl(engine, "one"), add_crawl(engine, "two")
    with engine.begin() as conn:
        conn.execute(update(crawls).values(archive_location=location))
    add_page(engine, one, "http://a.test/old-shared", OLD, archive_path=shared)
    add_page(engine, one, "http://a.test/old-alone", OLD, archive_path=alone)
    add_page(engine, two, "http://b.test/young-shared", YOUNG, archive_path=shared)
    add_page(engine, two, "http://b.test/old", OLD, archive_path=other)
    add_product(engine, one, "http://a.test/old-shared", 0, "kettle", pictures=2)
    add_product(engine, one, "http://a.test/old-shared", 1, "teapot")
    add_product(engine, two, "http://b.test/young-shared", 0, "mug", pictures=1)
    return shared, alone, other


def page_rules(tmp_path: Path, settings: Settings) -> RetentionRules:
    return RetentionRules(
        completed_after=None, failed_after=None, errors_after=None, stats_minutes_after=None,
        pages_after=90 * DAY, export_dir=tmp_path / "retention", batch_size=2, compact=False,
        open_archive=functools.partial(open_blobs, settings=settings),
    )  # fmt: skip


def assert_products_went_with_their_pages(engine: Engine, tmp_path: Path, report: object) -> None:
    assert table_rows(engine, crawled_pages, "url") == [("http://b.test/young-shared",)]
    assert table_rows(engine, products, "name") == [("mug",)]
    assert table_rows(engine, images, "alt") == [("mug 0",)]
    exported = [
        orjson.loads(line)
        for line in gzip.decompress(
            (tmp_path / "retention" / "products-20231114T221320Z.jsonl.gz").read_bytes()
        ).splitlines()
    ]
    assert [(p["crawl"], p["name"], p["price"], [i["alt"] for i in p["images"]])
            for p in exported] == [("one", "kettle", "19.9900", ["kettle 0", "kettle 1"]),
                                    ("one", "teapot", "19.9900", [])]  # fmt: skip
    assert (report.products_exported, report.products_deleted) == (2, 2)  # type: ignore[attr-defined]


def test_old_pages_take_their_products_and_their_unshared_bodies_along(
    engine: Engine, tmp_path: Path
) -> None:
    blobs = LocalBlobs(tmp_path / "raw")
    shared, alone, other = arrange(engine, RawArchive(blobs), str(tmp_path / "raw"))

    report = apply_retention(engine, page_rules(tmp_path, Settings()), NOW)

    assert (report.pages_exported, report.pages_deleted) == (3, 3)
    assert_products_went_with_their_pages(engine, tmp_path, report)
    assert (report.archive_objects_deleted, report.archive_objects_failed) == (2, 0)
    assert [blobs.exists(key) for key in (shared, alone, other)] == [True, False, False]
    again = apply_retention(engine, page_rules(tmp_path, Settings()), NOW + 1)
    assert (again.pages_deleted, again.archive_objects_deleted) == (0, 0)


def test_bodies_in_a_bucket_are_deleted_too(
    engine: Engine, tmp_path: Path, s3_endpoint: str
) -> None:
    bucket = f"raw-{abs(hash(str(tmp_path))) % 10**8}"
    settings = Settings(
        archive_s3_endpoint_url=s3_endpoint, archive_s3_region="us-east-1",
        archive_s3_access_key_id="test", archive_s3_secret_access_key="test",
    )  # fmt: skip
    blobs = open_blobs(f"s3://{bucket}/crawls", settings)
    assert isinstance(blobs, S3Blobs)
    blobs._client.create_bucket(Bucket=bucket)
    shared, _alone, _other = arrange(engine, RawArchive(blobs), f"s3://{bucket}/crawls")

    report = apply_retention(engine, page_rules(tmp_path, settings), NOW)

    assert_products_went_with_their_pages(engine, tmp_path, report)
    assert report.archive_objects_deleted == 2
    listed = blobs._client.list_objects_v2(Bucket=bucket).get("Contents", [])
    assert [o["Key"] for o in listed] == [f"crawls/{shared}"]


def test_without_an_archive_opener_bodies_are_kept(engine: Engine, tmp_path: Path) -> None:
    blobs = LocalBlobs(tmp_path / "raw")
    keys = arrange(engine, RawArchive(blobs), str(tmp_path / "raw"))
    rules = RetentionRules(pages_after=90 * DAY, export_dir=tmp_path / "retention", compact=False)

    report = apply_retention(engine, rules, NOW)

    assert report.pages_deleted == 3
    assert report.archive_objects_deleted == 0
    assert all(blobs.exists(key) for key in keys)
    with engine.connect() as conn:
        assert conn.execute(select(products.c.name)).scalars().all() == ["mug"]


@pytest.mark.parametrize("outside", ["absolute", "../victim", "a/../../victim", "link/victim"])
def test_a_key_outside_the_archive_is_never_deleted(
    engine: Engine, tmp_path: Path, outside: str
) -> None:
    """A page row whose archive_path leaves the archive's root (a crafted archive restored,
    a row written behind the store's back) costs retention nothing outside it."""
    root = tmp_path / "raw"
    root.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (root / "link").symlink_to(tmp_path)  # a directory inside that points outside
    key = str(victim) if outside == "absolute" else outside
    one = add_crawl(engine, "one")
    with engine.begin() as conn:
        conn.execute(update(crawls).values(archive_location=str(root)))
    add_page(engine, one, "http://a.test/old", OLD, archive_path=key)

    report = apply_retention(engine, page_rules(tmp_path, Settings()), NOW)

    assert report.pages_deleted == 1
    assert (report.archive_objects_deleted, report.archive_objects_failed) == (0, 1)
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize("key", ["/etc/passwd", "../x", "a/../../x", "link/x", "", "a//b"])
def test_local_blobs_refuse_keys_that_leave_their_root(tmp_path: Path, key: str) -> None:
    from harvestman.archive.raw import ArchiveError

    root = tmp_path / "raw"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    (tmp_path / "x").write_text("outside")
    blobs = LocalBlobs(root)
    for call in (
        lambda: blobs.read(key),
        lambda: blobs.delete(key),
        lambda: blobs.exists(key),
        lambda: blobs.write(key, b"data", "text/html"),
    ):
        with pytest.raises(ArchiveError, match="outside the archive"):
            call()
    assert (tmp_path / "x").read_text() == "outside"
