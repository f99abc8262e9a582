"""Backup, verification and restore of a PostgreSQL store with ``pg_dump`` / ``pg_restore``.

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
- ``restore_postgres`` refuses a file ``pg_restore`` cannot list or that holds no Harvestman
  store, a target another connection or a live worker is using, and a target schema that holds
  a store already (unless ``force``: the schema is then dropped first). The restore is one
  transaction (``--single-transaction``): interrupted, it leaves the target as it was. The
  dumped schema may differ from the target's (a backup of ``public`` restored into a schema
  ``crawls_2025``): it is restored under its own name, then renamed.

Passwords reach the tools through ``PGPASSWORD``, never their command line.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Connection, Engine, text
from sqlalchemy.engine import URL, make_url

from harvestman.errors import BackupFailed, ConfigError, RestoreRefused, StoreError
from harvestman.store.dialect import make_engine

__all__ = [
    "PgBackupReport",
    "PgTools",
    "backup_postgres",
    "restore_postgres",
    "table_counts",
    "verify_postgres_backup",
]

TOOL_TIMEOUT = 6 * 3600.0  # seconds: a dump or restore that takes longer has hung
_LISTED_TABLE = re.compile(r"^\d+; \d+ \d+ TABLE (\S+) (\S+) ")


@dataclass(frozen=True, slots=True)
class PgTools:
    """Where ``pg_dump`` and ``pg_restore`` are."""

    pg_dump: Path
    pg_restore: Path

    @classmethod
    def find(cls, bin_dir: str | None = None) -> PgTools:
        """The tools in ``bin_dir``, else on ``PATH``, else in the newest
        ``/usr/lib/postgresql/*/bin`` (Debian keeps them there). Raises ``ConfigError`` when
        they are nowhere."""
        dirs = [bin_dir] if bin_dir else [None, *_debian_bin_dirs()]
        for where in dirs:
            dump = shutil.which("pg_dump", path=where)
            restore = shutil.which("pg_restore", path=where)
            if dump and restore:
                return cls(Path(dump), Path(restore))
        raise ConfigError(
            "pg_dump / pg_restore not found"
            + (f" in {bin_dir}" if bin_dir else " on PATH or in /usr/lib/postgresql/*/bin")
            + " (Debian: apt-get install postgresql-client)"
        )


def _debian_bin_dirs() -> list[str]:
    def version(path: str) -> float:
        try:
            return float(Path(path).parent.name)
        except ValueError:
            return 0.0

    return sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)


@dataclass(frozen=True, slots=True)
class PgBackupReport:
    """A written (or restored) PostgreSQL backup: where, how big, the rows of each table at the
    dump, the schema revision, whether a restore of it was verified, how long it all took."""

    path: Path
    bytes: int
    schema: str
    revision: str | None
    tables: dict[str, int] = field(repr=False)
    verified: bool = False
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        return sum(self.tables.values())


def backup_postgres(
    database_url: str,
    out_path: Path,
    *,
    overwrite: bool = False,
    tools: PgTools | None = None,
) -> PgBackupReport:
    """Dump the store at ``database_url`` to ``out_path`` (custom format), online.

    Raises ``FileExistsError`` when ``out_path`` exists and ``overwrite`` is false,
    ``BackupFailed`` when ``pg_dump`` fails, ``ConfigError`` without the tools.
    """
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
            schema = _current_schema(conn)
            tables = table_counts(conn, schema)
            revision = _revision(conn, schema)
            _run(
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


def verify_postgres_backup(
    report: PgBackupReport, admin_url: str, *, tools: PgTools | None = None
) -> PgBackupReport:
    """Restore ``report``'s file into a fresh scratch database on the server of ``admin_url``
    (a role that may ``CREATE DATABASE``), compare every table's rows with ``report.tables``,
    drop the scratch database. Returns the report marked verified; raises ``BackupFailed``
    when the restore fails or any count differs."""
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
                _restore(scratch, report.path, report.schema, report.schema, tools, BackupFailed)
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

    Raises ``StoreError`` when the file is no ``pg_dump`` archive of a Harvestman store;
    ``RestoreRefused`` when another connection has the target database open, a worker beat in
    the last ``live_worker_seconds``, or the target schema holds a store and ``force`` is
    false. The caller runs migrations afterwards when the backup is older than the code.
    """
    started = time.monotonic()
    tools = tools or PgTools.find()
    backup_path = Path(backup_path)
    dumped = _dumped_schema(backup_path, tools)
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            target = _current_schema(conn)
            _refuse_if_in_use(
                conn, target, live_worker_seconds, time.time() if now is None else now
            )
            has_store = _has_table(conn, target, "crawls")
        if has_store and not force:
            raise RestoreRefused(
                f"schema {target} holds a store already: pass force to overwrite it"
            )
        _restore(engine, backup_path, dumped, target, tools, StoreError)
        with engine.connect() as conn:
            tables = table_counts(conn, target)
            revision = _revision(conn, target)
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


def table_counts(conn: Connection, schema: str) -> dict[str, int]:
    """The rows of every table in ``schema``, by table name."""
    names = conn.execute(
        text("SELECT tablename FROM pg_tables WHERE schemaname = :schema ORDER BY tablename"),
        {"schema": schema},
    ).scalars()
    quote = conn.dialect.identifier_preparer.quote
    return {
        str(name): int(
            conn.execute(text(f"SELECT count(*) FROM {quote(schema)}.{quote(name)}")).scalar_one()
        )
        for name in list(names)
    }


# -- the parts --------------------------------------------------------------------------------


@contextlib.contextmanager
def _snapshot(engine: Engine) -> Iterator[tuple[Connection, str]]:
    """A connection in a REPEATABLE READ transaction and the id of its exported snapshot; the
    snapshot is usable (by ``pg_dump --snapshot``) until the block ends."""
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            snapshot = str(conn.execute(text("SELECT pg_export_snapshot()")).scalar_one())
            yield conn, snapshot


def _restore(
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
        if dumped != target and _schema_exists(conn, dumped):
            if _has_any_table(conn, dumped):
                raise RestoreRefused(
                    f"the backup's schema {dumped} holds tables in the target database: "
                    f"restore into {dumped}, or move them"
                )
            dumped_aside = f"{dumped[:40]}_aside_{suffix}"
            conn.execute(text(f"ALTER SCHEMA {quote(dumped)} RENAME TO {quote(dumped_aside)}"))
        if _schema_exists(conn, target):
            old_target = f"{target[:40]}_old_{suffix}"
            conn.execute(text(f"ALTER SCHEMA {quote(target)} RENAME TO {quote(old_target)}"))
    url = engine.url.set(query={})  # its search_path names the schema just renamed
    try:
        _run(
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


def _schema_exists(conn: Connection, schema: str) -> bool:
    found = conn.execute(
        text("SELECT 1 FROM pg_namespace WHERE nspname = :schema"), {"schema": schema}
    )
    return found.first() is not None


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
        )
    ).scalar_one()
    if others:
        raise RestoreRefused(
            f"{others} other connection(s) have the target database open (stop the service "
            "and its workers first)"
        )
    if _has_table(conn, schema, "workers"):
        quote = conn.dialect.identifier_preparer.quote
        live = conn.execute(
            text(f"SELECT count(*) FROM {quote(schema)}.workers WHERE heartbeat_at >= :since"),
            {"since": now - live_seconds},
        ).scalar_one()
        if live:
            raise RestoreRefused(f"{live} worker(s) beat in the last {live_seconds:g} s")


def _current_schema(conn: Connection) -> str:
    schema = conn.execute(text("SELECT current_schema()")).scalar_one_or_none()
    if schema is None:
        raise ConfigError("the database URL's search_path names no existing schema")
    return str(schema)


def _has_table(conn: Connection, schema: str, name: str) -> bool:
    found = conn.execute(
        text("SELECT 1 FROM pg_tables WHERE schemaname = :schema AND tablename = :name"),
        {"schema": schema, "name": name},
    )
    return found.first() is not None


def _has_any_table(conn: Connection, schema: str) -> bool:
    found = conn.execute(
        text("SELECT 1 FROM pg_tables WHERE schemaname = :schema LIMIT 1"), {"schema": schema}
    )
    return found.first() is not None


def _revision(conn: Connection, schema: str) -> str | None:
    if not _has_table(conn, schema, "alembic_version"):
        return None
    quote = conn.dialect.identifier_preparer.quote
    found = conn.execute(text(f"SELECT version_num FROM {quote(schema)}.alembic_version"))
    value = found.scalar_one_or_none()
    return None if value is None else str(value)


def _run(
    argv: list[str], url: URL, error: type[StoreError], what: str
) -> subprocess.CompletedProcess[str]:
    """Run a PostgreSQL tool against ``url``'s database; ``error`` when it fails."""
    try:
        done = subprocess.run(
            argv,
            env={**os.environ, **_libpq_env(url)},
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise error(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        raise error(f"{what} failed ({done.returncode}): {done.stderr.strip()[:500]}")
    return done


def _libpq_env(url: URL) -> dict[str, str]:
    """libpq's environment for ``url``: the tools get no URL (its password would show in
    ``ps``)."""
    env = {"PGAPPNAME": "harvestman-backup"}
    for name, value in (
        ("PGHOST", url.host),
        ("PGPORT", url.port),
        ("PGUSER", url.username),
        ("PGPASSWORD", url.password),
        ("PGDATABASE", url.database),
    ):
        if value is not None:
            env[name] = str(value)
    for key, name in (("options", "PGOPTIONS"), ("sslmode", "PGSSLMODE")):
        option = url.query.get(key)
        if option is not None:
            env[name] = option if isinstance(option, str) else option[0]
    return env


def _fsync(path: Path) -> None:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if path.is_dir() else os.O_RDONLY
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
