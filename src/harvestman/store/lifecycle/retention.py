"""Retention: how long the store keeps frontier rows and page metadata.

Rules are plain values (the caller resolves the settings). ``apply_retention`` applies them in
bounded batches: each table is walked in ranges of ``batch_size`` primary-key ids, one short
transaction per range, so no store of any size is locked for more than one range's work and a
running crawl keeps writing in between. What it does, in order:

1. **completed** frontier rows whose last change (``updated_at``) is older than
   ``completed_after`` are deleted. Their visited TTL ran out long ago: a URL found again is
   queued as new (it loses its stored ETag / Last-Modified, nothing else).
2. **failed** rows older than ``failed_after`` are written to ``failed-urls-<stamp>.csv.gz`` in
   ``export_dir``, then deleted.
3. **page metadata** (``crawled_pages``) fetched longer than ``pages_after`` ago is written to
   ``pages-<stamp>.jsonl.gz`` in ``export_dir`` (every column, one JSON object a line), then
   deleted. A file rather than an archive table: the point is a smaller store, a table in the same
   database would not shrink it, and a gzip JSONL file is what the exports already speak. The
   pages' products (and their images) go with them, written to ``products-<stamp>.jsonl.gz``
   first, and so do their bodies in the raw archive once no other page refers to them
   (``dependents``). ``harvestman restore-archive`` loads pages and error logs back.
4. **error logs** (``error_logs``) older than ``errors_after`` are written to
   ``errors-<stamp>.jsonl.gz`` in ``export_dir`` (every column), then deleted: the table takes a
   row per failed fetch and would otherwise grow without end.
5. **stats history** minute rows older than ``stats_minutes_after`` are rolled up into day rows
   (``rollup``): per batch, the minute rows are deleted and their sums added to their days in
   the same transaction, so the totals never change. With ``export_dir`` the minute rows are
   written to ``stats-minutes-<stamp>.jsonl.gz`` before that transaction commits (for audit:
   their sums live on in the day rows, so they are not loaded back).
6. the store is compacted (``compaction.compact``): statistics and free space, as it needs.

A row is deleted only after the file holding it is fsynced (``spool.GzipSpool``), and only if it
still matches its rule then (a URL re-queued or a page re-fetched meanwhile is kept). Exported
times are the store's epoch seconds.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import ColumnElement, Connection, Engine, Row, Select, Table, select

from harvestman.records import UrlStatus
from harvestman.store.lifecycle.batches import table_id_ranges
from harvestman.store.lifecycle.compaction import CompactionReport, compact
from harvestman.store.lifecycle.dependents import BlobOpener, PageDependents
from harvestman.store.lifecycle.rollup import roll_up_batch
from harvestman.store.lifecycle.spool import GzipSpool
from harvestman.store.schema import crawled_pages, crawls, error_logs, stats_history, urls
from harvestman.store.transaction import locked_ids, transaction

if TYPE_CHECKING:
    from harvestman.config import Settings

DAY = 86400.0
MAX_BATCH = 20_000

# The columns of a failed frontier row in the CSV export, in order (``crawl`` is its name).
FAILED_FIELDS = (
    "crawl", "url", "host", "kind", "depth", "status_code", "error_class", "error", "attempts",
    "discovered_at", "last_fetched_at", "updated_at",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class RetentionRules:
    """What to keep. Ages are seconds; ``None`` keeps those rows forever.

    ``export_dir`` receives the failed-URL CSVs and the page archives; the failed and page rules
    need it (they never delete what they have not written). ``batch_size`` is the number of ids
    per transaction; ``batch_pause`` seconds are slept after each write so other writers get the
    lock. ``vacuum_min_free_fraction``: a full SQLite VACUUM runs only when at least this share
    of the file is free pages and no worker is alive (``None``: never). See ``compaction``.
    ``open_archive`` opens the raw archive at a crawl's location (``archive.location``), where
    the bodies of removed pages are deleted (``None``: kept); ``archive_location`` serves the
    crawls that recorded none.
    """

    completed_after: float | None = 7 * DAY
    failed_after: float | None = 30 * DAY
    pages_after: float | None = 90 * DAY
    errors_after: float | None = 30 * DAY
    stats_minutes_after: float | None = 7 * DAY
    export_dir: Path | None = None
    batch_size: int = 1000
    batch_pause: float = 0.0
    compact: bool = True
    vacuum_min_free_fraction: float | None = 0.25
    live_worker_seconds: float = 60.0
    open_archive: BlobOpener | None = field(default=None, compare=False, repr=False)
    archive_location: str | None = None

    def __post_init__(self) -> None:
        for name in (
            "completed_after", "failed_after", "pages_after", "errors_after", "stats_minutes_after"
        ):  # fmt: skip
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must not be negative, got {value}")
        exported = (self.failed_after, self.pages_after, self.errors_after)
        if self.export_dir is None and any(age is not None for age in exported):
            raise ValueError(
                "failed_after, pages_after and errors_after need export_dir"
                " (rows are exported first)"
            )
        # Capped: a batch's ids go into one IN list, and SQLite takes at most 32,766 parameters.
        if not 1 <= self.batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size must be 1 to {MAX_BATCH}, got {self.batch_size}")

    @classmethod
    def from_settings(cls, settings: Settings) -> RetentionRules:
        """The rules of the ``retention_*`` settings (days there, seconds here): what
        ``harvestman maintenance`` and the service's daily run apply."""

        from harvestman.archive.location import archive_location, open_blobs

        def seconds(days: float | None) -> float | None:
            return None if days is None else days * DAY

        return cls(
            completed_after=seconds(settings.retention_completed_days),
            failed_after=seconds(settings.retention_failed_days),
            pages_after=seconds(settings.retention_pages_days),
            errors_after=seconds(settings.retention_errors_days),
            stats_minutes_after=seconds(settings.retention_stats_minutes_days),
            export_dir=Path(settings.retention_export_dir),
            batch_size=settings.retention_batch_size,
            vacuum_min_free_fraction=settings.retention_vacuum_free_fraction,
            # A crawl that archived recorded where; the settings' archive serves the others.
            open_archive=functools.partial(open_blobs, settings=settings),
            archive_location=archive_location(settings) if settings.archive_enabled else None,
        )


@dataclass(slots=True)
class RetentionReport:
    """What ``apply_retention`` did. ``*_exported`` rows are on disk; ``*_deleted`` left the store
    (fewer than exported when a row changed between the two). ``longest_write`` is the longest
    single write transaction in seconds: how long a crawl's writer could have waited."""

    completed_deleted: int = 0
    failed_exported: int = 0
    failed_deleted: int = 0
    failed_file: Path | None = None
    pages_exported: int = 0
    pages_deleted: int = 0
    pages_file: Path | None = None
    products_exported: int = 0
    products_deleted: int = 0
    products_file: Path | None = None
    archive_objects_deleted: int = 0
    archive_objects_failed: int = 0
    errors_exported: int = 0
    errors_deleted: int = 0
    errors_file: Path | None = None
    stats_minutes_rolled: int = 0
    stats_file: Path | None = None
    stats_days_added: int = 0
    batches: int = 0
    longest_write: float = 0.0
    seconds: float = 0.0
    compaction: CompactionReport | None = None
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for the service's log: what left the store and where it went, or that
        nothing was past its retention.

        >>> RetentionReport(seconds=0.026).summary()
        'nothing past its retention (0.03 s)'
        >>> RetentionReport(pages_exported=3, pages_deleted=3, pages_file=Path("p.jsonl.gz"),
        ...                 completed_deleted=1200, seconds=1.5).summary()
        '1,200 completed URLs deleted; 3 pages deleted (3 exported to p.jsonl.gz) (1.50 s)'
        """
        removed = (
            ("completed URLs", self.completed_deleted, 0, None),
            ("failed URLs", self.failed_deleted, self.failed_exported, self.failed_file),
            ("pages", self.pages_deleted, self.pages_exported, self.pages_file),
            ("products", self.products_deleted, self.products_exported, self.products_file),
            ("error rows", self.errors_deleted, self.errors_exported, self.errors_file),
        )
        parts = [
            f"{deleted:,} {what} deleted" + (f" ({exported:,} exported to {file})" if file else "")
            for what, deleted, exported, file in removed
            if deleted or exported
        ]
        if self.archive_objects_deleted:
            parts.append(f"{self.archive_objects_deleted:,} archived bodies deleted")
        if self.archive_objects_failed:
            parts.append(f"{self.archive_objects_failed:,} archived bodies not deleted")
        if self.stats_minutes_rolled:
            parts.append(
                f"{self.stats_minutes_rolled:,} minutes of stats rolled into "
                f"{self.stats_days_added:,} days"
            )
        if self.skipped:
            parts.append("skipped: " + ", ".join(self.skipped))
        return f"{'; '.join(parts) or 'nothing past its retention'} ({self.seconds:.2f} s)"


def apply_retention(engine: Engine, rules: RetentionRules, now: float) -> RetentionReport:
    """Apply ``rules`` to the store behind ``engine`` as of ``now`` (epoch seconds).

    Synchronous and long-running on a big store: call it from a thread (``asyncio.to_thread``)
    when an event loop is running. Safe beside running crawls on both stores. Raises
    ``FileExistsError`` before deleting anything when an export file of the same stamp exists.
    """
    started = time.monotonic()
    report = RetentionReport()
    run = _Run(engine, rules, report)
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y%m%dT%H%M%SZ")
    failed_path = pages_path = errors_path = products_path = stats_path = None
    if rules.export_dir is not None:
        failed_path = rules.export_dir / f"failed-urls-{stamp}.csv.gz"
        pages_path = rules.export_dir / f"pages-{stamp}.jsonl.gz"
        products_path = rules.export_dir / f"products-{stamp}.jsonl.gz"
        errors_path = rules.export_dir / f"errors-{stamp}.jsonl.gz"
        stats_path = rules.export_dir / f"stats-minutes-{stamp}.jsonl.gz"
        for path in (failed_path, pages_path, products_path, errors_path, stats_path):
            if path.exists():
                raise FileExistsError(f"{path} exists: retention never overwrites an export")
    if rules.completed_after is None:
        report.skipped.append("completed: kept (no rule)")
    else:
        run.delete_completed(now - rules.completed_after)
    if rules.failed_after is None:
        report.skipped.append("failed: kept (no rule)")
    else:
        assert failed_path is not None
        run.export_failed(failed_path, now - rules.failed_after)
    if rules.pages_after is None:
        report.skipped.append("pages: kept (no rule)")
    else:
        assert pages_path is not None and products_path is not None
        run.archive_pages(pages_path, products_path, now - rules.pages_after)
    if rules.errors_after is None:
        report.skipped.append("errors: kept (no rule)")
    else:
        assert errors_path is not None
        run.archive_errors(errors_path, now - rules.errors_after)
    if rules.stats_minutes_after is None:
        report.skipped.append("stats: minute rows kept (no rule)")
    else:
        run.roll_up_stats(now - rules.stats_minutes_after, stats_path)
    if rules.compact:
        changed = []
        if report.completed_deleted or report.failed_deleted:
            changed.append("urls")
        if report.pages_deleted:
            changed.append("crawled_pages")
        if report.products_deleted:
            changed += ["products", "images"]
        if report.errors_deleted:
            changed.append("error_logs")
        if report.stats_minutes_rolled:
            changed.append("stats_history")
        report.compaction = compact(
            engine,
            now=now,
            changed_tables=changed,
            vacuum_min_free_fraction=rules.vacuum_min_free_fraction,
            live_worker_seconds=rules.live_worker_seconds,
        )
    report.seconds = time.monotonic() - started
    return report


class _Run:
    """One application of the rules: the batch loop and its bookkeeping."""

    def __init__(self, engine: Engine, rules: RetentionRules, report: RetentionReport) -> None:
        self.engine = engine
        self.rules = rules
        self.report = report
        with engine.connect() as conn:
            found = conn.execute(select(crawls.c.id, crawls.c.name, crawls.c.archive_location))
            self.crawl_names, self.archive_locations = {}, {}
            for crawl_id, name, location in found:
                self.crawl_names[int(crawl_id)] = name
                self.archive_locations[int(crawl_id)] = location

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """One write transaction, timed and counted, then the pause other writers get."""
        began = time.monotonic()
        with transaction(self.engine) as conn:
            yield conn
        self.report.longest_write = max(self.report.longest_write, time.monotonic() - began)
        self.report.batches += 1
        if self.rules.batch_pause:
            time.sleep(self.rules.batch_pause)

    def _write(self, statement: Any) -> int:
        """Run one DELETE in its own write transaction; return the rows it removed."""
        with self._transaction() as conn:
            removed = conn.execute(statement).rowcount
        return int(removed)

    def roll_up_stats(self, cutoff: float, path: Path | None) -> None:
        spool = None if path is None else GzipSpool(path)

        def archive(rows: Sequence[Row[*tuple[Any, ...]]]) -> None:
            assert spool is not None
            spool.write(self._as_jsonl(rows))

        with spool or contextlib.nullcontext():
            for first, last in table_id_ranges(self.engine, stats_history, self.rules.batch_size):
                with self._transaction() as conn:
                    rolled, days = roll_up_batch(
                        conn, first, last, cutoff, None if spool is None else archive
                    )
                self.report.stats_minutes_rolled += rolled
                self.report.stats_days_added += days
        self.report.stats_file = None if spool is None else spool.path

    def delete_completed(self, cutoff: float) -> None:
        done = UrlStatus.COMPLETED.value
        for first, last in table_id_ranges(self.engine, urls, self.rules.batch_size):
            self.report.completed_deleted += self._write(
                urls.delete().where(
                    locked_ids(
                        urls.c.id.between(first, last),
                        urls.c.status == done,
                        urls.c.updated_at < cutoff,
                    )
                )
            )

    def export_failed(self, path: Path, cutoff: float) -> None:
        failed = UrlStatus.FAILED.value
        columns = [urls.c[name] for name in FAILED_FIELDS if name != "crawl"]

        def encode(rows: Sequence[Row[*tuple[Any, ...]]]) -> bytes:
            text = io.StringIO()
            writer = csv.writer(text, lineterminator="\n")
            for row in rows:
                # row: id, crawl_id, then the columns; csv writes None as an empty field.
                writer.writerow([self.crawl_names.get(row.crawl_id, row.crawl_id), *row[2:]])
            return text.getvalue().encode()

        header = (",".join(FAILED_FIELDS) + "\n").encode()
        report = self.report
        report.failed_exported, report.failed_deleted, report.failed_file = (
            self._export_then_delete(
                urls,
                select(urls.c.id, urls.c.crawl_id, *columns),
                (urls.c.status == failed, urls.c.updated_at < cutoff),
                GzipSpool(path, header=header),
                encode,
            )
        )

    def _as_jsonl(self, rows: Sequence[Row[*tuple[Any, ...]]]) -> bytes:
        """Whole rows as JSON lines, each with its crawl's name as ``crawl``."""
        lines = []
        for row in rows:
            record = {"crawl": self.crawl_names.get(row.crawl_id, row.crawl_id)}
            # Column names are str subclasses (quoted_name), which orjson refuses as keys.
            record.update((str(key), value) for key, value in row._mapping.items())
            lines.append(orjson.dumps(record))
        return b"\n".join(lines) + b"\n"

    def archive_pages(self, path: Path, products_path: Path, cutoff: float) -> None:
        report = self.report
        spool = GzipSpool(products_path)
        dependents = PageDependents(
            self.engine,
            spool,
            self.crawl_names,
            self.archive_locations,
            open_archive=self.rules.open_archive,
            default_location=self.rules.archive_location,
        )
        try:
            with spool:
                report.pages_exported, report.pages_deleted, report.pages_file = (
                    self._export_then_delete(
                        crawled_pages,
                        select(crawled_pages),
                        (crawled_pages.c.fetched_at < cutoff,),
                        GzipSpool(path),
                        self._as_jsonl,
                        dependents,
                    )
                )
        finally:
            dependents.close()
        report.products_exported = dependents.products_exported
        report.products_deleted = dependents.products_deleted
        report.products_file = spool.path
        report.archive_objects_deleted = dependents.objects_deleted
        report.archive_objects_failed = dependents.objects_failed

    def archive_errors(self, path: Path, cutoff: float) -> None:
        report = self.report
        report.errors_exported, report.errors_deleted, report.errors_file = (
            self._export_then_delete(
                error_logs,
                select(error_logs),
                (error_logs.c.created_at < cutoff,),
                GzipSpool(path),
                self._as_jsonl,
            )
        )

    def _export_then_delete(
        self,
        table: Table,
        query: Select[Any],
        rule: tuple[ColumnElement[bool], ...],
        spool: GzipSpool,
        encode: Callable[[Sequence[Row[*tuple[Any, ...]]]], bytes],
        dependents: PageDependents | None = None,
    ) -> tuple[int, int, Path | None]:
        exported = deleted = 0
        with spool:
            for first, last in table_id_ranges(self.engine, table, self.rules.batch_size):
                with self.engine.connect() as conn:
                    rows = conn.execute(
                        query.where(table.c.id.between(first, last), *rule).order_by(table.c.id)
                    ).all()
                if not rows:
                    continue
                spool.write(encode(rows))
                exported += len(rows)
                # Only what was written, and only if it still matches the rule now.
                ids = [row.id for row in rows]
                matching = (table.c.id.in_(ids), *rule)
                # urls rows are locked in id order (store.transaction), like every urls write.
                where = (locked_ids(*matching),) if table is urls else matching
                if dependents is None:
                    deleted += self._write(table.delete().where(*where))
                    continue
                dependents.export(rows)
                with self._transaction() as conn:
                    gone = conn.execute(
                        table.delete()
                        .where(*where)
                        .returning(table.c.crawl_id, table.c.url_hash, table.c.archive_path)
                    ).all()
                    dependents.delete(conn, gone)
                deleted += len(gone)
                dependents.release(gone)
        return exported, deleted, spool.path
