"""``harvestman db``: schema migrations (Alembic) on the store the options name."""

from __future__ import annotations

from typing import Annotated

import typer

from harvestman.cli.exits import err
from harvestman.cli.options import ConfigOption, DatabaseUrlOption, DbOption
from harvestman.cli.stores import open_store

db_app = typer.Typer(help="Database schema migrations (Alembic).", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision")] = "head",
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Migrate the schema up (to the newest revision by default)."""
    with open_store(config, db, database_url) as (_, store):
        store.schema.upgrade(revision)
        err.print(f"schema at {store.schema.current_revision()}")


# A relative revision starts with a dash (-1): without this Click reads it as an option.
@db_app.command("downgrade", context_settings={"ignore_unknown_options": True})
def db_downgrade(
    revision: Annotated[str, typer.Argument(help="Target revision, e.g. -1 or base")],
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Migrate the schema down to REVISION."""
    with open_store(config, db, database_url, must_exist=True) as (_, store):
        store.schema.downgrade(revision)
        err.print(f"schema at {store.schema.current_revision() or 'base'}")


@db_app.command("current")
def db_current(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Print the schema revision of the database and of the code."""
    with open_store(config, db, database_url, must_exist=True) as (_, store):
        current = store.schema.current_revision()
        head = store.schema.head_revision()
    typer.echo(f"database: {current or 'empty'}\ncode:     {head}")
    if current != head:
        typer.echo("run `harvestman db upgrade` to migrate")
