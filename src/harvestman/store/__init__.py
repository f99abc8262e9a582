"""The store: the single source of truth for every URL, page and host, and the only package
that speaks SQL.

The interfaces (``store.interfaces``) say what each caller needs: ``FrontierStore``,
``OutcomeWriter``, ``HostRecords``, ``SessionStore``, ``WorkerRegistry``, ``CrawlRecords``,
``StoreHealth``, ``ControlStore``, and ``Store`` combining them. ``SqlStore`` implements them
on SQLite (the embedded default) and PostgreSQL with one schema and one set of Alembic
migrations.
"""

from __future__ import annotations

from harvestman.store.interfaces import (
    ControlStore,
    CrawlRecords,
    FrontierStore,
    HostRecords,
    OutcomeWriter,
    SessionStore,
    Store,
    StoreHealth,
    WorkerRegistry,
)
from harvestman.store.sql import SqlStore

__all__ = [
    "ControlStore",
    "CrawlRecords",
    "FrontierStore",
    "HostRecords",
    "OutcomeWriter",
    "SessionStore",
    "SqlStore",
    "Store",
    "StoreHealth",
    "WorkerRegistry",
]


def _implements(
    store: SqlStore,
) -> tuple[
    CrawlRecords,
    FrontierStore,
    OutcomeWriter,
    HostRecords,
    SessionStore,
    WorkerRegistry,
    StoreHealth,
    ControlStore,
    Store,
]:
    """Never called: mypy checks here that ``SqlStore`` implements every interface."""
    return store, store, store, store, store, store, store, store, store
