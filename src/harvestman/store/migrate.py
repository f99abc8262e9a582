"""Schema migrations: ``harvestman db upgrade|downgrade|current`` and the start-up check."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, inspect, text

from harvestman.errors import SchemaOutdated
from harvestman.store.dialect import is_sqlite
from harvestman.store.search.index import include_name

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).with_name("migrations")

# The code's head revision, for the start-up checks: they compare it with the database's
# revision without loading Alembic, whose import and reading of the scripts cost every command
# ~60 ms of its start (a crawl's 0.7 s, quiet machine). A new migration moves it; a test
# (tests/test_store_migrate.py) keeps it equal to the scripts' head.
HEAD = "0028"
VERSION_TABLE = "alembic_version"  # Alembic's default, which migrations/env.py keeps

# How autogenerate compares the models with a database, for ``alembic`` (migrations/env.py) and
# ``drift``: types and server defaults too, and never the search index, which lives outside
# ``schema.metadata`` (one dialect each, migration 0006), nor SQLite's ix_urls_lease (0027).
COMPARE_OPTIONS: dict[str, Any] = {
    "include_name": include_name,
    "compare_type": True,
    "compare_server_default": True,
}


def alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    url = engine.url.render_as_string(hide_password=False)
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))  # configparser escaping
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    config = alembic_config(engine)
    with migrating(engine) as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def downgrade(engine: Engine, revision: str) -> None:
    from alembic import command

    config = alembic_config(engine)
    with migrating(engine) as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)


@contextlib.contextmanager
def migrating(engine: Engine) -> Iterator[Connection]:
    """A transaction to migrate in. On SQLite, foreign keys are off meanwhile: rebuilding a
    table (batch mode) drops the old one, and with them on, the drop would cascade to every
    row that refers to it. They are checked before the commit instead."""
    if not is_sqlite(engine):
        with engine.begin() as conn:
            yield conn
        return
    with engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        raw.execute("PRAGMA foreign_keys=OFF")  # outside a transaction, or it does nothing
        try:
            with conn.begin():
                yield conn
                broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise SchemaOutdated(f"the migration broke foreign keys: {broken[:5]}")
        finally:
            raw.execute("PRAGMA foreign_keys=ON")


def drift(engine: Engine) -> list[Any]:
    """What ``alembic revision --autogenerate`` would write for the database behind ``engine``:
    the differences between it and the models (``schema.metadata`` with the job tables), in
    Alembic's diff form. Empty when models and migrations agree."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    import harvestman.store.jobs.tables  # noqa: F401  (its tables join the metadata)
    from harvestman.store.schema import metadata

    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts=COMPARE_OPTIONS)
        return list(compare_metadata(context, metadata))


def current_revision(engine: Engine) -> str | None:
    """The database's revision, as Alembic records it (None: an empty database), read with
    one query rather than through Alembic."""
    with engine.connect() as conn:
        if not inspect(conn).has_table(VERSION_TABLE):
            return None
        revisions = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    if len(revisions) > 1:  # the history is one line: Alembic would refuse it too
        raise SchemaOutdated(f"the database records several revisions: {sorted(revisions)}")
    return revisions[0] if revisions else None


def head_revision(engine: Engine) -> str | None:
    """The head of the migration scripts (Alembic reads them): :data:`HEAD`, as a test keeps."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


def check_current(engine: Engine) -> None:
    """Raise SchemaOutdated when the database is not at the code's head revision."""
    current = current_revision(engine)
    if current != HEAD:
        raise SchemaOutdated(
            f"the database schema is at {current or 'nothing'}, the code needs {HEAD}: "
            "run `harvestman db upgrade`"
        )


class Schema:
    """The migrations of one store's database (``SqlStore.schema``), for callers that hold the
    store rather than its engine: ``harvestman db``, the start-up checks."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def upgrade(self, revision: str = "head") -> None:
        upgrade(self._engine, revision)

    def downgrade(self, revision: str) -> None:
        downgrade(self._engine, revision)

    def current_revision(self) -> str | None:
        return current_revision(self._engine)

    def head_revision(self) -> str | None:
        return head_revision(self._engine)

    def check_current(self) -> None:
        """Raise SchemaOutdated when the database is not at the code's head revision."""
        check_current(self._engine)
