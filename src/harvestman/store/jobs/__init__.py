"""The jobs domain's storage: its tables and every query on them, SQLite or PostgreSQL.

``JobStore`` opens the repositories (``sources``, ``jobs``, ``executions``, ``locks``,
``recurring``); ``LeaderLease`` is the maintenance lease. The domain itself (records, the state
machine, scheduling policy) lives in ``harvestman.jobs`` and reaches the database only through
these.

Importing ``harvestman.store.jobs.tables`` (or ``JobStore``) registers the tables on
``harvestman.store.schema.metadata``. This package imports nothing from ``harvestman.jobs`` at
load time, so either side may be imported first.
"""

from __future__ import annotations

from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.leader import LeaderLease

__all__ = ["JobStore", "LeaderLease"]
