"""Backup and verification of a PostgreSQL store with ``pg_dump`` / ``pg_restore``.

The store is the schema its URL's ``search_path`` names (``public`` unless told otherwise): that
schema, and nothing else of the database, is dumped, in ``pg_dump``'s custom format
(compressed, restorable table by table).

- ``backup_postgres`` exports a snapshot from a ``REPEATABLE READ`` transaction, counts every
  table's rows in it, and runs ``pg_dump --snapshot`` on the same snapshot while the transaction
  stays open: the counts are exactly the rows in the file, whatever a crawl writes meanwhile.
  The file is written beside ``out_path``, fsynced and renamed into place.
- ``verify_postgres_backup`` restores the file into a scratch database of its own (created and
  dropped with ``CREATE DATABASE`` / ``DROP DATABASE ... WITH (FORCE)``) and compares the row
  count of every table with the counts taken at the dump: a backup is trusted only once it
  has been restored.

The restore into a store is ``pgrestore.restore_postgres``.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import Connection, Engine, text
from sqlalchemy.engine import make_url

from harvestman.errors import BackupFailed
from harvestman.store.dialect import make_engine
from harvestman.store.lifecycle.pgrestore import restore_schema
from harvestman.store.lifecycle.pgtools import (
    PgBackupReport,
    PgTools,
    current_schema,
    database_errors,
    revision_of,
    run_tool,
    table_counts,
)

__all__ = ["backup_postgres", "verify_postgres_backup"]


def backup_postgres(
    database_url: str,
    out_path: Path,
    *,
    overwrite: bool = False,
    tools: PgTools | None = None,
) -> PgBackupReport:
    """Dump the store at ``database_url`` to ``out_path`` (custom format), online, with the row
    count of every table at the dump.

    Raises ``FileExistsError`` when ``out_path`` exists and ``overwrite`` is false,
    ``BackupFailed`` when the database or ``pg_dump`` fails, ``ConfigError`` without the tools.
    """
    with database_errors(BackupFailed, "backup"):
        return _backup_postgres(database_url, out_path, overwrite=overwrite, tools=tools)


def verify_postgres_backup(
    report: PgBackupReport, admin_url: str, *, tools: PgTools | None = None
) -> PgBackupReport:
    """Restore ``report``'s file into a fresh scratch database on the server of ``admin_url``
    (a role that may ``CREATE DATABASE``), compare every table's rows with ``report.tables``,
    drop the scratch database. Returns the report marked verified; raises ``BackupFailed``
    when the restore fails or any count differs."""
    with database_errors(BackupFailed, "verification"):
        return _verify_postgres_backup(report, admin_url, tools=tools)


def _backup_postgres(
    database_url: str,
    out_path: Path,
    *,
    overwrite: bool = False,
    tools: PgTools | None = None,
) -> PgBackupReport:
    """``backup_postgres`` without the translation of the driver's errors."""
    started = time.monotonic()
    tools = tools or PgTools.find()
    out_path = Path(out_path)
    if out_path.exists() and not overwrite:
        raise FileExistsError(f"{out_path} exists: pass overwrite to replace it")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    partial = out_path.with_name(out_path.name + ".partial")
    partial.unlink(missing_ok=True)
    engine = make_engine(database_url)
    try:
        with _snapshot(engine) as (conn, snapshot):
            schema = current_schema(conn)
            tables = table_counts(conn, schema)
            revision = revision_of(conn, schema)
            run_tool(
                [str(tools.pg_dump), "--format=custom", f"--schema={schema}",
                 f"--snapshot={snapshot}", "--no-owner", f"--file={partial}"],
                engine.url, BackupFailed, "pg_dump",
            )  # fmt: skip
        _fsync(partial)
        os.replace(partial, out_path)
        _fsync(out_path.parent)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finally:
        engine.dispose()
    return PgBackupReport(
        out_path,
        out_path.stat().st_size,
        schema,
        revision,
        tables,
        seconds=time.monotonic() - started,
    )


def _verify_postgres_backup(
    report: PgBackupReport, admin_url: str, *, tools: PgTools | None = None
) -> PgBackupReport:
    """``verify_postgres_backup`` without the translation of the driver's errors."""
    started = time.monotonic()
    tools = tools or PgTools.find()
    name = f"harvestman_verify_{uuid.uuid4().hex[:12]}"
    admin = make_engine(admin_url).execution_options(isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            scratch_url = make_url(admin_url).set(database=name, query={})
            scratch = make_engine(scratch_url.render_as_string(hide_password=False))
            try:
                restore_schema(
                    scratch, report.path, report.schema, report.schema, tools, BackupFailed
                )
                with scratch.connect() as conn:
                    restored = table_counts(conn, report.schema)
            finally:
                scratch.dispose()
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
    if restored != report.tables:
        differ = sorted(
            f"{table}: {report.tables.get(table)} dumped, {restored.get(table)} restored"
            for table in set(restored) | set(report.tables)
            if restored.get(table) != report.tables.get(table)
        )
        raise BackupFailed(f"{report.path} does not restore what was dumped: {'; '.join(differ)}")
    return PgBackupReport(
        report.path,
        report.bytes,
        report.schema,
        report.revision,
        report.tables,
        verified=True,
        seconds=report.seconds + time.monotonic() - started,
    )


@contextlib.contextmanager
def _snapshot(engine: Engine) -> Iterator[tuple[Connection, str]]:
    """A connection in a REPEATABLE READ transaction and the id of its exported snapshot; the
    snapshot is usable (by ``pg_dump --snapshot``) until the block ends."""
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            snapshot = str(conn.execute(text("SELECT pg_export_snapshot()")).scalar_one())
            yield conn, snapshot


def _fsync(path: Path) -> None:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if path.is_dir() else os.O_RDONLY
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
