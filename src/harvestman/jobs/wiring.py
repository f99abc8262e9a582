"""The job scheduler built from ``Settings``: its values, and the duties it keeps going.

The one place the scheduler reads the settings (``jobs_*``, ``retention_*``, ``backup_*``,
``broker_renew_interval``), and the whole list of what it does periodically besides polling and
holding the leader's lease, in order::

    log flush      every jobs_log_flush_interval   the runs' new log lines, stored
    progress       every jobs_progress_interval    the runs' counters, stored
    metrics        every jobs_metrics_interval     GET /api/scheduler's aggregate
    source events  as they come                    a toggled source gets or loses its job
    sweep          every jobs_sweep_interval       leader: stale locks cleared, history pruned
    retention      every jobs_retention_interval   leader, unless None: maintenance's rules
    backup         every backup_interval_hours     leader, only when that is set

A duty is a ``PeriodicTask`` (``jobs.duties.base``); adding one is a class in ``jobs.duties``
and a line here.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from harvestman.jobs.duties.base import Every, PeriodicTask
from harvestman.jobs.duties.sources import SourceFollower
from harvestman.jobs.duties.upkeep import Backups, Retention, Sweep
from harvestman.jobs.scheduler import Runner, Scheduler, SchedulerConfig
from harvestman.store.jobs.upkeep import StoreUpkeep
from harvestman.store.lifecycle.retention import RetentionRules
from harvestman.store.lifecycle.schedule import BackupSchedule

if TYPE_CHECKING:
    from harvestman.config import Settings
    from harvestman.jobs.dispatch import Dispatcher
    from harvestman.jobs.events import SourceEvents
    from harvestman.jobs.logs import LogCapture
    from harvestman.store.jobs.db import JobStore


def scheduler_config(settings: Settings) -> SchedulerConfig:
    """The scheduler's own values, as the settings give them."""
    return SchedulerConfig(
        poll_interval=settings.jobs_poll_interval,
        max_concurrent=settings.jobs_max_concurrent,
        leader_ttl=settings.jobs_leader_ttl,
        log_flush_interval=settings.jobs_log_flush_interval,
        progress_interval=settings.jobs_progress_interval,
        progress_samples=settings.jobs_progress_samples,
        metrics_interval=settings.jobs_metrics_interval,
        source_job_interval_minutes=settings.jobs_source_interval_minutes,
    )


def duties(settings: Settings, scheduler: Scheduler) -> list[PeriodicTask]:
    """What ``scheduler.run`` keeps going besides its polls and its lease, as the settings
    turn them on."""
    config = scheduler.config
    upkeep = StoreUpkeep(scheduler.store)
    listed: list[PeriodicTask] = [
        Every("log flush", config.log_flush_interval, scheduler.flush_logs),
        Every("progress", config.progress_interval, scheduler.record_progress_when_due),
        Every("metrics", config.metrics_interval, scheduler.refresh_metrics),
        SourceFollower(scheduler, retry=config.poll_interval),
        Sweep(
            scheduler,
            interval=settings.jobs_sweep_interval,
            stale_lock_seconds=settings.jobs_stale_lock_seconds,
            history_max=settings.jobs_history_max,
            history_days=settings.jobs_history_days,
        ),
    ]
    if settings.jobs_retention_interval is not None:
        rules = RetentionRules.from_settings(settings)
        listed.append(Retention(scheduler, upkeep, rules, every=settings.jobs_retention_interval))
    schedule = BackupSchedule.from_settings(settings)
    if schedule is not None:
        listed.append(Backups(scheduler, upkeep, schedule))
    return listed


def build_scheduler(
    settings: Settings,
    store: JobStore,
    runner: Runner,
    *,
    instance_id: str | None = None,
    events: SourceEvents | None = None,
    dispatcher: Dispatcher | None = None,
    log_capture: LogCapture | None = None,
) -> Scheduler:
    """The service's scheduler (``harvestman serve``) with every duty the settings turn on."""
    scheduler = Scheduler(
        store,
        runner,
        scheduler_config(settings),
        instance_id=instance_id,
        events=events,
        dispatcher=dispatcher,
        log_capture=log_capture,
    )
    scheduler.duties = duties(settings, scheduler)
    return scheduler


def worker_scheduler(
    settings: Settings, store: JobStore, runner: Runner, *, instance_id: str | None = None
) -> Scheduler:
    """A broker worker's scheduler (``jobs.consumer``): it claims nothing (its runs come from
    the broker, ``adopt``), only polls, every ``broker_renew_interval``, and has no duties:
    its polls store its runs' log lines and counters."""
    config = dataclasses.replace(
        scheduler_config(settings), max_concurrent=0, poll_interval=settings.broker_renew_interval
    )
    return Scheduler(store, runner, config, instance_id=instance_id)
