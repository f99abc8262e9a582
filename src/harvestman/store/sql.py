"""The SQL store: one implementation of the store's interfaces for SQLite and PostgreSQL.

``SqlStore`` is the object callers hold. It owns the engine and the threads
(``StoreConnection``) and combines the repositories of ``store/crawl/``, one per concern, so
``store.lease(...)``, ``store.record(...)`` and the rest are called on one object. Hot-path
writes arrive in batches (``record``): one transaction per batch, ``executemany`` per statement.
"""

from __future__ import annotations

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
from harvestman.store.failures import FailureRepository
from harvestman.store.lifecycle.repository import LifecycleRepository
from harvestman.store.products.repository import ProductRepository
from harvestman.store.rollouts import RolloutRepository
from harvestman.store.search.repository import SearchRepository
from harvestman.store.signins import SignInRepository
from harvestman.store.users import UserRepository

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
    """The store on a SQLAlchemy engine. Use as ``async with SqlStore(url) as store``."""
