"""The SQL store: one implementation of the store's doors for SQLite and PostgreSQL.

``SqlStore`` is the object callers hold. It owns the engine and the threads
(``StoreConnection``) and combines the repositories of ``store/crawl/``, ``store/search/``, …,
one per concern; callers go through its doors by purpose (``store.frontier.lease(...)``,
``store.outcomes.record(...)``, ``store.reports.report(...)``: ``store.doors``). Hot-path
writes arrive in batches (``record``): one transaction per batch, ``executemany`` per statement.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

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
from harvestman.store.crawl.admin import AdminRepository
from harvestman.store.crawl.controls import ControlRepository
from harvestman.store.crawl.crawls import CrawlRepository
from harvestman.store.crawl.frontier import FrontierRepository
from harvestman.store.crawl.hosts import HostRepository
from harvestman.store.crawl.outcomes import PRODUCTS_PARSER, OutcomeRepository
from harvestman.store.crawl.reports import ReportRepository
from harvestman.store.crawl.seeds import SeedRepository
from harvestman.store.crawl.sessions import SessionRepository
from harvestman.store.crawl.workers import WorkerRepository
from harvestman.store.doors import open_door
from harvestman.store.failures import FailureRepository
from harvestman.store.interfaces import (
    ControlStore,
    CrawlRecords,
    FrontierStore,
    HostRecords,
    OutcomeWriter,
    ParserRollouts,
    SessionStore,
    StoreHealth,
    WorkerRegistry,
)
from harvestman.store.lifecycle.repository import LifecycleRepository
from harvestman.store.products.repository import ProductRepository
from harvestman.store.rollouts import RolloutRepository
from harvestman.store.search.repository import SearchRepository
from harvestman.store.signins import SignInRepository
from harvestman.store.users import UserRepository

if TYPE_CHECKING:
    from harvestman.store.jobs.db import JobStore
    from harvestman.store.jobs.start_pages import StartPages

__all__ = ["PRODUCTS_PARSER", "SqlStore"]


class SqlStore(
    CrawlRepository,
    FrontierRepository,
    OutcomeRepository,
    WorkerRepository,
    HostRepository,
    SessionRepository,
    ReportRepository,
    SeedRepository,
    SearchRepository,
    LifecycleRepository,
    AdminRepository,
    FailureRepository,
    UserRepository,
    SignInRepository,
    ControlRepository,
    RolloutRepository,
    ProductRepository,
):
    """The store on a SQLAlchemy engine. Use as ``async with SqlStore(url) as store``, and
    through its doors (``store.doors``)."""

    # -- async doors, on the event loop ---------------------------------------------------

    @cached_property
    def crawls(self) -> CrawlRecords:
        return open_door(self, CrawlRecords)

    @cached_property
    def frontier(self) -> FrontierStore:
        return open_door(self, FrontierStore)

    @cached_property
    def outcomes(self) -> OutcomeWriter:
        return open_door(self, OutcomeWriter)

    @cached_property
    def hosts(self) -> HostRecords:
        return open_door(self, HostRecords)

    @cached_property
    def sessions(self) -> SessionStore:
        return open_door(self, SessionStore)

    @cached_property
    def registry(self) -> WorkerRegistry:
        return open_door(self, WorkerRegistry)

    @cached_property
    def health(self) -> StoreHealth:
        return open_door(self, StoreHealth)

    @cached_property
    def controls(self) -> ControlStore:
        return open_door(self, ControlStore)

    @cached_property
    def rollouts(self) -> ParserRollouts:
        return open_door(self, ParserRollouts)

    @cached_property
    def start_pages(self) -> StartPages:
        from harvestman.store.jobs.start_pages import StartPages

        return StartPages(self.engine)

    def jobs(self, *, clock: Callable[[], float] = time.time) -> JobStore:
        """The jobs domain on this store's connection pool: ``async with store.jobs() as jobs``.

        The jobs domain is imported here (and ``start_pages`` there), by the service and the
        workers that use it: its records (pydantic models) cost a crawl's start ~25 ms."""
        from harvestman.store.jobs.db import JobStore

        return JobStore(self.engine, clock=clock)

    # -- blocking doors: call from a thread -----------------------------------------------

    @cached_property
    def reports(self) -> BlockingReports:
        return open_door(self, BlockingReports)

    @cached_property
    def rows(self) -> BlockingRows:
        return open_door(self, BlockingRows)

    @cached_property
    def exports(self) -> BlockingExports:
        return open_door(self, BlockingExports)

    @cached_property
    def failures(self) -> BlockingFailures:
        return open_door(self, BlockingFailures)

    @cached_property
    def search(self) -> BlockingSearch:
        return open_door(self, BlockingSearch)

    @cached_property
    def products(self) -> BlockingProducts:
        return open_door(self, BlockingProducts)

    @cached_property
    def admin(self) -> BlockingAdmin:
        return open_door(self, BlockingAdmin)

    @cached_property
    def accounts(self) -> BlockingAccounts:
        return open_door(self, BlockingAccounts)

    @cached_property
    def maintenance(self) -> BlockingMaintenance:
        return open_door(self, BlockingMaintenance)
