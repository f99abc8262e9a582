"""Alembic environment: runs the same migrations on SQLite and PostgreSQL."""

from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool

import harvestman.store.jobs.tables  # noqa: F401  (its tables join the metadata)
from harvestman.search import include_name
from harvestman.store.schema import metadata

config = context.config


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=metadata,
        include_name=include_name,  # the search index lives outside metadata (migration 0006)
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = engine_from_config(
        config.get_section(config.config_ini_section, {}),
        prefix="sqlalchemy.",
        poolclass=pool.NullPool,
    )
    with engine.connect() as conn:
        _run(conn)


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    # render_as_batch: SQLite cannot ALTER most things; batch mode rebuilds the table instead.
    context.configure(
        connection=connection,
        target_metadata=metadata,
        include_name=include_name,  # the search index lives outside metadata (migration 0006)
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
