"""A new SQLite database as a copy of one the migrations made: the schema template.

Migrating an empty SQLite file to the head runs every Alembic revision (25, with table
rebuilds): importing Alembic and running them was most of the CPU of a crawl's start on a new
database (bench/README.md, "Start-up"). The first time, the migrations run into a template in
``directory`` (the ``store_schema_cache`` setting), named after the head and a digest of the
migration scripts (they import nothing of ours) and the SQLite and SQLAlchemy versions; every
empty database is then a copy of it (SQLite's backup API): the schema and ``alembic_version``
those migrations made. Alembic stays the one source of the schema.

A template is migrated into a file of its own and renamed into place, so a crawl starting beside
another never reads half of one. Whatever fails on the way (a directory that cannot be written,
a damaged template) leaves the migrations to run as they would without a template.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
from pathlib import Path

import sqlalchemy
from sqlalchemy import Engine

from harvestman.store import dialect, migrate

log = logging.getLogger(__name__)


def ready_schema(engine: Engine, directory: Path | None) -> None:
    """Bring the SQLite database behind ``engine`` to the head: nothing to do at the head; an
    empty one copied from the template in ``directory`` (when given); else migrated. Alembic is
    loaded only to migrate."""
    current = migrate.current_revision(engine)
    if current == migrate.HEAD:
        return
    if current is None and directory is not None and copy_schema(engine, directory):
        return
    migrate.upgrade(engine)


def template_name() -> str:
    """The template's file name: the head revision and a digest of what made the schema.

    >>> template_name().startswith(f"schema-{migrate.HEAD}-")
    True
    """
    digest = hashlib.sha256(f"{sqlite3.sqlite_version} {sqlalchemy.__version__}".encode())
    scripts = [migrate.MIGRATIONS / "env.py", *sorted(migrate.MIGRATIONS.glob("versions/*.py"))]
    for script in scripts:
        digest.update(script.name.encode() + b"\0" + script.read_bytes())
    return f"schema-{migrate.HEAD}-{digest.hexdigest()[:16]}.db"


def copy_schema(engine: Engine, directory: Path) -> bool:
    """Fill the empty SQLite database behind ``engine`` from the template in ``directory``
    (made first if it is not there). False: nothing was copied (not an empty SQLite file, or
    the template could not be made or read); the caller migrates."""
    if not dialect.is_sqlite(engine) or not _is_empty(engine):
        return False
    try:
        template = directory.expanduser() / template_name()
        if not template.exists():
            _make(template)
        _copy(template, engine)
    except Exception as exc:  # a cache that fails costs the migrations, never the crawl
        log.info("no schema template in %s (%s): migrating", directory, exc)
        return False
    return migrate.current_revision(engine) == migrate.HEAD


def _is_empty(engine: Engine) -> bool:
    if engine.url.database in (None, "", ":memory:"):
        return False  # each connection of an in-memory database is a database of its own
    with engine.connect() as conn:
        return int(conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar_one()) == 0


def _make(template: Path) -> None:
    template.parent.mkdir(parents=True, exist_ok=True)
    making = template.with_name(f"{template.name}.{os.getpid()}.tmp")
    engine = dialect.make_engine(f"sqlite:///{making}")
    try:
        migrate.upgrade(engine)
        engine.dispose()
        # One file, read without a -wal and -shm beside it; a copy into a store keeps that
        # store's WAL mode.
        made = sqlite3.connect(making)
        try:
            made.execute("PRAGMA journal_mode=DELETE")
        finally:
            made.close()
        os.replace(making, template)
    finally:
        engine.dispose()
        for leftover in (making, Path(f"{making}-wal"), Path(f"{making}-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _copy(template: Path, engine: Engine) -> None:
    source = sqlite3.connect(f"file:{template}?mode=ro", uri=True)
    try:
        with engine.connect() as conn:
            target = conn.connection.dbapi_connection
            assert target is not None
            source.backup(target)  # type: ignore[arg-type]
    finally:
        source.close()
