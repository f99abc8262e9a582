"""What the PostgreSQL backups share: where ``pg_dump`` / ``pg_restore`` are and how they are run
(``PGPASSWORD``, never a URL on their command line), the report of a backup, and the catalogue
queries (row counts, schemas, the revision)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Connection, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError

from harvestman.errors import ConfigError, StoreError

__all__ = ["PgBackupReport", "PgTools", "table_counts"]

TOOL_TIMEOUT = 6 * 3600.0  # seconds: a dump or restore that takes longer has hung


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


@contextlib.contextmanager
def database_errors(error: type[StoreError], what: str) -> Iterator[None]:
    """The driver's errors (an unreachable server, a missing role) as ``error``."""
    try:
        yield
    except SQLAlchemyError as exc:
        first = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise error(f"{what} failed: {type(exc).__name__}: {first}") from exc


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


def current_schema(conn: Connection) -> str:
    schema = conn.execute(text("SELECT current_schema()")).scalar_one_or_none()
    if schema is None:
        raise ConfigError("the database URL's search_path names no existing schema")
    return str(schema)


def has_table(conn: Connection, schema: str, name: str) -> bool:
    found = conn.execute(
        text("SELECT 1 FROM pg_tables WHERE schemaname = :schema AND tablename = :name"),
        {"schema": schema, "name": name},
    )
    return found.first() is not None


def has_any_table(conn: Connection, schema: str) -> bool:
    found = conn.execute(
        text("SELECT 1 FROM pg_tables WHERE schemaname = :schema LIMIT 1"), {"schema": schema}
    )
    return found.first() is not None


def revision_of(conn: Connection, schema: str) -> str | None:
    if not has_table(conn, schema, "alembic_version"):
        return None
    quote = conn.dialect.identifier_preparer.quote
    found = conn.execute(text(f"SELECT version_num FROM {quote(schema)}.alembic_version"))
    value = found.scalar_one_or_none()
    return None if value is None else str(value)


def schema_exists(conn: Connection, schema: str) -> bool:
    found = conn.execute(
        text("SELECT 1 FROM pg_namespace WHERE nspname = :schema"), {"schema": schema}
    )
    return found.first() is not None


def run_tool(
    argv: list[str], url: URL, error: type[StoreError], what: str
) -> subprocess.CompletedProcess[str]:
    """Run a PostgreSQL tool against ``url``'s database; ``error`` when it fails."""
    try:
        done = subprocess.run(
            argv,
            env={**os.environ, **libpq_env(url)},
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


def libpq_env(url: URL) -> dict[str, str]:
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
