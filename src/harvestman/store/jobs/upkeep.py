"""``StoreUpkeep``: the whole-store work the scheduler's leader takes turns at (``jobs.duties``).

The data retention and a scheduled backup read and write the whole store for minutes, so each
runs in a thread of its own (``asyncio.to_thread``), never on the job store's few threads that
every claim and renewal waits on. Errors come back as raised: the duties decide what is logged.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from harvestman.store.lifecycle.retention import RetentionReport, RetentionRules, apply_retention

if TYPE_CHECKING:
    from harvestman.store.jobs.db import JobStore
    from harvestman.store.lifecycle.backups import BackupRun
    from harvestman.store.lifecycle.schedule import BackupSchedule


class StoreUpkeep:
    """The retention and the scheduled backup of the store behind a ``JobStore``'s engine."""

    def __init__(self, store: JobStore) -> None:
        self._store = store

    async def apply_retention(self, rules: RetentionRules, now: float) -> RetentionReport:
        """Apply ``rules`` as of ``now`` (``store.lifecycle.retention``)."""
        return await asyncio.to_thread(apply_retention, self._store.engine, rules, now)

    async def back_up(self, schedule: BackupSchedule, now: float) -> BackupRun:
        """Take, verify, record and prune one scheduled backup as of ``now``."""
        return await asyncio.to_thread(schedule.run, self._store.engine, now)
