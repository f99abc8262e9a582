"""The jobs domain's records: sources, jobs, executions, claims and log lines (plain dataclasses).

``SourceSpec`` and ``JobSpec`` are what a caller asks for and are checked by ``validate()``;
``Source``, ``Job`` and ``Execution`` are what the store holds. Times are UNIX epoch seconds.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

from pydantic import ConfigDict, ValidationError, create_model

from harvestman.config import SOURCE_OPTIONS, source_option_fields
from harvestman.errors import PatternError, UrlError
from harvestman.jobs.errors import InvalidSpec
from harvestman.jobs.states import JobStatus
from harvestman.patterns import compile_pattern
from harvestman.urls import normalize_url, refusal

log = logging.getLogger(__name__)

T = TypeVar("T")

# An execution's metadata when it is a run asked for by hand (force-run, "Run now"), from the
# moment it starts: ``forced`` true, and the planned run it brought forward.
FORCED = "forced"
FORCED_PLANNED = "forced_planned_at"

DEFAULT_MAX_DEPTH = 3
DEEP_CRAWL_WARNING = 5


class IntervalType(StrEnum):
    MINUTES = "minutes"
    HOURS = "hours"
    DAYS = "days"


UNIT_SECONDS: dict[IntervalType, int] = {
    IntervalType.MINUTES: 60,
    IntervalType.HOURS: 3600,
    IntervalType.DAYS: 86400,
}


class ExecutionStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(slots=True, kw_only=True)
class ScopeRules:
    """Which discovered URLs a source's crawl keeps (see ``harvestman.urls.Scope``)."""

    allow_domains: list[str] = field(default_factory=list)
    include: list[str] = field(default_factory=list)  # URL regexes to keep
    exclude: list[str] = field(default_factory=list)  # URL regexes to drop


class SourceOptions:
    """Crawl options a source turns on (``True``) or off (``False``); ``None`` leaves the
    service's setting. They cost requests or CPU, so they are off for a plain crawl and meant
    to be enabled per source: ``main_text`` (the article text, trafilatura), ``feeds`` (RSS and
    Atom links followed), ``pagination`` (``?page=N+1`` guessed), ``archives`` (date paths
    guessed), ``near_duplicates`` (SimHash), ``store_text`` (the visible text kept, searchable),
    ``images`` (product images downloaded, ``crawl_images``).
    Two are values, not switches: ``ingest_rate`` (new URLs per second the crawl makes due,
    0: no limit; the service's ``source_ingest_rate`` when None) and ``trailing_slash``
    (``keep``, ``add`` or ``strip``: ``url_trailing_slash``).

    The options are declared in ``harvestman.config.SOURCE_OPTIONS``: each takes its setting's
    type and bounds, checked strictly (JSON's types: ``1`` is no boolean) when it is made.

    >>> SourceOptions(feeds=True, ingest_rate=None).given()
    {'feeds': True}
    """

    __slots__ = ("_given",)

    def __init__(self, **options: bool | int | str | None) -> None:
        self._given = _checked_options(options)

    @classmethod
    def of(cls, value: Mapping[str, Any]) -> SourceOptions:
        """Options from a mapping of option names to values (``None``: the default).

        Raises InvalidSpec for a name that is no option or a value its setting refuses.
        """
        return cls(**{str(name): setting for name, setting in value.items()})

    def given(self) -> dict[str, bool | int | str]:
        """The options set (as stored: absent ones are the service's settings)."""
        return dict(self._given)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SourceOptions):
            return NotImplemented
        return self._given == other._given

    __hash__ = None  # type: ignore[assignment]  # mutable records are not hashed

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self._given.items())
        return f"SourceOptions({shown})"


# The options' values checked strictly, as their settings are typed and bounded.
_OPTION_VALUES = create_model(
    "SourceOptionValues",
    __config__=ConfigDict(extra="forbid", strict=True),
    **source_option_fields(),
)


def _checked_options(options: Mapping[str, Any]) -> dict[str, bool | int | str]:
    try:
        checked = _OPTION_VALUES.model_validate(options)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else "options"
        if error["type"] == "extra_forbidden":
            raise InvalidSpec(
                f"options.{name}", f"is not an option ({', '.join(sorted(SOURCE_OPTIONS))})"
            ) from None
        raise InvalidSpec(f"options.{name}", error["msg"]) from None
    return {name: value for name, value in checked if value is not None}


@dataclass(slots=True, kw_only=True)
class SourceSpec:
    """A site to crawl. ``max_depth`` 0 means the default (3); ``crawl_delay`` None means the
    robots.txt Crawl-delay, else the service's default; ``max_pages`` 0 means no limit."""

    name: str
    start_urls: list[str]
    max_depth: int = 0
    scope: ScopeRules = field(default_factory=ScopeRules)
    crawl_delay: float | None = None
    max_pages: int = 0
    enabled: bool = True
    options: SourceOptions = field(default_factory=SourceOptions)

    @property
    def effective_max_depth(self) -> int:
        return self.max_depth or DEFAULT_MAX_DEPTH

    def validate(self) -> None:
        """Raise InvalidSpec for the first bad field; start URLs come back normalized.

        A max depth above 5 is allowed but logged as a warning: such crawls grow very large.
        """
        self.name = self.name.strip() if isinstance(self.name, str) else self.name
        if not isinstance(self.name, str) or not 1 <= len(self.name) <= 200:
            raise InvalidSpec("name", "must be 1 to 200 characters")
        if not self.start_urls:
            raise InvalidSpec("start_urls", "at least one start URL is needed")
        self.start_urls = list(dict.fromkeys(_http_url("start_urls", u) for u in self.start_urls))
        if not 0 <= self.max_depth <= 1000:
            raise InvalidSpec("max_depth", "must be between 0 (the default, 3) and 1000")
        if self.crawl_delay is not None and not 0 <= self.crawl_delay <= 3600:
            raise InvalidSpec("crawl_delay", "must be between 0 and 3600 seconds")
        if self.max_pages < 0:
            raise InvalidSpec("max_pages", "must be 0 (no limit) or more")
        if isinstance(self.options, Mapping):
            self.options = SourceOptions.of(self.options)
        elif not isinstance(self.options, SourceOptions):  # checked when it was made
            raise InvalidSpec("options", "must be an object of option names")
        for name in ("include", "exclude"):
            for pattern in getattr(self.scope, name):
                try:  # RE2, as the crawl will match it; its length is bounded by the caller
                    compile_pattern(pattern, max_length=len(pattern))
                except PatternError as exc:
                    raise InvalidSpec(f"scope.{name}", str(exc)) from None
        if self.max_depth > DEEP_CRAWL_WARNING:
            log.warning(
                "source %r: max depth %d is above %d, the crawl may grow very large",
                self.name,
                self.max_depth,
                DEEP_CRAWL_WARNING,
            )


def crawl_name(name: str, source_id: int) -> str:
    """The crawl namespace of a new source: its name as a slug (ASCII, lower case, words
    joined by ``-``, at most 60 characters), then its id, which keeps it unique (the id is the
    part after the last ``-``) and never reused.

    >>> crawl_name("Kettles & Co. Shop", 12), crawl_name("Café Zürich", 3), crawl_name("!!", 4)
    ('kettles-co-shop-12', 'cafe-zurich-3', 'source-4')
    """
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:60].rstrip("-")
    return f"{slug or 'source'}-{source_id}"


@dataclass(slots=True, kw_only=True)
class Source(SourceSpec):
    id: int
    created_at: float
    updated_at: float
    # The crawl namespace its jobs crawl into (pages, frontier), fixed when it was created;
    # sources from before migration 0024 have ``source-<id>``. Renames do not move it.
    crawl: str = ""

    def __post_init__(self) -> None:
        if not self.crawl:
            self.crawl = f"source-{self.id}"


@dataclass(slots=True, kw_only=True)
class JobSpec:
    """A crawl of a source, once or every interval.

    ``interval_minutes`` counts units of ``interval_type`` (360 minutes, or 6 hours). A job with
    no interval, or with ``schedule_enabled`` false, is a one-time job: it runs at once (or at
    ``next_run_at`` when given) and then rests completed.
    """

    source_id: int
    url: str
    interval_minutes: int | None = None
    interval_type: IntervalType = IntervalType.MINUTES
    schedule_enabled: bool = True
    adaptive_scheduling: bool = True
    max_retries: int = 3
    retry_backoff_seconds: int = 60
    next_run_at: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def interval_seconds(self) -> float | None:
        """The baseline interval in seconds; None for a one-time job."""
        if not self.is_recurring:
            return None
        assert self.interval_minutes is not None
        return float(self.interval_minutes * UNIT_SECONDS[IntervalType(self.interval_type)])

    @property
    def is_recurring(self) -> bool:
        return self.schedule_enabled and self.interval_minutes is not None

    def validate(self) -> None:
        """Raise InvalidSpec for the first bad field (the source's existence is the store's)."""
        if not isinstance(self.source_id, int) or self.source_id < 1:
            raise InvalidSpec("source_id", "is required")
        self.url = _http_url("url", self.url)
        if self.interval_minutes is not None and not 1 <= self.interval_minutes <= 10_000_000:
            raise InvalidSpec("interval_minutes", "must be at least 1 (or null for a one-time job)")
        try:
            self.interval_type = IntervalType(self.interval_type)
        except ValueError:
            raise InvalidSpec("interval_type", "must be minutes, hours or days") from None
        if not 0 <= self.max_retries <= 100:
            raise InvalidSpec("max_retries", "must be between 0 and 100")
        if not 0 <= self.retry_backoff_seconds <= 86400:
            raise InvalidSpec("retry_backoff_seconds", "must be between 0 and 86400")
        if not isinstance(self.metadata, dict):
            raise InvalidSpec("metadata", "must be a JSON object")
        try:
            json.dumps(self.metadata)
        except (TypeError, ValueError) as exc:
            raise InvalidSpec("metadata", f"must be JSON: {exc}") from None


@dataclass(slots=True, kw_only=True)
class Job(JobSpec):
    id: int
    status: JobStatus
    current_retry_count: int = 0
    is_paused: bool = False
    paused_at: float | None = None
    cancelled_at: float | None = None
    lock_token: str | None = None
    lock_acquired_at: float | None = None
    locked_by: str | None = None
    last_run_at: float | None = None
    last_moved_at: float | None = None
    last_error: str | None = None
    # Set by force-run: the run it brought forward; moved to the run's execution
    # (``FORCED``, ``FORCED_PLANNED``) as that run starts.
    forced_planned_at: float | None = None
    created_at: float
    updated_at: float

    @property
    def is_forced(self) -> bool:
        """Whether the next run was asked for by hand (force-run, "Run now")."""
        return self.forced_planned_at is not None

    @property
    def made_due_by_hand(self) -> bool:
        """Made due by a person (force-run, retry): a forced run, or ``next_run_at`` is the
        time of that action, which is also its last change. Its run passes the scheduled ones
        however it is published (at once, or by a later poll when the broker was away)."""
        return self.is_forced or (
            self.next_run_at is not None and self.next_run_at == self.updated_at
        )


@dataclass(slots=True, kw_only=True)
class Execution:
    """One run of a job."""

    id: int
    job_id: int
    execution_number: int
    status: ExecutionStatus
    started_at: float
    completed_at: float | None = None
    duration_ms: int | None = None
    items_crawled: int = 0
    items_indexed: int = 0
    error_message: str | None = None
    stack_trace: str | None = None
    cpu_time_ms: int | None = None
    memory_peak_mb: float | None = None
    retry_attempt: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    # Stored while the run goes (jobs.progress); items_crawled and items_indexed are too.
    items_failed: int = 0
    pages_per_second: float | None = None


@dataclass(slots=True, frozen=True)
class ProgressSample:
    """An execution's counters at ``at`` (the store's clock): a point of its chart."""

    at: float
    fetched: int
    stored: int
    failed: int


@dataclass(slots=True, kw_only=True)
class ExecutionResult:
    """What a runner reports about one execution.

    ``start_hashes`` maps each start URL to the SHA-256 of its content as fetched in this run,
    or None when it could not be fetched or hashed (adaptive scheduling then leaves the
    interval alone).
    """

    status: ExecutionStatus
    items_crawled: int = 0
    items_indexed: int = 0
    error_message: str | None = None
    stack_trace: str | None = None
    cpu_time_ms: int | None = None
    memory_peak_mb: float | None = None
    start_hashes: dict[str, str | None] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Claim:
    """A job this instance holds the run lock of, and the execution row opened for the run.

    ``job`` is the job as it was due: its ``next_run_at`` is the planned run, the phase that a
    recurring job keeps.
    """

    job: Job
    token: str
    execution: Execution


@dataclass(slots=True, frozen=True)
class LogLine:
    """One captured log record of an execution; ``seq`` orders an execution's lines."""

    execution_id: int
    seq: int
    created_at: float
    level: str
    logger: str
    message: str


@dataclass(slots=True)
class ResultPage(Generic[T]):
    """A page of a list, the total it was cut from (None: not counted) and the order key to
    pass as ``after`` for the next page (None: this is the last)."""

    items: list[T]
    total: int | None
    limit: int
    offset: int
    next_after: int | str | None = None


def _http_url(name: str, url: object) -> str:
    if not isinstance(url, str):
        raise InvalidSpec(name, "must be a URL")
    try:
        normalized = normalize_url(url.strip())
    except UrlError as exc:
        raise InvalidSpec(name, f"not a crawlable URL ({refusal(exc)}): {url[:200]!r}") from None
    if not normalized.startswith(("http://", "https://")):
        raise InvalidSpec(name, f"only http and https URLs are crawled: {url[:200]!r}")
    return normalized
