"""The leader's upkeep of the store: the sweep, the data retention, the scheduled backups.

Each runs only on the instance holding the leader's lease. The retention and the backups take a
turn of their own (a ``LeaderLease`` whose TTL is their interval) before they run, so across all
instances, and across a change of leader, each runs at most once per its interval; they look for
their turn every ``leader_ttl``. Their SQL is the store's (``store.jobs.upkeep.StoreUpkeep``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from harvestman.errors import HarvestmanError
from harvestman.jobs import lifecycle
from harvestman.store.jobs.leader import LeaderLease

if TYPE_CHECKING:
    from harvestman.jobs.scheduler import Scheduler
    from harvestman.store.jobs.upkeep import StoreUpkeep
    from harvestman.store.lifecycle.backups import BackupRun
    from harvestman.store.lifecycle.retention import RetentionReport, RetentionRules
    from harvestman.store.lifecycle.schedule import BackupSchedule

log = logging.getLogger(__name__)

RETENTION = "retention"
BACKUP = "backup"


class Sweep:
    """Clear stale locks (their holder is gone: the run counts as failed) and prune the
    execution history to the ``history_max`` newest per job, none older than ``history_days``.

    Not within ``stale_lock_seconds`` of the end of a store outage this instance saw: no
    holder could renew meanwhile, and each live one renews as the store comes back."""

    name = "sweep"
    leader_only = True

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        interval: float,
        stale_lock_seconds: float,
        history_max: int,
        history_days: float,
    ) -> None:
        self.scheduler = scheduler
        self.interval = interval
        self.stale_lock_seconds = stale_lock_seconds
        self.history_max = history_max
        self.history_days = history_days

    async def run(self) -> dict[str, int]:
        scheduler = self.scheduler
        store, counters = scheduler.store, scheduler.counters
        back_at = scheduler.outage.back_at
        cleared = 0
        if back_at is None or scheduler.clock() - back_at >= self.stale_lock_seconds:
            cleared = await store.locks.clear_stale(
                self.stale_lock_seconds, backoff_cap=lifecycle.RETRY_BACKOFF_CAP
            )
        pruned = await store.executions.prune(keep=self.history_max, max_age_days=self.history_days)
        if cleared:
            log.warning("cleared %d stale job locks", cleared)
        counters["stale_locks_cleared"] += cleared
        counters["pruned"] += pruned
        return {"stale_locks_cleared": cleared, "pruned": pruned}

    async def close(self) -> None:
        return None


class Retention:
    """The data retention (``harvestman maintenance``'s rules), once per ``every`` seconds
    across all instances. ``run`` gives None when it did not run (the turn is not free, or
    an export could not be written: logged, tried again next turn)."""

    name = RETENTION
    leader_only = True

    def __init__(
        self, scheduler: Scheduler, upkeep: StoreUpkeep, rules: RetentionRules, *, every: float
    ) -> None:
        self.scheduler = scheduler
        self.upkeep = upkeep
        self.rules = rules
        self.interval = scheduler.leader.ttl  # how often the turn is looked for
        self.turn = LeaderLease(scheduler.store, scheduler.instance_id, name=RETENTION, ttl=every)

    async def run(self) -> RetentionReport | None:
        if not await self.turn.take_expired():
            return None
        log.info("running the data retention (this instance leads)")
        try:
            report = await self.upkeep.apply_retention(self.rules, self.scheduler.clock())
        except HarvestmanError:
            raise
        except Exception:  # an export that could not be written: logged, retried next turn
            log.exception("the data retention failed")
            return None
        self.scheduler.counters["retention_runs"] += 1
        log.info("retention: %s", report.summary())
        return report

    async def close(self) -> None:
        return None


class Backups:
    """A scheduled backup, once per the schedule's interval across all instances. A failed
    backup is recorded in the store (and so in ``/metrics``), not raised; ``run`` gives None
    when it did not run (the turn is not free, or the store is away: retried next turn)."""

    name = BACKUP
    leader_only = True

    def __init__(self, scheduler: Scheduler, upkeep: StoreUpkeep, schedule: BackupSchedule) -> None:
        self.scheduler = scheduler
        self.upkeep = upkeep
        self.schedule = schedule
        self.interval = scheduler.leader.ttl  # how often the turn is looked for
        self.turn = LeaderLease(
            scheduler.store, scheduler.instance_id, name=BACKUP, ttl=schedule.interval
        )

    async def run(self) -> BackupRun | None:
        if not await self.turn.take_expired():
            return None
        log.info("taking the scheduled backup (this instance leads)")
        try:
            run = await self.upkeep.back_up(self.schedule, self.scheduler.clock())
        except Exception:  # the store is away: nothing recorded, retried next turn
            log.exception("the scheduled backup could not be recorded")
            return None
        counters = self.scheduler.counters
        counters["backup_runs"] += 1
        counters["backup_failures"] += run.error is not None
        return run

    async def close(self) -> None:
        return None
