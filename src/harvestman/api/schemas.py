"""The API's request and response bodies (pydantic), kept apart from the domain records.

Every number has bounds and every string a length limit, so nonsense is a 422 at the door
rather than an overflow in the database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from harvestman.config import source_option_fields
from harvestman.jobs.records import Execution, Job, Source
from harvestman.jobs.states import allowed_actions

T = TypeVar("T")

MAX_ID = 2**53
Url = Field(min_length=1, max_length=2048)
Time = Field(default=None, ge=0, le=1e11, allow_inf_nan=False)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Page(BaseModel, Generic[T]):
    """One page of a list. Pass ``next_cursor`` back as ``cursor`` for the next page (keyset
    pagination: a deep page costs what the first does); ``offset`` suits small skips only."""

    items: list[T]
    next_cursor: str | None = Field(
        description="opaque; the `cursor` of the next page, null on the last page"
    )
    limit: int
    offset: int
    total: int = Field(
        description=(
            "rows matching the filters, exact as of `total_as_of`: a count is cached for "
            "`api_count_cache_seconds` (5 s) per list and filters, so on a busy store it may "
            "lag the items by that much; it is never below what this page shows"
        )
    )
    total_as_of: float = Field(description="when `total` was counted (epoch seconds)")


class ScopeIn(Strict):
    allow_domains: list[str] = Field(default_factory=list, max_length=1000)
    include: list[str] = Field(default_factory=list, max_length=100)
    exclude: list[str] = Field(default_factory=list, max_length=100)


# Crawl options a source turns on or off; null (or absent): the service's setting. Derived
# from their one declaration (config.SOURCE_OPTIONS): each option is its setting's type and
# bounds, described as the setting is. Type checkers see a plain model.
if TYPE_CHECKING:
    SourceOptionsIn = Strict
else:
    SourceOptionsIn = create_model(
        "SourceOptionsIn",
        __base__=Strict,
        __doc__="Crawl options a source turns on or off; null (or absent): the service's setting.",
        **source_option_fields(),
    )


class SourceIn(Strict):
    name: str = Field(min_length=1, max_length=200)
    start_urls: list[str] = Field(min_length=1, max_length=100)
    max_depth: int = Field(0, ge=0, le=1000, description="0: the default (3); above 5 warns")
    scope: ScopeIn = Field(default_factory=ScopeIn)
    crawl_delay: float | None = Field(None, ge=0, le=3600, allow_inf_nan=False)
    max_pages: int = Field(0, ge=0, le=10**9, description="per run; 0: no limit")
    enabled: bool = True
    options: SourceOptionsIn = Field(default_factory=SourceOptionsIn)


class SourceUpdate(Strict):
    """A partial update: only the fields sent change."""

    name: str | None = Field(None, min_length=1, max_length=200)
    start_urls: list[str] | None = Field(None, min_length=1, max_length=100)
    max_depth: int | None = Field(None, ge=0, le=1000)
    scope: ScopeIn | None = None
    crawl_delay: float | None = Field(None, ge=0, le=3600, allow_inf_nan=False)
    max_pages: int | None = Field(None, ge=0, le=10**9)
    enabled: bool | None = None
    options: SourceOptionsIn | None = Field(None, description="replaces the options sent before")


class SourceJob(BaseModel):
    """A job of a source, as the source's answer lists it."""

    id: int
    status: str


class SourceOut(BaseModel):
    id: int
    name: str
    start_urls: list[str]
    max_depth: int
    scope: ScopeIn
    crawl_delay: float | None
    max_pages: int
    enabled: bool
    options: SourceOptionsIn
    created_at: float
    updated_at: float
    crawl: str = Field(
        description="the crawl its jobs crawl into (named after the source when it was made; "
        "the crawl parameter of pages, frontier, products, ...; renames do not move it)"
    )
    jobs: list[SourceJob] = Field(
        default_factory=list,
        description="the source's jobs (id, state); creating an enabled source makes one",
    )

    @classmethod
    def of(cls, source: Source, jobs: Sequence[tuple[int, str]] = ()) -> SourceOut:
        found = [SourceJob(id=i, status=str(s)) for i, s in jobs]
        return cls(**{**asdict(source), "options": source.options.given()}, jobs=found)


IntervalType = Literal["minutes", "hours", "days"]


class JobIn(Strict):
    source_id: int = Field(ge=1, le=MAX_ID)
    url: str = Url
    interval_minutes: int | None = Field(
        None, ge=1, le=10_000_000, description="units of interval_type; null: a one-time job"
    )
    interval_type: IntervalType = "minutes"
    schedule_enabled: bool = True
    adaptive_scheduling: bool = True
    max_retries: int = Field(3, ge=0, le=100)
    retry_backoff_seconds: int = Field(60, ge=0, le=86400)
    next_run_at: float | None = Time
    metadata: dict[str, Any] = Field(default_factory=dict)


class JobUpdate(Strict):
    """A partial update: only the fields sent change."""

    source_id: int | None = Field(None, ge=1, le=MAX_ID)
    url: str | None = Field(None, min_length=1, max_length=2048)
    interval_minutes: int | None = Field(None, ge=1, le=10_000_000)
    interval_type: IntervalType | None = None
    schedule_enabled: bool | None = None
    adaptive_scheduling: bool | None = None
    max_retries: int | None = Field(None, ge=0, le=100)
    retry_backoff_seconds: int | None = Field(None, ge=0, le=86400)
    next_run_at: float | None = Time
    metadata: dict[str, Any] | None = None


class JobOut(BaseModel):
    id: int
    source_id: int
    url: str
    status: str
    allowed_actions: list[str]
    interval_minutes: int | None
    interval_type: str
    schedule_enabled: bool
    adaptive_scheduling: bool
    max_retries: int
    retry_backoff_seconds: int
    current_retry_count: int
    next_run_at: float | None
    last_run_at: float | None
    is_paused: bool
    paused_at: float | None
    cancelled_at: float | None
    lock_token: str | None
    lock_acquired_at: float | None
    locked_by: str | None
    last_error: str | None
    metadata: dict[str, Any]
    created_at: float
    updated_at: float
    adapted_interval_seconds: float | None = Field(
        None,
        description="the interval adaptive scheduling chose after the source's last run "
        "(None: not adaptive, or no run observed yet)",
    )
    forced_planned_at: float | None = Field(
        None, description="set by force-run until that run starts: the run it brought forward"
    )
    crawl: str | None = Field(
        None, description="the crawl it crawls into: its source's (the crawl parameter elsewhere)"
    )

    @classmethod
    def of(
        cls,
        job: Job,
        adapted: Mapping[int, float] | None = None,
        crawls: Mapping[int, str] | None = None,
    ) -> JobOut:
        """``adapted``: seconds per source id, from ``SourceRepository.adapted_intervals``;
        ``crawls``: the crawl per source id (``SourceRepository.crawls``)."""
        return cls(**cls.item(job, adapted, crawls))

    @classmethod
    def item(
        cls,
        job: Job,
        adapted: Mapping[int, float] | None = None,
        crawls: Mapping[int, str] | None = None,
    ) -> dict[str, Any]:
        """The fields of ``of`` as plain values: a list page renders these as they are, where
        validating 50 models (and ``asdict``'s deep copies) cost more than reading them."""
        interval = (adapted or {}).get(job.source_id) if job.adaptive_scheduling else None
        derived = {
            "status": str(job.status),  # StrEnums: their values
            "interval_type": str(job.interval_type),
            "allowed_actions": allowed_actions(job.status),
            "adapted_interval_seconds": interval,
            "crawl": (crawls or {}).get(job.source_id),
        }
        return {
            name: derived[name] if name in derived else getattr(job, name)
            for name in JobOut.model_fields
        }


class ExecutionOut(BaseModel):
    """One run. While it runs, ``items_crawled`` (fetched), ``items_indexed`` (stored),
    ``items_failed`` and ``pages_per_second`` (between the last two samples) are its counters
    as last stored (every ``jobs_progress_interval``, 5 s) and ``duration_ms`` is the time
    since it started. Once it ended, ``pages_per_second`` is the run's average."""

    id: int
    job_id: int
    execution_number: int
    status: str
    started_at: float
    completed_at: float | None
    duration_ms: int | None
    items_crawled: int
    items_indexed: int
    items_failed: int
    pages_per_second: float | None
    error_message: str | None
    stack_trace: str | None
    cpu_time_ms: int | None
    memory_peak_mb: float | None
    retry_attempt: int
    metadata: dict[str, Any]
    crawl: str | None = Field(None, description="the crawl the run crawls into: its job's source's")

    @classmethod
    def of(
        cls, execution: Execution, now: float | None = None, crawl: str | None = None
    ) -> ExecutionOut:
        """``now``: the time a running execution's duration runs to; ``crawl``: the crawl its
        job's source crawls into."""
        out = cls(**asdict(execution), crawl=crawl)
        if out.status == "running":
            if out.duration_ms is None and now is not None:
                out.duration_ms = max(0, round((now - out.started_at) * 1000))
        elif out.duration_ms:
            out.pages_per_second = round(out.items_crawled * 1000 / out.duration_ms, 2)
        return out


class ProgressPointOut(BaseModel):
    at: float
    fetched: int
    stored: int
    failed: int


class ExecutionProgressOut(BaseModel):
    """An execution's counters over time (a sample every ``jobs_progress_interval`` while it
    ran, at most ``jobs_progress_samples``, thinned evenly when full), oldest first."""

    execution_id: int
    status: str
    samples: list[ProgressPointOut]


class LogLineOut(BaseModel):
    execution_id: int
    seq: int
    created_at: float
    level: str
    logger: str
    message: str


class UrlsIn(Strict):
    urls: list[str] = Field(min_length=1, max_length=1000)
    crawl: str | None = Field(None, min_length=1, max_length=200, description="namespace")
    priority: Literal["high", "normal", "low"] | None = None
