"""Loading retention's archives back: ``harvestman restore-archive FILE [--since] [--domain]``.

Retention writes old page metadata to ``pages-<stamp>.jsonl.gz``, their products to
``products-<stamp>.jsonl.gz`` and old error logs to ``errors-<stamp>.jsonl.gz`` (one JSON object
a line, every column, the crawl by name). ``restore_archive`` puts those rows back, in batches of
one transaction each:

- the kind of file comes from its name (``pages-``, ``products-``, ``errors-``), else from the
  fields of its first record;
- a crawl named in a record and missing from the store is created (empty, no seeds);
- ``since`` keeps records from that time on (pages: ``fetched_at``; products: ``updated_at``;
  errors: ``created_at``), ``domain`` those of that host or its subdomains (pages: ``host``;
  products: ``page_url``; errors: the URL in ``task``);
- loading is idempotent: a page or product whose key (crawl, URL hash[, position]) is in the store
  is left as it is (the store's row is newer, or the same), and an error log identical to a
  stored one (crawl, time, class, message, task) is skipped. Loading a file twice adds nothing.

Rows get new ids. A line that is not a JSON object, is longer than ``MAX_LINE`` or lacks a
required field is counted as rejected and the rest goes on; so is a record whose values do not
fit their columns (``reasons`` counts them by column): a value of the wrong JSON type, text
with a NUL or a lone surrogate or longer than its column, a number out of its column's range,
and an ``archive_path`` that is not a key inside the raw archive (absolute, ``..``: a crafted
archive's row once made retention delete files anywhere). The ``stats-minutes-`` archives are
not loaded: their sums live on in the day rows.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Engine,
    Integer,
    Numeric,
    String,
    Table,
    insert,
    select,
)

from harvestman.archive.raw import UnsafeKey, confined_key
from harvestman.errors import StoreError
from harvestman.store import dialect
from harvestman.store.schema import crawled_pages, crawls, error_logs, images, products
from harvestman.store.transaction import transaction
from harvestman.store.values import rule_for

__all__ = ["ArchiveRestoreReport", "restore_archive"]

MAX_LINE = 64 * 1024 * 1024  # bytes: a page row with its stored text, generously
BATCH = 500

PAGES, PRODUCTS, ERRORS = "pages", "products", "errors"
_TABLES = {PAGES: crawled_pages, PRODUCTS: products, ERRORS: error_logs}
_TIME = {PAGES: "fetched_at", PRODUCTS: "updated_at", ERRORS: "created_at"}


@dataclass(slots=True)
class ArchiveRestoreReport:
    """What ``restore_archive`` did: records read, chosen by the filters, added, already there,
    rejected; the crawls it had to create."""

    path: Path
    kind: str
    read: int = 0
    matched: int = 0
    added: int = 0
    present: int = 0
    rejected: int = 0
    images_added: int = 0
    crawls_created: list[str] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)  # rejected records by column


def restore_archive(
    engine: Engine,
    path: Path,
    *,
    since: float | None = None,
    domain: str | None = None,
    now: float,
) -> ArchiveRestoreReport:
    """Load the retention archive at ``path`` into the store behind ``engine`` (see the module
    docstring). Raises ``StoreError`` for a file that is not a gzip archive of a known kind."""
    path = Path(path)
    if domain is not None:
        domain = domain.strip().strip(".").lower()
        if not domain or len(domain) > 253:
            raise ValueError("--domain: a host name of 1 to 253 characters")
    try:
        records = _records(path)
        first = next(records, None)
        kind = _kind(path, first)
        report = ArchiveRestoreReport(path, kind)
        loader = _Loader(engine, kind, report, now)
        batch: list[dict[str, Any]] = []
        for record in _chain(first, records):
            report.read += 1
            if record is None:
                report.rejected += 1
                continue
            if not _matches(kind, record, since, domain):
                continue
            report.matched += 1
            batch.append(record)
            if len(batch) >= BATCH:
                loader.load(batch)
                batch = []
        if batch:
            loader.load(batch)
    except (OSError, EOFError, zlib.error) as exc:
        raise StoreError(f"{path} is not a readable gzip archive: {exc}") from exc
    return report


def _records(path: Path) -> Iterator[dict[str, Any] | None]:
    """The file's records; None for a line that is no JSON object or is too long."""
    with gzip.open(path, "rb") as lines:
        for line in lines:
            if not line.strip():
                continue
            if len(line) > MAX_LINE:
                yield None
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                yield None
                continue
            yield record if isinstance(record, dict) else None


def _chain(
    first: dict[str, Any] | None, rest: Iterator[dict[str, Any] | None]
) -> Iterator[dict[str, Any] | None]:
    if first is not None:
        yield first
    yield from rest


def _kind(path: Path, first: dict[str, Any] | None) -> str:
    for kind in (PAGES, PRODUCTS, ERRORS):
        if path.name.startswith(f"{kind}-"):
            return kind
    if first is not None:
        if {"url_hash", "fetched_at"} <= first.keys():
            return PAGES
        if {"page_url", "position"} <= first.keys():
            return PRODUCTS
        if {"category", "error_class", "created_at"} <= first.keys():
            return ERRORS
    raise StoreError(f"{path} is not a pages, products or errors archive of retention")


def _matches(kind: str, record: dict[str, Any], since: float | None, domain: str | None) -> bool:
    if since is not None:
        moment = record.get(_TIME[kind])
        if not isinstance(moment, int | float) or moment < since:
            return False
    if domain is None:
        return True
    if kind == PAGES:
        host = record.get("host")
    else:
        url = record.get("page_url" if kind == PRODUCTS else "task")
        host = urlsplit(url).hostname if isinstance(url, str) else None
    if not isinstance(host, str):
        return False
    host = host.lower()
    return host == domain or host.endswith(f".{domain}")


class _Loader:
    """One batch at a time into the store, one transaction each."""

    def __init__(self, engine: Engine, kind: str, report: ArchiveRestoreReport, now: float):
        self.engine = engine
        self.kind = kind
        self.table: Table = _TABLES[kind]
        self.report = report
        self.now = now
        self.columns = {c.name for c in self.table.c} - {"id", "crawl_id"}
        self.crawl_ids: dict[str, int] = {}

    def load(self, batch: list[dict[str, Any]]) -> None:
        with transaction(self.engine) as conn:
            rows = []
            for record in batch:
                row = {k: v for k, v in record.items() if k in self.columns}
                crawl = record.get("crawl")
                row["crawl_id"] = None if crawl is None else self._crawl_id(conn, str(crawl))
                if any(row.get(c.name) is None for c in self.table.c if _required(c.name, c)):
                    self.report.rejected += 1
                    continue
                unfit = _unfit(self.table, row)
                if unfit is not None:
                    self.report.rejected += 1
                    self.report.reasons[unfit] = self.report.reasons.get(unfit, 0) + 1
                    continue
                rows.append((row, record))
            if self.kind == ERRORS:
                self._errors(conn, [row for row, _ in rows])
            else:
                self._keyed(conn, rows)

    def _keyed(self, conn: Connection, rows: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        if not rows:
            return
        key = ("crawl_id", "url_hash") + (("position",) if self.kind == PRODUCTS else ())
        statement = dialect.insert_ignore(self.engine, self.table, *key)
        added = conn.execute(
            statement.returning(self.table.c.id, *(self.table.c[k] for k in key)),
            [row for row, _ in rows],
        ).all()
        self.report.added += len(added)
        self.report.present += len(rows) - len(added)
        if self.kind != PRODUCTS or not added:
            return
        ids = {tuple(found[1:]): found.id for found in added}
        pictures = []
        for row, record in rows:
            product = ids.get(tuple(row[k] for k in key))
            for image in record.get("images") or ():
                if product is not None and isinstance(image, dict) and image.get("url"):
                    kept = {k: image.get(k) for k in ("position", "url", "alt", "width", "height")}
                    pictures.append({**kept, "product_id": product})
        if pictures:
            conn.execute(insert(images), pictures)
            self.report.images_added += len(pictures)

    def _errors(self, conn: Connection, rows: list[dict[str, Any]]) -> None:
        fields = ("crawl_id", "created_at", "error_class", "message", "task")
        stored = {
            tuple(found)
            for found in conn.execute(
                select(*(error_logs.c[f] for f in fields)).where(
                    error_logs.c.created_at.in_({row["created_at"] for row in rows})
                )
            )
        }
        new = []
        for row in rows:
            identity = tuple(row.get(f) for f in fields)
            if identity in stored:
                self.report.present += 1
                continue
            stored.add(identity)  # the same record twice in one file is loaded once
            new.append(row)
        if new:
            conn.execute(insert(error_logs), new)
            self.report.added += len(new)

    def _crawl_id(self, conn: Connection, name: str) -> int:
        if name not in self.crawl_ids:
            found = conn.execute(select(crawls.c.id).where(crawls.c.name == name)).scalar()
            if found is None:
                found = conn.execute(
                    insert(crawls)
                    .values(name=name[:200], created_at=self.now, seeds="[]")
                    .returning(crawls.c.id)
                ).scalar_one()
                self.report.crawls_created.append(name)
            self.crawl_ids[name] = int(found)
        return self.crawl_ids[name]


def _unfit(table: Table, row: dict[str, Any]) -> str | None:
    """The first column whose value in ``row`` it cannot take as it is, or None."""
    for name, value in row.items():
        if value is None or name == "crawl_id":
            continue
        column = table.c[name]
        if not _typed(column, value):
            return name
        fitted, note = rule_for(column).check(value)
        if note is not None or fitted is not value:
            return name
        if name == "archive_path":
            try:
                confined_key(value)
            except UnsafeKey:
                return name
    return None


def _typed(column: Column[Any], value: Any) -> bool:
    """Whether ``value`` is of the JSON type the column's values are archived as."""
    kind = column.type
    if isinstance(kind, String):
        return isinstance(value, str)
    if isinstance(kind, Boolean):
        return isinstance(value, bool) or (type(value) is int and value in (0, 1))
    if isinstance(kind, Integer):
        return type(value) is int
    if isinstance(kind, Numeric):  # Float too; prices are archived as decimal strings
        if isinstance(value, str):
            try:
                return Decimal(value).is_finite()
            except ArithmeticError:
                return False
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _required(name: str, column: Column[Any]) -> bool:
    """A NOT NULL column without a default the record must carry."""
    return name != "id" and not column.nullable and column.default is None
