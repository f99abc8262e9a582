"""The store: the single source of truth for every URL, page and host, and the only package
that speaks SQL.

Callers go through doors by purpose (``store.doors``): async ones on the event loop
(``store.interfaces``: ``store.crawls``, ``store.frontier``, ``store.outcomes``, ``store.hosts``,
``store.sessions``, ``store.registry``, ``store.health``, ``store.controls``,
``store.rollouts``) and blocking ones called from a thread (``store.blocking``:
``store.reports``, ``store.rows``, ``store.exports``, ``store.failures``, ``store.search``,
``store.products``, ``store.admin``, ``store.accounts``, ``store.maintenance``). ``Store`` is
the crawler's doors, ``ServiceStore`` the service's. ``SqlStore`` implements them on SQLite
(the embedded default) and PostgreSQL with one schema and one set of Alembic migrations.
"""

from __future__ import annotations

from harvestman.store.blocking import (
    BlockingAccounts,
    BlockingAdmin,
    BlockingExports,
    BlockingFailures,
    BlockingMaintenance,
    BlockingProducts,
    BlockingReports,
    BlockingRows,
    BlockingSearch,
)
from harvestman.store.doors import ServiceStore
from harvestman.store.interfaces import (
    ControlStore,
    CrawlRecords,
    FrontierStore,
    HostRecords,
    OutcomeWriter,
    ParserRollouts,
    SessionStore,
    Store,
    StoreHealth,
    WorkerRegistry,
)
from harvestman.store.sql import SqlStore

__all__ = [
    "BlockingAccounts",
    "BlockingAdmin",
    "BlockingExports",
    "BlockingFailures",
    "BlockingMaintenance",
    "BlockingProducts",
    "BlockingReports",
    "BlockingRows",
    "BlockingSearch",
    "ControlStore",
    "CrawlRecords",
    "FrontierStore",
    "HostRecords",
    "OutcomeWriter",
    "ParserRollouts",
    "ServiceStore",
    "SessionStore",
    "SqlStore",
    "Store",
    "StoreHealth",
    "WorkerRegistry",
]


def _implements(store: SqlStore) -> tuple[Store, ServiceStore]:
    """Never called: mypy checks here that ``SqlStore`` opens every door (each door's own
    protocol is checked where ``store/sql.py`` opens it)."""
    return store, store
