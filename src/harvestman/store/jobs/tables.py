"""The jobs domain's tables, declared on the store's ``metadata`` (one schema, one Alembic chain).

Created by migration 0004. Times are UNIX epoch seconds (``Float``) like the rest of the store;
JSON values are ``Text``. Importing this module registers the tables on ``metadata``.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from harvestman.store.schema import Id, metadata

sources = Table(
    "sources",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("start_urls", Text, nullable=False),  # JSON list
    Column("max_depth", SmallInteger, nullable=False, default=0),  # 0: the default (3)
    Column("scope", Text, nullable=False),  # JSON: allow_domains, include, exclude
    Column("crawl_delay", Float),  # None: robots.txt Crawl-delay, else the default
    Column("max_pages", Integer, nullable=False, default=0),  # per run; 0: no limit
    Column("enabled", Boolean, nullable=False, default=True),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    # JSON: the crawl options the source turns on or off (records.SourceOptions; absent: the
    # service's setting). Added by migration 0007.
    Column("options", Text, nullable=False, default="{}", server_default="{}"),
    # The crawl namespace its jobs crawl into, fixed at creation (``jobs.records.crawl_name``:
    # a slug of the name and the id); sources made before migration 0024 keep ``source-<id>``.
    # Nullable only because a row gets it in the transaction that inserts it (the id is needed).
    Column("crawl", String(200)),
    Index("ix_sources_crawl", "crawl", unique=True),
    # SQLite: a deleted source's id is never handed out again (its crawl is source-<id>).
    # Migration 0013.
    sqlite_autoincrement=True,
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("source_id", Id, ForeignKey("sources.id", ondelete="CASCADE"), nullable=False),
    Column("url", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("interval_minutes", Integer),  # units of interval_type; None: a one-time job
    Column("interval_type", String(8), nullable=False, default="minutes"),
    Column("schedule_enabled", Boolean, nullable=False, default=True),
    Column("adaptive_scheduling", Boolean, nullable=False, default=True),
    Column("max_retries", SmallInteger, nullable=False, default=3),
    Column("retry_backoff_seconds", Integer, nullable=False, default=60),
    Column("current_retry_count", SmallInteger, nullable=False, default=0),
    Column("next_run_at", Float),
    Column("last_run_at", Float),
    Column("is_paused", Boolean, nullable=False, default=False),
    Column("paused_at", Float),
    Column("cancelled_at", Float),
    # The compare-and-set lock of the instance running the job, renewed while it runs.
    Column("lock_token", String(64)),
    Column("lock_acquired_at", Float),
    Column("locked_by", String(128)),
    Column("last_moved_at", Float),  # the last placement in a slot (anti-thrashing)
    Column("last_error", Text),
    # Force-run ("Run now") sets it to the run it brought forward; the run clears it as it
    # starts (re-crawls everything known, leaves the adaptive interval, keeps the plan).
    # Migration 0024.
    Column("forced_planned_at", Float),
    Column("metadata", Text, nullable=False, default="{}"),  # JSON object
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    # The poll: runnable states in due order. Also serves the slot loads of the balancer.
    Index("ix_jobs_due", "status", "next_run_at"),
    # The API's keyset-paged job list (id order) by source or status.
    Index("ix_jobs_source_id", "source_id", "id"),
    Index("ix_jobs_status", "status", "id"),
    # The stale-lock sweep.
    Index("ix_jobs_lock_acquired_at", "lock_acquired_at"),
)

job_executions = Table(
    "job_executions",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("job_id", Id, ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("execution_number", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("started_at", Float, nullable=False),
    Column("completed_at", Float),
    Column("duration_ms", Integer),
    Column("items_crawled", Integer, nullable=False, default=0),
    Column("items_indexed", Integer, nullable=False, default=0),
    Column("error_message", Text),
    Column("stack_trace", Text),
    Column("cpu_time_ms", Integer),
    Column("memory_peak_mb", Float),
    Column("retry_attempt", SmallInteger, nullable=False, default=0),
    Column("metadata", Text, nullable=False, default="{}"),  # JSON object
    # Live while the run goes (jobs.progress): stored every jobs_progress_interval.
    Column("items_failed", Integer, nullable=False, default=0, server_default="0"),
    Column("pages_per_second", Float),
    Column("progress", Text),  # JSON [[at, fetched, stored, failed], ...], for the run's chart
    UniqueConstraint("job_id", "execution_number"),
    Index("ix_job_executions_started_at", "started_at"),
)

execution_logs = Table(
    "execution_logs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("execution_id", Id, ForeignKey("job_executions.id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("level", String(10), nullable=False),
    Column("logger", String(100), nullable=False),
    Column("message", Text, nullable=False),
    UniqueConstraint("execution_id", "seq"),
)

source_adaptive_state = Table(
    "source_adaptive_state",
    metadata,
    Column("source_id", Id, ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True),
    Column("last_hash", String(64)),  # digest over the start URLs' latest content hashes
    Column("url_hashes", Text, nullable=False, default="{}"),  # JSON: start URL -> SHA-256
    Column("last_change_at", Float),
    Column("unchanged_count", Integer, nullable=False, default=0),
    Column("current_interval", Float),  # seconds
    Column("updated_at", Float, nullable=False),
)

scheduler_leases = Table(
    "scheduler_leases",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("holder", String(128), nullable=False),
    Column("acquired_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
)
