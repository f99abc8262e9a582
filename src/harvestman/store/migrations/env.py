"""Alembic environment: runs the same migrations on SQLite and PostgreSQL.

The application passes its connection in (``store/migrate.py``). The ``alembic`` command of a
contributor (the root ``alembic.ini``) names no URL: the database is then
``HARVESTMAN_DATABASE_URL``, else ``./harvestman.db``.
"""

from __future__ import annotations

import os

from alembic import context

import harvestman.store.jobs.tables  # noqa: F401  (its tables join the metadata)
from harvestman.store.dialect import make_engine
from harvestman.store.migrate import COMPARE_OPTIONS, migrating
from harvestman.store.schema import metadata

config = context.config


def _url() -> str:
    return config.get_main_option("sqlalchemy.url") or os.environ.get(
        "HARVESTMAN_DATABASE_URL", "sqlite:///harvestman.db"
    )


def run_migrations_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=metadata,
        literal_binds=True,
        render_as_batch=True,
        **COMPARE_OPTIONS,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    # The store's engine (psycopg for postgresql://, the SQLite pragmas) and its migration
    # transaction (SQLite's foreign keys off while batch mode rebuilds tables).
    engine = make_engine(_url())
    try:
        with migrating(engine) as conn:
            _run(conn)
    finally:
        engine.dispose()


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    # render_as_batch: SQLite cannot ALTER most things; batch mode rebuilds the table instead.
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=True,
        **COMPARE_OPTIONS,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
