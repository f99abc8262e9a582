"""``maintenance``, ``backup``, ``restore`` and ``replay``: the store over time."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harvestman.cli.exits import err, errors_exit, usage_error
from harvestman.cli.options import (
    ConfigOption,
    DatabaseUrlOption,
    DbOption,
    DryRunOption,
    NameOption,
)
from harvestman.cli.stores import load_settings, open_crawl, open_store, sqlite_file
from harvestman.errors import ConfigError


def maintenance(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Apply the retention rules (export, then delete old rows) and compact the store."""
    import time

    from harvestman.lifecycle import RetentionRules

    with open_store(config, db, database_url, must_exist=True) as (settings, store):
        rules = RetentionRules.from_settings(settings)
        store.schema.check_current()
        report = store.apply_retention(rules, time.time())
    err.print(report)


def _sqlite_path(database_url: str) -> Path:
    path = sqlite_file(database_url)
    if path is None:
        raise ConfigError("backup and restore are for the SQLite store; PostgreSQL: see "
                          "docs/OPERATIONS.md (pg_dump / pg_restore)")  # fmt: skip
    return path


def backup(
    out: Annotated[Path, typer.Argument(help="The backup file to write")],
    overwrite: Annotated[bool, typer.Option("--overwrite")] = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """A consistent online copy of the SQLite store (safe while a crawl writes)."""
    from harvestman.lifecycle import backup_sqlite

    settings = load_settings(config, db, database_url)
    with errors_exit():
        report = backup_sqlite(_sqlite_path(settings.database_url), out, overwrite=overwrite)
    err.print(report)


def restore(
    source: Annotated[Path, typer.Argument(help="A backup made by `harvestman backup`")],
    force: Annotated[bool, typer.Option("--force", help="Replace an existing store")] = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Restore the SQLite store from a backup (refused while any process has it open)."""
    from harvestman.lifecycle import restore_sqlite

    with open_store(config, db, database_url) as (settings, store):
        report = restore_sqlite(source, _sqlite_path(settings.database_url), force=force)
        store.schema.check_current()  # the engine connects only now, after the copy
    err.print(report)


def replay(
    domain: Annotated[str, typer.Option("--domain", help="Host whose pages to re-process")],
    since: Annotated[str, typer.Option("--since", help="36h, 7d, an ISO date, or epoch")],
    dry_run: DryRunOption = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: NameOption = None,
) -> None:
    """Re-queue stored pages of a domain fetched since T (after a parser change)."""
    import time

    from harvestman.lifecycle import parse_since

    now = time.time()
    try:
        since_at = parse_since(since, now=now)
    except ValueError as exc:
        raise usage_error(f"--since: {exc}") from None
    with open_crawl(config, db, database_url, name) as (_, store, crawl_id):
        plan = store.replay(crawl_id, domain, since_at, dry_run=dry_run, now=now)
    err.print(plan)
