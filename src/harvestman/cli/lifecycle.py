"""``maintenance``, ``backup``, ``restore``, ``restore-archive``, ``replay`` and ``storage``: the
store over time."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from harvestman.cli.exits import errors_exit, usage_error
from harvestman.cli.options import (
    ConfigOption,
    DatabaseUrlOption,
    DbOption,
    DryRunOption,
    JsonOption,
    ReadCrawlOption,
)
from harvestman.cli.reports import print_report
from harvestman.cli.stores import load_settings, open_crawl, open_store, sqlite_file

if TYPE_CHECKING:
    from rich.table import Table

    from harvestman.lifecycle.storage import StorageReport


def maintenance(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Apply the retention rules (export, then delete old rows) and compact the store."""
    import time

    from harvestman.store.lifecycle.retention import RetentionRules

    with open_store(config, db, database_url, must_exist=True) as (settings, store):
        rules = RetentionRules.from_settings(settings)
        store.schema.check_current()
        report = store.maintenance.apply_retention(rules, time.time())
    print_report("maintenance: retention applied, store compacted", report, as_json=as_json)


# A restore is refused while a worker beat this recently (as compaction's full VACUUM is).
LIVE_WORKER_SECONDS = 60.0


def backup(
    out: Annotated[Path, typer.Argument(help="The backup file to write")],
    overwrite: Annotated[bool, typer.Option("--overwrite")] = False,
    verify: Annotated[
        bool | None,
        typer.Option(
            "--verify/--no-verify",
            help="PostgreSQL: restore it into a scratch database and compare row counts "
            "[default: backup_verify, on]",
        ),
    ] = None,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """A consistent online copy of the store (safe while a crawl writes): SQLite's backup API,
    or pg_dump's custom format for PostgreSQL."""
    from harvestman.store.lifecycle.pgdump import backup_postgres, verify_postgres_backup
    from harvestman.store.lifecycle.pgtools import PgTools
    from harvestman.store.lifecycle.sqlitebackup import backup_sqlite

    settings = load_settings(config, db, database_url)
    if out.exists() and not overwrite:
        raise usage_error(f"{out} exists: pass --overwrite to replace it")
    with errors_exit():
        path = sqlite_file(settings.database_url)
        if path is not None:
            written = backup_sqlite(path, out, overwrite=overwrite)
            print_report("backup written", written, as_json=as_json)
            return
        tools = PgTools.find(settings.backup_pg_bin_dir)
        report = backup_postgres(settings.database_url, out, overwrite=overwrite, tools=tools)
        if settings.backup_verify if verify is None else verify:
            admin_url = settings.backup_admin_url or settings.database_url
            report = verify_postgres_backup(report, admin_url, tools=tools)
    print_report("backup written", report, as_json=as_json)


def restore(
    source: Annotated[Path, typer.Argument(help="A backup made by `harvestman backup`")],
    force: Annotated[bool, typer.Option("--force", help="Replace an existing store")] = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Restore the store from a backup (refused while any process has it open)."""
    from harvestman.store.lifecycle.pgrestore import restore_postgres
    from harvestman.store.lifecycle.pgtools import PgTools
    from harvestman.store.lifecycle.sqlitebackup import restore_sqlite

    with open_store(config, db, database_url) as (settings, store):
        path = sqlite_file(settings.database_url)
        if path is not None:
            report: object = restore_sqlite(source, path, force=force)
        else:
            report = restore_postgres(
                source,
                settings.database_url,
                force=force,
                live_worker_seconds=LIVE_WORKER_SECONDS,
                tools=PgTools.find(settings.backup_pg_bin_dir),
            )
        store.schema.check_current()  # the engine connects only now, after the restore
    print_report("store restored", report, as_json=as_json)


def restore_archive(
    archive: Annotated[
        Path, typer.Argument(help="A pages-, products- or errors-<stamp>.jsonl.gz of retention")
    ],
    since: Annotated[
        str | None, typer.Option("--since", help="Only records from then on: 36h, 7d, a date")
    ] = None,
    domain: Annotated[
        str | None, typer.Option("--domain", help="Only this host and its subdomains")
    ] = None,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Load rows that retention archived back into the store (loading twice adds nothing)."""
    import time

    from harvestman.lifecycle.since import parse_since

    now = time.time()
    try:
        since_at = None if since is None else parse_since(since, now=now)
    except ValueError as exc:
        raise usage_error(f"--since: {exc}") from None
    if domain is not None and not 0 < len(domain.strip().strip(".")) <= 253:
        raise usage_error("--domain: a host name of 1 to 253 characters")
    with open_store(config, db, database_url, must_exist=True) as (_, store):
        store.schema.check_current()
        report = store.maintenance.restore_archive(archive, since=since_at, domain=domain, now=now)
    print_report("archive restored", report, as_json=as_json)


def replay(
    domain: Annotated[str, typer.Option("--domain", help="Host whose pages to re-process")],
    since: Annotated[str, typer.Option("--since", help="36h, 7d, an ISO date, or epoch")],
    dry_run: DryRunOption = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    name: ReadCrawlOption = None,
) -> None:
    """Re-queue stored pages of a domain fetched since T (after a parser change)."""
    import time

    from harvestman.lifecycle.since import parse_since

    now = time.time()
    try:
        since_at = parse_since(since, now=now)
    except ValueError as exc:
        raise usage_error(f"--since: {exc}") from None
    with open_crawl(config, db, database_url, name) as (_, store, crawl_id):
        plan = store.maintenance.replay(crawl_id, domain, since_at, dry_run=dry_run, now=now)
    title = "replay: what would be re-queued (dry run)" if dry_run else "replay: re-queued"
    print_report(title, plan, as_json=as_json)


def storage(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """What the store and the raw archive occupy, how fast they grow, when the disk is full."""
    import sys
    import time

    from harvestman.lifecycle.storage import storage_report

    with open_store(config, db, database_url, must_exist=True) as (settings, store):
        store.schema.check_current()
        report = storage_report(store.maintenance, settings, time.time())
    if as_json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2) + b"\n")
        return
    from rich.console import Console

    Console().print(*_render_storage(report))


def _render_storage(report: StorageReport) -> list[Table]:
    from rich.table import Table

    def size(value: int | float | None) -> str:
        if value is None:
            return "?"
        for unit in ("B", "KB", "MB", "GB", "TB"):
            if abs(value) < 1024 or unit == "TB":
                return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
            value /= 1024
        return ""  # unreachable: the loop returns at TB

    sizes = report.store
    tables = Table("table", "rows", "table", "indexes", "total",
                   title=f"{sizes.dialect} store: {size(sizes.total_bytes)}")  # fmt: skip
    for t in sizes.tables:
        rows = f"~{t.rows:,}" if t.rows_estimated else f"{t.rows:,}"
        tables.add_row(t.name, rows, size(t.table_bytes), size(t.index_bytes), size(t.total_bytes))
    indexes = Table("index", "table", "bytes", title="indexes")
    for i in sizes.indexes:
        indexes.add_row(i.name, i.table, size(i.bytes))
    archives = Table("raw archive", "objects", "bytes", title="raw archive")
    for a in report.archives:
        archives.add_row(a.location, "?" if a.objects is None else f"{a.objects:,}",
                         size(a.bytes) if a.error is None else a.error)  # fmt: skip
    growth = Table("UTC day", "pages", title=(
        f"growth: store {size(report.store_growth_bytes_per_day)}/day, "
        f"archive {size(report.archive_growth_bytes_per_day)}/day"))  # fmt: skip
    for day, pages in report.pages_per_day.items():
        growth.add_row(day, f"{pages:,}")
    disks = Table("disk", "holds", "free", "of", "per day", "full on", title="disks")
    for d in report.disks:
        disks.add_row(d.path, ", ".join(d.holds), size(d.free_bytes), size(d.total_bytes),
                      size(d.growth_bytes_per_day), d.full_on or "never")  # fmt: skip
    return [tables, indexes, archives, growth, disks]
