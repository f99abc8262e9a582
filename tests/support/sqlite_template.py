"""One migrated SQLite schema per test process, copied into every fresh SQLite store.

Migrating an empty SQLite file to the head revision runs every Alembic revision (twenty-odd,
with table rebuilds): a few hundred milliseconds, paid by each test that opens a store. The
conftest's autouse fixture puts ``upgrade`` below in place of ``harvestman.store.migrate.upgrade``:
on an EMPTY SQLite database asked for ``head`` it copies a template migrated once in this process
(SQLite's backup API, through the engine's own connection, so an engine already open on the file
is fine); anything else (a revision other than head, a database with tables, PostgreSQL) goes to
the real migration. The template is made by that real migration, so the copy holds the same
schema and the same ``alembic_version``. A test about the migrations themselves opts out with
``@pytest.mark.migrate_from_scratch``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine

from harvestman.store import dialect, template

Upgrade = Callable[..., None]


class SchemaTemplate:
    """The template file of one test process, made on first use by ``real_upgrade``."""

    def __init__(self, directory: Path, real_upgrade: Upgrade) -> None:
        self._path = directory / "schema-template.db"
        self._real_upgrade = real_upgrade
        self._lock = threading.Lock()  # stores migrate in their own threads
        self._ready = False
        self.copies = 0

    def path(self) -> Path:
        with self._lock:
            if not self._ready:
                engine = dialect.make_engine(f"sqlite:///{self._path}")
                try:
                    self._real_upgrade(engine)
                    with engine.connect() as conn:  # one file, no -wal beside it to copy
                        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                finally:
                    engine.dispose()
                self._ready = True
        return self._path

    def upgrade(self, engine: Engine, revision: str = "head") -> None:
        """``migrate.upgrade``, with a fresh SQLite database copied from the template."""
        if revision != "head" or not dialect.is_sqlite(engine) or not _empty(engine):
            self._real_upgrade(engine, revision)
            return
        template.copy_into(self.path(), engine)
        self.copies += 1


def _empty(engine: Engine) -> bool:
    if engine.url.database in (None, "", ":memory:"):
        return False  # each connection of an in-memory database is a database of its own
    with engine.connect() as conn:
        count = conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar_one()
    return int(count) == 0
