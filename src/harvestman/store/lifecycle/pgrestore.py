"""Restore of a PostgreSQL store from a ``pg_dump`` backup (``pgdump.backup_postgres``).

``restore_postgres`` refuses a file ``pg_restore`` cannot list or that holds no Harvestman store,
a target another connection or a live worker is using, and a target schema that holds a store
already (unless ``force``). The restore is one transaction (``--single-transaction``) and the old
schema is only set aside until it succeeds: interrupted, it leaves the target as it was. The
dumped schema may differ from the target's (a backup of ``public`` restored into a schema
``crawls_2025``): it is restored under its own name, then renamed.
"""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from pathlib import Path

from sqlalchemy import Connection, Engine, text

from harvestman.errors import RestoreRefused, StoreError
from harvestman.store.dialect import make_engine
from harvestman.store.lifecycle.pgtools import (
    PgBackupReport,
    PgTools,
    current_schema,
    database_errors,
    has_any_table,
    has_table,
    revision_of,
    run_tool,
    schema_exists,
    table_counts,
)

__all__ = ["restore_postgres", "restore_schema"]

_LISTED_TABLE = re.compile(r"^\d+; \d+ \d+ TABLE (\S+) (\S+) ")


def restore_postgres(
    backup_path: Path,
    database_url: str,
    *,
    force: bool = False,
    live_worker_seconds: float = 60.0,
    tools: PgTools | None = None,
    now: float | None = None,
) -> PgBackupReport:
    """Replace the store at ``database_url`` (its schema) with the backup at ``backup_path``.

    Raises ``StoreError`` when the file is no ``pg_dump`` archive of a Harvestman store or the
    database fails; ``RestoreRefused`` when another connection has the target database open, a
    worker beat in the last ``live_worker_seconds``, or the target schema holds a store and
    ``force`` is false. The caller runs migrations afterwards when the backup is older than the
    code.
    """
    with database_errors(StoreError, "restore"):
        return _restore_postgres(
            backup_path,
            database_url,
            force=force,
            live_worker_seconds=live_worker_seconds,
            tools=tools,
            now=now,
        )


def _restore_postgres(
    backup_path: Path,
    database_url: str,
    *,
    force: bool = False,
    live_worker_seconds: float = 60.0,
    tools: PgTools | None = None,
    now: float | None = None,
) -> PgBackupReport:
    """``restore_postgres`` without the translation of the driver's errors."""
    started = time.monotonic()
    tools = tools or PgTools.find()
    backup_path = Path(backup_path)
    dumped = _dumped_schema(backup_path, tools)
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            target = current_schema(conn)
            _refuse_if_in_use(
                conn, target, live_worker_seconds, time.time() if now is None else now
            )
            has_store = has_table(conn, target, "crawls")
        if has_store and not force:
            raise RestoreRefused(
                f"schema {target} holds a store already: pass force to overwrite it"
            )
        restore_schema(engine, backup_path, dumped, target, tools, StoreError)
        with engine.connect() as conn:
            tables = table_counts(conn, target)
            revision = revision_of(conn, target)
    finally:
        engine.dispose()
    return PgBackupReport(
        backup_path,
        backup_path.stat().st_size,
        target,
        revision,
        tables,
        seconds=time.monotonic() - started,
    )


def restore_schema(
    engine: Engine,
    path: Path,
    dumped: str,
    target: str,
    tools: PgTools,
    error: type[StoreError],
) -> None:
    """Restore ``path`` (the schema ``dumped``) as the schema ``target`` of ``engine``'s
    database, replacing what ``target`` holds.

    pg_restore creates the dumped schema itself, so the name must be free: what holds it (the
    old ``target``, or a fresh database's empty ``public``) is renamed aside first. On success
    the old ``target`` is dropped and an empty ``dumped`` schema set aside gets its name back;
    on failure both are put back as they were (``--single-transaction``: nothing half-restored
    remains).
    """
    quote = engine.dialect.identifier_preparer.quote
    suffix = uuid.uuid4().hex[:8]
    old_target = dumped_aside = None
    with engine.begin() as conn:
        if dumped != target and schema_exists(conn, dumped):
            if has_any_table(conn, dumped):
                raise RestoreRefused(
                    f"the backup's schema {dumped} holds tables in the target database: "
                    f"restore into {dumped}, or move them"
                )
            dumped_aside = f"{dumped[:40]}_aside_{suffix}"
            conn.execute(text(f"ALTER SCHEMA {quote(dumped)} RENAME TO {quote(dumped_aside)}"))
        if schema_exists(conn, target):
            old_target = f"{target[:40]}_old_{suffix}"
            conn.execute(text(f"ALTER SCHEMA {quote(target)} RENAME TO {quote(old_target)}"))
    url = engine.url.set(query={})  # its search_path names the schema just renamed
    try:
        run_tool(
            [str(tools.pg_restore), "--no-owner", "--no-privileges", "--exit-on-error",
             "--single-transaction", f"--dbname={url.database}", str(path)],
            url, error, "pg_restore",
        )  # fmt: skip
    except BaseException:
        with engine.begin() as conn:
            if old_target is not None:
                conn.execute(text(f"ALTER SCHEMA {quote(old_target)} RENAME TO {quote(target)}"))
            if dumped_aside is not None:
                conn.execute(text(f"ALTER SCHEMA {quote(dumped_aside)} RENAME TO {quote(dumped)}"))
        raise
    with engine.begin() as conn:
        if dumped != target:
            conn.execute(text(f"ALTER SCHEMA {quote(dumped)} RENAME TO {quote(target)}"))
        if dumped_aside is not None:
            conn.execute(text(f"ALTER SCHEMA {quote(dumped_aside)} RENAME TO {quote(dumped)}"))
        if old_target is not None:
            conn.execute(text(f"DROP SCHEMA {quote(old_target)} CASCADE"))


def _dumped_schema(path: Path, tools: PgTools) -> str:
    """The schema a Harvestman backup holds; ``StoreError`` for anything else."""
    if not path.is_file():
        raise StoreError(f"{path} is not a file")
    listed = subprocess.run(
        [str(tools.pg_restore), "--list", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if listed.returncode != 0:
        raise StoreError(f"{path} is not a pg_dump archive: {listed.stderr.strip()[:300]}")
    tables: dict[str, set[str]] = {}
    for line in listed.stdout.splitlines():
        if match := _LISTED_TABLE.match(line):
            tables.setdefault(match[1], set()).add(match[2])
    stores = [schema for schema, names in tables.items() if {"crawls", "alembic_version"} <= names]
    if len(stores) != 1:
        raise StoreError(f"{path} is not a backup of one Harvestman store")
    return stores[0]


def _refuse_if_in_use(conn: Connection, schema: str, live_seconds: float, now: float) -> None:
    others = conn.execute(
        text(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            # Clients only: an autovacuum worker passing by is no reason to refuse.
            " AND backend_type = 'client backend'"
        )
    ).scalar_one()
    if others:
        raise RestoreRefused(
            f"{others} other connection(s) have the target database open (stop the service "
            "and its workers first)"
        )
    if has_table(conn, schema, "workers"):
        quote = conn.dialect.identifier_preparer.quote
        live = conn.execute(
            text(f"SELECT count(*) FROM {quote(schema)}.workers WHERE heartbeat_at >= :since"),
            {"since": now - live_seconds},
        ).scalar_one()
        if live:
            raise RestoreRefused(f"{live} worker(s) beat in the last {live_seconds:g} s")
