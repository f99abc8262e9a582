"""``JobStore``: the jobs domain's tables on one SQLAlchemy engine, SQLite or PostgreSQL.

The engine, the threads and the transactions are ``JobDatabase``'s (``database.py``); this
puts the repositories on it.
"""

from __future__ import annotations

import time

from sqlalchemy import Engine

from harvestman.store.jobs.database import Clock, JobDatabase
from harvestman.store.jobs.executions import ExecutionRepository
from harvestman.store.jobs.handover import ExecutionHandover
from harvestman.store.jobs.locks import JobLocks
from harvestman.store.jobs.recurring import RecurringJobs
from harvestman.store.jobs.repository import JobRepository
from harvestman.store.jobs.sources import SourceRepository


class JobStore(JobDatabase):
    """Sources, jobs, executions, logs, adaptive state and scheduler leases.

    Use as ``async with JobStore(engine_or_url) as store``; ``store.sources``, ``store.jobs``,
    ``store.executions``, ``store.locks``, ``store.recurring`` and ``store.handover``
    (executions handed over through a broker) hold the queries. Pass the
    crawl store's engine (``SqlStore.engine``) to share its connection pool; a URL makes an
    engine of its own.
    ``clock`` is the time every query uses (tests pass a controllable one).
    """

    def __init__(self, engine: Engine | str, *, threads: int = 4, clock: Clock = time.time) -> None:
        super().__init__(engine, threads=threads, clock=clock)
        self.sources = SourceRepository(self)
        self.jobs = JobRepository(self)
        self.executions = ExecutionRepository(self)
        self.locks = JobLocks(self)
        self.recurring = RecurringJobs(self, self.jobs)
        self.handover = ExecutionHandover(self)
