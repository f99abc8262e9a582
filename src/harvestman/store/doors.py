"""The store's doors by purpose: each a small protocol, opened on ``SqlStore`` as an object that
holds that protocol's methods and nothing else.

==================  ======================  =========================================
door                protocol                what goes through it
==================  ======================  =========================================
async, on the event loop (``store.interfaces``)
---------------------------------------------------------------------------------------
``crawls``          ``CrawlRecords``        a crawl's id, seeds, archive, counts
``frontier``        ``FrontierStore``       URLs added, leased, released, made due
``outcomes``        ``OutcomeWriter``       the writer's batches and stats
``hosts``           ``HostRecords``         robots.txt, host gate, discovery state
``sessions``        ``SessionStore``        cookies and proxies' health
``registry``        ``WorkerRegistry``      live workers and their heartbeats
``health``          ``StoreHealth``         ping, check, reconnect
``controls``        ``ControlStore``        the per-domain settings, read whole
``rollouts``        ``ParserRollouts``      parser rollouts, read and set
``start_pages``     ``StartPages``          the job runner's start pages
``jobs()``          ``JobStore``            the jobs domain, opened with ``async with``
blocking: call from a thread (``store.blocking``)
---------------------------------------------------------------------------------------
``reports``         ``BlockingReports``     counts and summaries of crawls
``rows``            ``BlockingRows``        browsable lists of pages, URLs, domains
``exports``         ``BlockingExports``     whole tables, read in batches
``failures``        ``BlockingFailures``    the error log and dead letters
``search``          ``BlockingSearch``      full-text search
``products``        ``BlockingProducts``    products: list, one, history, bulk load
``admin``           ``BlockingAdmin``       the operators' writes
``accounts``        ``BlockingAccounts``    users and sign-in attempts
``maintenance``     ``BlockingMaintenance`` retention, replay, storage, backups
==================  ======================  =========================================

A door is built once, on first use, from the protocol's member names, so its methods are the
store's own bound methods: no call goes through a wrapper. ``SqlStore`` opens them
(``store/sql.py``), and mypy checks at each door that it implements the protocol (``open_door``
is typed so); ``tests/test_store_doors.py`` checks at run time that each door holds exactly its
protocol's methods, async or blocking as its side says, and that every query is behind one
door. The SQL stays in the repositories (``store/crawl/``, ``store/search/``, …).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

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

if TYPE_CHECKING:
    from harvestman.store.jobs.db import JobStore
    from harvestman.store.jobs.start_pages import StartPages

T = TypeVar("T")

# Every door by name, with its protocol: the doors' table above, as data.
ASYNC_DOORS: dict[str, type] = {
    "crawls": CrawlRecords,
    "frontier": FrontierStore,
    "outcomes": OutcomeWriter,
    "hosts": HostRecords,
    "sessions": SessionStore,
    "registry": WorkerRegistry,
    "health": StoreHealth,
    "controls": ControlStore,
    "rollouts": ParserRollouts,
}
BLOCKING_DOORS: dict[str, type] = {
    "reports": BlockingReports,
    "rows": BlockingRows,
    "exports": BlockingExports,
    "failures": BlockingFailures,
    "search": BlockingSearch,
    "products": BlockingProducts,
    "admin": BlockingAdmin,
    "accounts": BlockingAccounts,
    "maintenance": BlockingMaintenance,
}


def protocol_methods(protocol: type) -> list[str]:
    """The public methods ``protocol`` declares, its bases' included."""
    return sorted(
        name
        for base in protocol.__mro__
        if base not in (object, Protocol) and base.__module__ != "typing"
        for name, value in vars(base).items()
        if not name.startswith("_") and inspect.isfunction(value)
    )


class Door:
    """One door of the store: the store's bound methods for one protocol, nothing else."""

    def __init__(self, protocol: type, methods: dict[str, Callable[..., Any]]) -> None:
        self.__dict__.update(methods)
        self._protocol = protocol.__name__

    def __repr__(self) -> str:
        return f"<store door {self._protocol}>"


def open_door(store: T, protocol: type) -> T:
    """The door of ``store`` for ``protocol``.

    Typed as returning ``store`` so that each door property's return type (the protocol) makes
    mypy check that the store implements it; what it returns holds only the protocol's methods.
    """
    methods = {name: getattr(store, name) for name in protocol_methods(protocol)}
    return cast(T, Door(protocol, methods))


class ServiceStore(Store, Protocol):
    """What the service (the API, the job runner, the broker's worker) needs from a store:
    the crawler's doors, the blocking ones, the jobs domain, and a thread to block in."""

    @property
    def start_pages(self) -> StartPages: ...
    @property
    def reports(self) -> BlockingReports: ...
    @property
    def rows(self) -> BlockingRows: ...
    @property
    def exports(self) -> BlockingExports: ...
    @property
    def failures(self) -> BlockingFailures: ...
    @property
    def search(self) -> BlockingSearch: ...
    @property
    def products(self) -> BlockingProducts: ...
    @property
    def admin(self) -> BlockingAdmin: ...
    @property
    def accounts(self) -> BlockingAccounts: ...
    @property
    def maintenance(self) -> BlockingMaintenance: ...

    def jobs(self, *, clock: Callable[[], float] = time.time) -> JobStore:
        """The jobs domain on this store's connection pool: open it with ``async with``."""
        ...

    async def in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking call (a door of ``store.blocking``) in a thread of its own."""
        ...
