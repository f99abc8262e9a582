"""How a command gets its settings and its store: one ``open_store``, which always disposes.

Settings come from defaults < the ``--config`` file < ``HARVESTMAN_*`` < the command's flags.
A command that only reads (or changes rows of an existing crawl) opens with ``must_exist``: a
SQLite file that is not there is refused before SQLite would create an empty one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvestman.cli.exits import err, errors_exit, usage_error
from harvestman.cli.options import CONFIG_ENV
from harvestman.errors import ConfigError

if TYPE_CHECKING:
    from harvestman.config import Settings
    from harvestman.store import SqlStore


def load_settings(config: Path | None, db: Path | None = None,
                  database_url: str | None = None, **overrides: Any) -> Settings:  # fmt: skip
    """The settings with the command's flags on top; a bad setting exits with status 2."""
    from harvestman.config import load_settings as load

    if config is not None:
        os.environ[CONFIG_ENV] = str(config)
    if not database_url and db is not None:
        database_url = f"sqlite:///{db}"
    try:
        return load(database_url=database_url or None, **overrides)
    except ConfigError as exc:
        raise usage_error(str(exc)) from None


@contextlib.contextmanager
def open_store(
    config: Path | None,
    db: Path | None,
    database_url: str | None,
    *,
    must_exist: bool = False,
    **overrides: Any,
) -> Iterator[tuple[Settings, SqlStore]]:
    """The settings and the store they name, disposed of on the way out; Harvestman errors
    raised inside become their exit status (``exits.errors_exit``).

    The store is not entered: synchronous reads work at once, a coroutine enters it
    with ``async with store`` (which disposes too; twice is harmless).
    """
    from harvestman.store import SqlStore

    settings = load_settings(config, db, database_url, **overrides)
    with errors_exit():
        if must_exist:
            refuse_missing_sqlite(settings.database_url)
        store = SqlStore(settings.database_url, schema_template=schema_cache(settings))
        try:
            yield settings, store
        finally:
            store.dispose()


def schema_cache(settings: Settings) -> Path | None:
    """The directory a new SQLite store's schema is copied from (None: migrate each one)."""
    return Path(settings.store_schema_cache) if settings.store_schema_cache else None


@contextlib.contextmanager
def open_crawl(
    config: Path | None, db: Path | None, database_url: str | None, name: str | None
) -> Iterator[tuple[Settings, SqlStore, int]]:
    """``open_store`` for an existing crawl: the schema must be current and the crawl there
    (``name``, or without one the crawl :func:`existing_crawl` chooses and names)."""
    opened = open_store(config, db, database_url, must_exist=True, crawl_name=name)
    with opened as (settings, store):
        crawl_id = existing_crawl(store, name)
        yield settings, store, crawl_id


def existing_crawl(store: SqlStore, name: str | None) -> int:
    """The id of the crawl :func:`choose_crawl` chooses."""
    return choose_crawl(store, name)[1]


def choose_crawl(store: SqlStore, name: str | None) -> tuple[str, int]:
    """Crawl ``name`` and its id; ``ConfigError`` naming the crawls there are when it has none.

    Without a name: of the crawls that hold anything (all of them when none does), the only
    one, else ``default``, else the newest; when the store holds more than one crawl, a line on
    stderr says which is shown and which others exist (a service's jobs each crawl into their
    own namespace, which a bare ``stats`` would hide; ``serve`` makes an empty ``default``).
    """
    store.schema.check_current()
    crawls = store.reports.crawl_ids()
    if name is not None:
        if name in crawls:
            return name, crawls[name]
        raise ConfigError(f"no crawl named {name!r} in this store; {holdings(crawls)}")
    if not crawls:
        raise ConfigError("this store holds no crawl yet: `harvestman crawl URL` makes one")
    candidates = store.reports.crawls_holding_urls() or set(crawls)
    if len(candidates) == 1:
        (chosen,) = candidates
    else:
        chosen = "default" if "default" in candidates else max(candidates, key=crawls.__getitem__)
    if len(crawls) > 1:
        others = sorted(set(crawls) - {chosen})
        err.print(
            f"crawl {chosen!r} (the store also holds {', '.join(map(repr, others))}: "
            "choose one with --name)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return chosen, crawls[chosen]


def holdings(crawls: dict[str, int]) -> str:
    """What a store holds, for an error that names a crawl it does not.

    >>> holdings({}), holdings({"default": 1, "shop-2": 2})
    ('it holds no crawl yet', "it holds 'default', 'shop-2'")
    """
    if not crawls:
        return "it holds no crawl yet"
    return "it holds " + ", ".join(map(repr, sorted(crawls)))


def refuse_missing_sqlite(database_url: str) -> None:
    """Raise ``ConfigError`` when ``database_url`` names a SQLite file that does not exist.

    >>> refuse_missing_sqlite("postgresql://127.0.0.1/crawls")  # not a file: nothing to check
    >>> refuse_missing_sqlite("sqlite:///no/such/store.db")
    Traceback (most recent call last):
    ...
    harvestman.errors.ConfigError: no store at no/such/store.db (nothing was created): check --db or --database-url
    """  # noqa: E501
    path = sqlite_file(database_url)
    if path is not None and not path.exists():
        raise ConfigError(f"no store at {path} (nothing was created): check --db or --database-url")


def sqlite_file(database_url: str) -> Path | None:
    """The file of a SQLite URL; None for other databases and in-memory SQLite."""
    from harvestman.store.dialect import sqlite_path

    return sqlite_path(database_url)
