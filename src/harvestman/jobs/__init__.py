"""The crawl service's jobs domain: sources, jobs, executions, the scheduler.

::

    async with SqlStore(url) as crawl_store, JobStore(crawl_store.engine) as store:
        source = await store.sources.create(SourceSpec(name="news", start_urls=[...]))
        job = await store.jobs.create(JobSpec(source_id=source.id, url=..., interval_minutes=30))
        scheduler = Scheduler(store, CrawlRunner(settings, crawl_store))
        await scheduler.run()  # until scheduler.stop()

The queries live in ``harvestman.store.jobs`` (``JobStore``, its tables, ``LeaderLease``); this
package holds the domain and calls them. Importing it registers the jobs tables on
``harvestman.store.schema.metadata``.
"""

from __future__ import annotations

from harvestman.jobs.adaptive import AdaptiveState, adaptive_interval
from harvestman.jobs.buckets import Distribution, Move, RebalancePlan
from harvestman.jobs.errors import (
    InvalidSpec,
    JobsError,
    JobStateError,
    NameTaken,
    NotFound,
    UnknownSource,
)
from harvestman.jobs.lifecycle import retry_delay
from harvestman.jobs.logs import LogCapture, LogWriter
from harvestman.jobs.reconcile import SyncPlan, sync_enabled_sources
from harvestman.jobs.records import (
    Claim,
    Execution,
    ExecutionResult,
    ExecutionStatus,
    IntervalType,
    Job,
    JobSpec,
    LogLine,
    ResultPage,
    ScopeRules,
    Source,
    SourceOptions,
    SourceSpec,
)
from harvestman.jobs.runner import CrawlRunner
from harvestman.jobs.scheduler import Runner, Scheduler
from harvestman.jobs.states import Action, JobStatus, allowed_actions
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.leader import LeaderLease

__all__ = [
    "Action",
    "AdaptiveState",
    "Claim",
    "CrawlRunner",
    "Distribution",
    "Execution",
    "ExecutionResult",
    "ExecutionStatus",
    "IntervalType",
    "InvalidSpec",
    "Job",
    "JobSpec",
    "JobStateError",
    "JobStatus",
    "JobStore",
    "JobsError",
    "LeaderLease",
    "LogCapture",
    "LogLine",
    "LogWriter",
    "Move",
    "NameTaken",
    "NotFound",
    "RebalancePlan",
    "ResultPage",
    "Runner",
    "Scheduler",
    "ScopeRules",
    "Source",
    "SourceOptions",
    "SourceSpec",
    "SyncPlan",
    "UnknownSource",
    "adaptive_interval",
    "allowed_actions",
    "retry_delay",
    "sync_enabled_sources",
]
