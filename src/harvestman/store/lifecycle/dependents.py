"""What goes with a page that retention removes.

- Its **products** (and their ``images`` rows, by the foreign key's ``ON DELETE CASCADE``): a
  product is keyed by the page it was found on (``crawl_id``, ``url_hash``). They are written to
  ``products-<stamp>.jsonl.gz`` first (each product row with its images as ``images``), then
  deleted in the transaction that deletes their pages.
- Its **body** in the raw archive (``archive.raw``): objects are content-addressed, so a body
  is shared by every page (of any crawl) with the same bytes; an object is deleted only once
  no page row refers to its key any more, after the pages' transaction committed. A crawl
  writing the same body again between that check and the delete would lose it (its page then
  reads as ``ArchiveMissing``); the window is one batch's round trips, and a re-crawl writes
  it again.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, Row, select

from harvestman.archive.raw import ArchiveError, BlobStore
from harvestman.store.lifecycle.spool import GzipSpool
from harvestman.store.schema import crawled_pages, images, products

log = logging.getLogger(__name__)

BlobOpener = Callable[[str], BlobStore]


def _default(value: object) -> str:
    if isinstance(value, Decimal):
        return str(value)  # exact: prices are Numeric(18, 4)
    raise TypeError(f"cannot export {type(value).__name__}")


class PageDependents:
    """The products and archived bodies of the pages one retention run removes.

    ``locations`` maps a crawl id to where its raw archive is (``crawls.archive_location``);
    ``default_location`` serves crawls that recorded none. Without ``open_archive`` bodies are
    kept.
    """

    def __init__(
        self,
        engine: Engine,
        spool: GzipSpool,
        crawl_names: dict[int, str],
        locations: dict[int, str | None],
        *,
        open_archive: BlobOpener | None = None,
        default_location: str | None = None,
    ) -> None:
        self.engine = engine
        self.spool = spool
        self.crawl_names = crawl_names
        self.locations = locations
        self.open_archive = open_archive
        self.default_location = default_location
        self.products_exported = 0
        self.products_deleted = 0
        self.objects_deleted = 0
        self.objects_failed = 0
        self._blobs: dict[str, BlobStore] = {}

    def export(self, pages: Sequence[Row[*tuple[Any, ...]]]) -> None:
        """Write the products of ``pages`` (rows with crawl_id and url_hash) to the spool."""
        with self.engine.connect() as conn:
            found = [
                row
                for crawl_id, hashes in _by_crawl(pages).items()
                for row in conn.execute(
                    select(products)
                    .where(products.c.crawl_id == crawl_id, products.c.url_hash.in_(hashes))
                    .order_by(products.c.id)
                )
            ]
            pictures: defaultdict[int, list[dict[str, Any]]] = defaultdict(list)
            if found:
                ids = [row.id for row in found]
                for image in conn.execute(
                    select(images).where(images.c.product_id.in_(ids)).order_by(images.c.id)
                ):
                    pictures[image.product_id].append(_record(image))
        if not found:
            return
        lines = []
        for row in found:
            record = {"crawl": self.crawl_names.get(row.crawl_id, row.crawl_id), **_record(row)}
            record["images"] = pictures.get(row.id, [])
            lines.append(orjson.dumps(record, default=_default))
        self.spool.write(b"\n".join(lines) + b"\n")
        self.products_exported += len(found)

    def delete(self, conn: Connection, deleted: Sequence[Row[*tuple[Any, ...]]]) -> None:
        """Delete the products of the ``deleted`` pages, in the pages' transaction."""
        for crawl_id, hashes in _by_crawl(deleted).items():
            removed = conn.execute(
                products.delete().where(
                    products.c.crawl_id == crawl_id, products.c.url_hash.in_(hashes)
                )
            ).rowcount
            self.products_deleted += int(removed)

    def release(self, deleted: Sequence[Row[*tuple[Any, ...]]]) -> None:
        """Delete the archived bodies of the ``deleted`` pages that no page refers to now."""
        if self.open_archive is None:
            return
        wanted: defaultdict[str, set[str]] = defaultdict(set)
        for row in deleted:
            location = self.locations.get(row.crawl_id) or self.default_location
            if row.archive_path and location:
                wanted[row.archive_path].add(location)
        if not wanted:
            return
        with self.engine.connect() as conn:
            still = set(
                conn.execute(
                    select(crawled_pages.c.archive_path)
                    .where(crawled_pages.c.archive_path.in_(list(wanted)))
                    .distinct()
                ).scalars()
            )
        for key, places in sorted(wanted.items()):
            if key in still:
                continue
            for location in sorted(places):
                try:
                    self._blobs_at(location).delete(key)
                except ArchiveError as exc:  # the rows are gone: an orphan object, not a loss
                    self.objects_failed += 1
                    log.warning("retention could not delete the archived body %s: %s", key, exc)
                else:
                    self.objects_deleted += 1

    def close(self) -> None:
        for blobs in self._blobs.values():
            blobs.close()

    def _blobs_at(self, location: str) -> BlobStore:
        assert self.open_archive is not None
        if location not in self._blobs:
            self._blobs[location] = self.open_archive(location)
        return self._blobs[location]


def _by_crawl(rows: Sequence[Row[*tuple[Any, ...]]]) -> dict[int, list[str]]:
    grouped: defaultdict[int, list[str]] = defaultdict(list)
    for row in rows:
        grouped[int(row.crawl_id)].append(str(row.url_hash))
    return grouped


def _record(row: Row[*tuple[Any, ...]]) -> dict[str, Any]:
    # Column names are str subclasses (quoted_name), which orjson refuses as keys.
    return {str(key): value for key, value in row._mapping.items()}
