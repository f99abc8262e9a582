"""Settings: one typed object, every default in one place.

Precedence, lowest first: defaults < config file (TOML) < ``HARVESTMAN_*`` environment < CLI flags.
A field ``fetch_timeout`` is ``HARVESTMAN_FETCH_TIMEOUT`` in the environment and ``fetch_timeout``
in the config file (top level, or ``timeout`` under a ``[fetch]`` table). Settings are resolved
once, at start-up, and plain values are passed down: hot loops never read this object.

>>> Settings().fetch_timeout
30.0
"""

from __future__ import annotations

import logging
import os
import tomllib
from collections.abc import Mapping
from contextvars import ContextVar
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from harvestman import __version__
from harvestman.errors import ConfigError

log = logging.getLogger(__name__)

DEFAULT_USER_AGENT = f"Harvestman/{__version__} (+https://github.com/harvestman-crawler/harvestman)"
CONFIG_ENV = "HARVESTMAN_CONFIG"
# Set while with_values derives settings from settings (the deep-crawl warning was given).
_DERIVING: ContextVar[bool] = ContextVar("harvestman_settings_deriving", default=False)
# The groups a config file may use as TOML tables: [fetch] timeout = 10 -> fetch_timeout.
GROUPS = (
    "api", "fetch", "frontier", "robots", "store", "crawl", "url", "redis", "worker", "discovery",
    "sitemap", "feed", "pagination", "archives", "validate", "breaker", "watchdog", "proxy",
    "extract", "render", "warc", "archive", "retention", "store", "stats", "network", "pattern",
    "backup", "log", "serve", "jobs",
)  # fmt: skip


# Settings' fields, grouped by concern: each group holds its fields and their defaults, and
# Settings inherits them all, so a field's name (its HARVESTMAN_* variable and config-file key)
# does not depend on its group. Checks across groups live on Settings. At run time a group is
# a plain class, whose annotated fields pydantic collects into Settings: as models (never
# validated alone, their schemas deferred) the fourteen cost ~15 ms of CPU more at each start.
# Type checkers see models, so Settings(field=...) is checked.
if TYPE_CHECKING:
    _Group = BaseModel
else:
    _Group = object


class StoreSettings(_Group):
    """The store and what a process writes to it."""

    # store
    database_url: str = Field(
        "sqlite:///harvestman.db", description="SQLAlchemy URL of the store (SQLite or PostgreSQL)"
    )
    store_schema_cache: str = Field(
        default_factory=lambda: str(
            Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "harvestman"
        ),
        description="where a new SQLite store's schema is copied from, migrated once by Alembic "
        "(store/template.py; default $XDG_CACHE_HOME/harvestman, else ~/.cache/harvestman; '': "
        "migrate each new store)",
    )
    store_batch_size: int = Field(200, ge=1, le=10_000, description="writes per store transaction")
    store_flush_interval: float = Field(0.25, gt=0, le=60, description="max seconds a write waits")
    stats_history: bool = Field(True, description="keep per-minute crawl counters in the store")
    stats_history_interval: float = Field(
        60.0, ge=1, le=3600, description="seconds between a process's stats history writes"
    )


class CoordinationSettings(_Group):
    """Workers on many machines: Redis, heartbeats, executions over a broker."""

    # coordination across processes (harvestman worker)
    redis_url: str | None = Field(None, description="Redis for many workers (None: none)")
    redis_prefix: str = Field("harvestman", min_length=1, description="prefix of Redis keys")
    worker_heartbeat_interval: float = Field(10.0, gt=0, le=600)
    worker_heartbeat_timeout: float = Field(30.0, gt=0, description="a silent worker is dead after")
    frontier_sweep_interval: float = Field(60.0, gt=0, description="stale-lease sweep period")
    frontier_refresh_interval: float = Field(5.0, gt=0, description="look for others' new work")

    # job executions over RabbitMQ (serve publishes, harvestman worker consumes)
    broker_url: str = Field("", repr=False, description="amqp://... ('': run executions in serve)")
    broker_queue_prefix: str = Field(
        "harvestman", min_length=1, max_length=100, description="prefix of the broker's queues"
    )
    broker_prefetch: int = Field(
        16,
        ge=1,
        le=256,
        description="executions a worker runs at once (its unacked messages); a"
        " politeness-bound execution keeps about one request in flight, so 16 keep"
        " crawl_concurrency's 32 busy with parsing and store time between",
    )
    broker_renew_interval: float = Field(
        2.0, gt=0, le=300, description="a worker renews its locks and looks for cancels every"
    )
    broker_takeover_seconds: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="a redelivered execution is taken over after its lock"
        " was not renewed for this long",
    )
    broker_publish_timeout: float = Field(
        10.0, gt=0, le=300, description="a publish not confirmed by then fails (s)"
    )
    broker_max_queued: int = Field(
        1000, ge=1, le=1_000_000, description="executions published and not yet taken, at most"
    )
    broker_republish_seconds: float = Field(
        300.0,
        gt=0,
        le=86400,
        description="a claim waiting in the queue this long is published again (its message"
        " may be lost; a duplicate is dropped on delivery); it is never failed",
    )


class CrawlSettings(_Group):
    """One crawl: its name, size, depth, scope and seeds, and its page processes."""

    # crawl
    crawl_name: str = Field("default", min_length=1, max_length=200, description="namespace")
    crawl_max_pages: int = Field(0, ge=0, description="stop after this many fetches (0: no limit)")
    crawl_max_depth: int = Field(3, ge=0, le=1000, description="link hops from a seed")
    crawl_concurrency: int = Field(32, ge=1, le=4096, description="requests in flight in total")
    crawl_max_links_per_page: int = Field(1000, ge=0, le=100_000)
    parse_processes: int = Field(
        default_factory=lambda: 1 if (os.cpu_count() or 1) >= 2 else 0,
        ge=0,
        le=64,
        description="processes that parse and analyze pages (0: in the crawler's; default: 1 "
        "with two cores or more)",
    )
    parse_processes_after: int = Field(
        500, ge=0, description="pages analyzed in the crawler's process before they start"
    )
    parse_processes_max_queue_wait: float = Field(
        0.1,
        ge=0,
        le=60,
        description="seconds pages may wait in a page process's queue before the crawler's "
        "process analyzes pages itself until it has caught up",
    )
    crawl_visited_ttl: float = Field(7 * 86400.0, ge=0, description="re-crawl after (seconds)")
    crawl_allow_domains: list[str] = Field(default_factory=list)
    crawl_include: list[str] = Field(default_factory=list, description="URL regexes to keep")
    crawl_exclude: list[str] = Field(default_factory=list, description="URL regexes to drop")
    crawl_seen_cache_size: int = Field(
        400_000, ge=0, description="recently seen URLs kept in memory (the store holds all)"
    )
    # A seeds file is streamed into the frontier a chunk at a time; the crawl's record keeps
    # a bounded digest of it (the first seeds and one seed per origin), see crawl/seeding.py.
    seeds_chunk_size: int = Field(
        10_000, ge=1, le=100_000, description="seeds-file lines normalized and written at once"
    )
    crawl_seeds_kept: int = Field(
        1000, ge=0, le=100_000, description="first seeds of a file kept in the crawl's record"
    )
    crawl_seed_origins_max: int = Field(
        100_000, ge=1, le=1_000_000, description="seed origins that join the crawl's scope"
    )


class FrontierSettings(_Group):
    """When a URL is due: politeness per host, leases, ingest rates."""

    # frontier / politeness
    frontier_delay: float = Field(1.0, ge=0, le=3600, description="seconds between requests/host")
    frontier_per_host_concurrency: int = Field(1, ge=1, le=1024)
    frontier_lease_seconds: float = Field(300.0, gt=0, description="a stale lease expires after")
    frontier_lease_batch: int = Field(64, ge=1, le=10_000, description="URLs leased per host")
    domain_settings_ttl: float = Field(
        5.0, gt=0, le=3600, description="seconds a worker keeps the per-domain settings"
    )
    frontier_ingest_rate: int = Field(
        0, ge=0, le=1_000_000, description="new URLs per second a crawl makes due (0: no limit)"
    )
    source_ingest_rate: int = Field(
        100,
        ge=0,
        le=1_000_000,
        description="frontier_ingest_rate of a source's crawl unless its ingest_rate option says",
    )


class FetchSettings(_Group):
    """One request: timeouts, sizes, retries, the User-Agent, the network guard."""

    # fetch
    fetch_timeout: float = Field(30.0, gt=0, le=3600)
    fetch_max_redirects: int = Field(5, ge=0, le=50)
    fetch_max_page_size: int = Field(10 * 1024 * 1024, ge=1024)
    fetch_max_retries: int = Field(3, ge=0, le=20)
    fetch_retry_backoff: float = Field(1.0, ge=0, le=3600, description="first retry delay (s)")
    fetch_user_agent: str = Field(DEFAULT_USER_AGENT, min_length=1)

    # the network guard (harvestman.guard), for the crawler and the API alike
    network_allow: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="CIDRs, address:port origins or host names allowed though private",
    )
    pattern_max_length: int = Field(
        1000, ge=1, le=100_000, description="longest user URL pattern (include/exclude regexes)"
    )


class DiscoverySettings(_Group):
    """Where URLs come from besides links: sitemaps, feeds, pagination, archives."""

    # discovery: what a site declares is followed; guessing URLs is opt-in (sources enable it)
    discovery_sitemaps: bool = Field(True, description="robots.txt Sitemap: and /sitemap.xml")
    discovery_feeds: bool = Field(False, description="RSS/Atom from <link rel=alternate>")
    discovery_pagination: bool = Field(False, description="speculate ?page=N+1, /page/N+1")
    discovery_archives: bool = Field(False, description="/archive and date paths")
    sitemap_max_urls: int = Field(50_000, ge=1)
    sitemap_max_bytes: int = Field(50 * 1024 * 1024, ge=1024)
    sitemap_max_depth: int = Field(3, ge=0, le=10, description="nesting of sitemap indexes")
    # A sitemap's URLs go to the frontier a batch at a time, each written before the next is
    # parsed, and only so many sitemaps are fetched and read at once: memory does not depend on
    # what the sitemaps hold (crawl/pages.py's ListingReader).
    sitemap_batch_size: int = Field(
        1000, ge=1, le=100_000, description="sitemap URLs parsed and written at once"
    )
    sitemap_concurrency: int = Field(
        1, ge=1, le=64, description="sitemaps fetched and read at once (each body is held)"
    )
    feed_poll_interval: float = Field(3600.0, gt=0, description="a feed is due again after")
    pagination_max_page: int = Field(10_000, ge=2)
    archives_min_interval: float = Field(86400.0, gt=0)
    archives_low_water: int = Field(10, ge=0)


class PageSettings(_Group):
    """What a fetched page is judged by: validation, near-duplicates, rendering."""

    # validation
    validate_pages: bool = Field(True, description="reject garbage pages before storing them")
    validate_min_bytes: int = Field(500, ge=0)
    validate_hard_cooldown: float = Field(600.0, ge=0, description="host pause after a hard one")
    near_duplicates: bool = Field(
        False, description="SimHash near-duplicate detection (~15% more CPU a page: opt-in)"
    )
    near_duplicate_distance: int = Field(3, ge=0, le=32)
    render_enabled: bool = Field(
        False, description="render pages that need JavaScript in headless Chromium (Playwright)"
    )
    render_browser: str = Field("/usr/bin/chromium", min_length=1, description="Chromium binary")
    render_concurrency: int = Field(2, ge=1, le=32, description="pages rendered at once")
    render_timeout: float = Field(30.0, gt=0, le=600)
    render_settle: float = Field(
        2.0, ge=0, le=60, description="wait this long at most for the network to go idle"
    )


class ResilienceSettings(_Group):
    """Circuit breakers per host and the stall watchdog."""

    # resilience
    breaker_enabled: bool = True
    breaker_failure_threshold: int = Field(5, ge=1)
    breaker_open_seconds: float = Field(60.0, gt=0)
    breaker_success_threshold: int = Field(2, ge=1)
    breaker_give_up_seconds: float = Field(
        600.0, ge=0, description="a host failing this long gives up its URLs (0: never)"
    )
    watchdog_stall_seconds: float = Field(300.0, gt=0)
    watchdog_check_interval: float = Field(10.0, gt=0)
    watchdog_network_retry: float = Field(30.0, gt=0)
    watchdog_check_url: str | None = Field(None, description="a URL that proves the network")


class SessionSettings(_Group):
    """Proxies, User-Agent rotation and cookies."""

    # proxies and sessions
    proxy_urls: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        repr=False,  # they may carry passwords
        description="http(s)/socks5 proxies, comma-separated",
    )
    proxy_max_consecutive_failures: int = Field(10, ge=1)
    proxy_probe_after: float = Field(300.0, gt=0)
    proxy_domain_rate: float = Field(1.0, gt=0, description="requests/s per (domain, proxy)")
    proxy_key: str = Field(
        "",
        repr=False,
        description="Fernet key that encrypts proxy passwords in the store (required with one)",
    )
    fetch_user_agents: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="rotate these User-Agents (off when empty)"
    )
    fetch_cookies: bool = Field(True, description="keep cookies per host, across restarts")


class OutputSettings(_Group):
    """What a crawl yields and keeps: products, text, parsers, images, archives."""

    # what a crawl yields
    extract_products: bool = Field(True, description="schema.org products from pages")
    extract_products_max_price: Decimal = Field(
        Decimal(10**9), gt=0, description="a product price above this is left out, as absurd"
    )
    products_recrawl_interval: float = Field(
        86400.0,
        ge=0,
        description="a product page is due again after this once its prices or availability "
        "changed (seconds, at most crawl_visited_ttl; doubled per unchanged re-crawl; 0: "
        "crawl_visited_ttl applies)",
    )
    products_recrawl_max_interval: float = Field(
        14 * 86400.0, gt=0, description="longest re-crawl interval of an unchanging product page"
    )
    store_text: bool = Field(
        False, description="keep pages' visible text (full-text search indexes it; costly)"
    )
    store_text_max_chars: int = Field(100_000, ge=0)
    extract_main_text: bool = Field(
        False, description="the article text without boilerplate (trafilatura, ~2-13 ms a page)"
    )
    parsers_enabled: bool = Field(True, description="run site parsers (settings and plugins)")
    parsers: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="site parser classes, 'module:Class', comma-separated (entry points too)",
    )
    crawl_images: bool = Field(
        False, description="download product images (politely, as frontier rows of kind image)"
    )
    image_max_bytes: int = Field(
        5 * 1024 * 1024, ge=1024, le=1024**3, description="largest image kept (bytes)"
    )
    image_max_pixels: int = Field(
        50_000_000, ge=1, le=10**9, description="largest image decoded (width x height)"
    )
    parser_rollouts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="new parser versions' shares, 'name@version[@domain]=share' (stored ones win)",
    )
    parser_rollout_refresh: float = Field(
        60.0, gt=0, le=86400, description="seconds between a crawl's reads of the stored rollouts"
    )
    warc_path: str | None = Field(None, description="write every exchange to this WARC file")
    archive_enabled: bool = Field(False, description="keep raw HTML bodies, content-addressed")
    archive_dir: str = Field("harvestman-archive", description="local raw archive directory")
    archive_s3_bucket: str | None = Field(None, description="an S3-compatible bucket instead")
    archive_s3_endpoint_url: str | None = None
    archive_s3_region: str | None = None
    archive_s3_access_key_id: str | None = None
    archive_s3_secret_access_key: str | None = None
    archive_s3_prefix: str = ""


class LifecycleSettings(_Group):
    """Retention of old rows and the service's own backups."""

    # data lifecycle (harvestman maintenance)
    retention_completed_days: float | None = Field(7.0, gt=0, description="None keeps them")
    retention_failed_days: float | None = Field(30.0, gt=0, description="exported, then deleted")
    retention_pages_days: float | None = Field(90.0, gt=0, description="archived to gzip JSONL")
    retention_errors_days: float | None = Field(
        30.0, gt=0, description="error_logs rows: archived to gzip JSONL, then deleted"
    )
    retention_stats_minutes_days: float | None = Field(
        7.0, gt=0, description="per-minute stats older than this are rolled up into days"
    )
    retention_export_dir: str = Field("retention", description="where exports and archives go")
    retention_batch_size: int = Field(1000, ge=1, le=20_000)
    retention_vacuum_free_fraction: float | None = Field(0.25, gt=0, le=1)

    # backups the service takes on its own (harvestman serve's leader; docs/OPERATIONS.md)
    backup_interval_hours: float | None = Field(
        None, gt=0, le=24 * 7, description="back the store up this often (None: never)"
    )
    backup_dir: str = Field("backups", description="where the scheduled backups go")
    backup_keep_days: float = Field(7.0, gt=0, description="older scheduled backups are deleted")
    backup_verify: bool = Field(
        True, description="restore each PostgreSQL backup into a scratch database and count rows"
    )
    backup_admin_url: str | None = Field(
        None,
        repr=False,
        description="a PostgreSQL role that may CREATE DATABASE (None: the store's)",
    )
    backup_pg_bin_dir: str | None = Field(
        None, description="where pg_dump and pg_restore are (None: PATH, /usr/lib/postgresql/*/bin)"
    )


class ServiceSettings(_Group):
    """The service's processes: log lines, in-process workers, job runs."""

    # the process's own log lines (serve, worker): stderr, readable text or JSON lines
    log_format: Literal["text", "json"] = Field(
        "text", description="text: readable lines; json: one JSON object per line"
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        "INFO", description="the least severe level written to stderr"
    )

    # harvestman serve: in-process crawl workers and the job log stream
    serve_workers: int | None = Field(
        None,
        ge=0,
        le=64,
        description="in-process crawl workers (None: 1 on SQLite, 0 on PostgreSQL)",
    )
    serve_worker_restart_delay: float = Field(
        5.0, gt=0, le=3600, description="seconds before a failed in-process worker starts again"
    )
    # the job scheduler (harvestman serve; jobs/wiring.py builds it and its duties from these)
    jobs_poll_interval: float = Field(
        10.0, gt=0, le=3600, description="seconds between looks for due jobs"
    )
    jobs_max_concurrent: int = Field(
        4, ge=0, le=1024, description="executions serve runs at once (without a broker)"
    )
    jobs_leader_ttl: float = Field(
        30.0, gt=0, le=3600, description="the leader's lease, renewed every third of it"
    )
    jobs_sweep_interval: float = Field(
        60.0, gt=0, le=86400, description="seconds between the leader's stale-lock sweeps"
    )
    jobs_metrics_interval: float = Field(
        30.0, gt=0, le=3600, description="seconds between aggregations of /api/scheduler"
    )
    jobs_history_max: int = Field(100, ge=1, description="executions kept per job, newest first")
    jobs_history_days: float = Field(30.0, gt=0, description="executions older are pruned")
    jobs_source_interval_minutes: int = Field(
        360, ge=1, le=10_000_000, description="interval of the recurring job a source gets"
    )
    jobs_retention_interval: float | None = Field(
        86400.0,
        gt=0,
        description="seconds between the leader's data retention runs (None: the service runs"
        " none; harvestman maintenance still does)",
    )
    jobs_log_flush_interval: float = Field(
        1.0, gt=0, le=60, description="seconds between stores of a run's new log lines"
    )
    jobs_stale_lock_seconds: float = Field(
        300.0,
        gt=0,
        le=86400,
        description="a run's lock not renewed for this long is swept as failed (its holder is"
        " gone); a claim waiting in the broker's queue is never stale",
    )
    # A run's log keeps at most 10,000 lines (jobs.logs.LogCapture): the URL lines stay below
    # it, so the run's own lines (its end, its errors) are never the ones dropped.
    job_log_url_lines: int = Field(
        5000,
        ge=0,
        le=9000,
        description="fetched URLs a run's log has a line for (the first ones; 0: none)",
    )
    jobs_progress_interval: float = Field(
        5.0, gt=0, le=300, description="seconds between stores of a running execution's counters"
    )
    jobs_progress_samples: int = Field(
        360,
        ge=10,
        le=10_000,
        description="counter samples kept per execution for its chart (thinned when full)",
    )
    api_log_poll_interval: float = Field(
        0.5, gt=0, le=60, description="seconds between store reads of a followed job log"
    )


class HttpApiSettings(_Group):
    """The HTTP API: tokens, rate limits, bounds of a request and of a list."""

    # the API (harvestman serve); redis_url, redis_prefix and crawl_name apply to it too
    api_jwt_secret: str = Field(
        "", repr=False, description="HS256 secret of the bearer tokens (required outside --dev)"
    )
    api_rate_anonymous: int = Field(10, ge=1, description="requests/min per anonymous client")
    api_rate_user: int = Field(100, ge=1, description="requests/min per user token")
    api_rate_admin: int = Field(500, ge=1, description="requests/min per admin token")
    api_rate_seed: int = Field(10, ge=1, description="POST /api/frontier/seed per min")
    api_rate_window: float = Field(60.0, gt=0, le=86400, description="rate-limit window (s)")
    api_allow_networks: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="the old name of network_allow (merged into it)"
    )
    api_sse_interval: float = Field(5.0, gt=0, le=3600, description="seconds between SSE events")
    api_token_days: float = Field(30.0, gt=0, le=3650, description="default token lifetime")
    api_count_cache_seconds: float = Field(
        5.0, ge=0, le=3600, description="a list's total is recounted after (0: every request)"
    )
    api_max_offset: int = Field(
        10_000, ge=0, le=10**9, description="largest offset a list takes (beyond: cursors)"
    )
    api_products_max_limit: int = Field(
        200, ge=1, le=1000, description="most products (or history rows) one API page holds"
    )
    api_export_max_rows: int = Field(
        1_000_000,
        ge=1,
        le=10**9,
        description="most rows one download of a list holds (GET /api/pages/export, "
        "/api/products/export); `harvestman export` has no such bound",
    )
    api_max_body_bytes: int = Field(
        1024 * 1024, ge=1024, le=1024**3, description="largest request body (bytes; beyond: 413)"
    )
    api_max_json_depth: int = Field(
        32, ge=2, le=200, description="deepest nesting of a JSON body (beyond: 422)"
    )
    api_max_text_length: int = Field(
        10_000,
        ge=300,
        le=1024**2,
        description="longest string in a body or parameter, in characters (beyond: 422)",
    )
    api_trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="addresses whose X-Forwarded-For/-Proto are believed (comma-sep.; none)",
    )
    api_login_failures: int = Field(
        5,
        ge=1,
        description="sign-in attempts per window per user name and per client (a right one "
        "given back)",
    )
    api_login_hours: float = Field(
        24.0, gt=0, le=24 * 365, description="lifetime of a token from POST /api/auth/login"
    )


class UrlSettings(_Group):
    """robots.txt and URL normalization."""

    # robots
    robots_ttl: float = Field(3600.0, ge=0, description="robots.txt cache lifetime (s)")
    robots_max_bytes: int = Field(500 * 1024, ge=1024)

    # url
    url_tracking_params: list[str] = Field(
        default_factory=lambda: ["utm_*", "ref", "source", "fbclid", "gclid"]
    )
    url_max_length: int = Field(2048, ge=64, le=65536)
    url_trailing_slash: Literal["keep", "add", "strip"] = Field(
        "keep", description="a path's trailing slash: as written, added (not to a file), stripped"
    )


class Settings(
    StoreSettings,
    CoordinationSettings,
    CrawlSettings,
    FrontierSettings,
    FetchSettings,
    DiscoverySettings,
    PageSettings,
    ResilienceSettings,
    SessionSettings,
    OutputSettings,
    LifecycleSettings,
    ServiceSettings,
    HttpApiSettings,
    UrlSettings,
    BaseSettings,
):
    """Every setting Harvestman reads, with the documented defaults (in the groups above)."""

    model_config = SettingsConfigDict(
        env_prefix="HARVESTMAN_", extra="forbid", validate_default=True, frozen=True
    )

    @field_validator("database_url", mode="before")
    @classmethod
    def _postgres_scheme(cls, value: Any) -> Any:
        # Heroku, Render and libpq's docs write postgres://; SQLAlchemy knows only postgresql.
        if isinstance(value, str) and value.startswith(("postgres://", "postgres+")):
            return "postgresql" + value.removeprefix("postgres")
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value  # info, INFO alike

    @field_validator("log_format", mode="before")
    @classmethod
    def _format_lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @field_validator(
        "proxy_urls",
        "fetch_user_agents",
        "api_allow_networks",
        "api_trusted_proxies",
        "network_allow",
        "parsers",
        "parser_rollouts",
        mode="before",
    )
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                import json

                return json.loads(value)
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("proxy_urls")
    @classmethod
    def _proxies_valid(cls, urls: list[str]) -> list[str]:
        from harvestman.proxies import parse_proxy_urls

        try:
            return parse_proxy_urls(urls)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _proxy_passwords_encrypted(self) -> Settings:
        from harvestman.credentials import ProxyCipher, require_key

        try:
            require_key(self.proxy_urls, self.proxy_key)
            if self.proxy_key:
                ProxyCipher(self.proxy_key)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return self

    @field_validator("crawl_include", "crawl_exclude")
    @classmethod
    def _regexes_compile(cls, patterns: list[str]) -> list[str]:
        from harvestman.errors import PatternError
        from harvestman.patterns import compile_pattern

        for pattern in patterns:
            try:
                compile_pattern(pattern)
            except PatternError as exc:
                raise ValueError(str(exc)) from None
        return patterns

    @model_validator(mode="after")
    def _one_network_allow_list(self) -> Settings:
        # api_allow_networks is the old name: both feed the one list the guard reads.
        extra = [entry for entry in self.api_allow_networks if entry not in self.network_allow]
        if extra:
            object.__setattr__(self, "network_allow", [*self.network_allow, *extra])
        return self

    @field_validator("parser_rollouts")
    @classmethod
    def _rollouts_parse(cls, value: list[str]) -> list[str]:
        from harvestman.records import parse_rollout

        for text in value:
            try:
                parse_rollout(text)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _patterns_short_enough(self) -> Settings:
        for pattern in (*self.crawl_include, *self.crawl_exclude):
            if len(pattern) > self.pattern_max_length:
                raise ValueError(
                    f"pattern of {len(pattern)} characters is longer than"
                    f" pattern_max_length ({self.pattern_max_length})"
                )
        return self

    @model_validator(mode="after")
    def _takeover_after_renewals(self) -> Settings:
        # A live holder renews several times within the takeover time, or it loses its runs.
        if self.broker_takeover_seconds < 3 * self.broker_renew_interval:
            raise ValueError(
                f"broker_takeover_seconds ({self.broker_takeover_seconds}) must be at least"
                f" 3 × broker_renew_interval ({self.broker_renew_interval})"
            )
        return self

    @model_validator(mode="after")
    def _warn_deep_crawls(self) -> Settings:
        # Settings derived for a source (with_values) were warned about where they were made.
        if self.crawl_max_depth > 5 and not _DERIVING.get():
            log.warning(
                "max depth %d is above 5: the crawl may grow very large", self.crawl_max_depth
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # init (CLI flags) > environment > config file > defaults
        return (init_settings, env_settings, _ConfigFileSource(settings_cls))


# A source's options: the settings a source sets for its own crawls (option -> setting). This
# is their one declaration: an option's type, bounds and description are its setting's, and
# jobs.records.SourceOptions, the API's SourceOptionsIn and the job runner derive from it.
SOURCE_OPTIONS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "main_text": "extract_main_text",
        "feeds": "discovery_feeds",
        "pagination": "discovery_pagination",
        "archives": "discovery_archives",
        "near_duplicates": "near_duplicates",
        "store_text": "store_text",
        "images": "crawl_images",
        "ingest_rate": "frontier_ingest_rate",
        "trailing_slash": "url_trailing_slash",
    }
)


def source_option_fields() -> dict[str, Any]:
    """The source options as pydantic field definitions (``create_model``): each its setting's
    type and bounds, or None (the service's setting), described as the setting is."""
    found: dict[str, Any] = {}
    for option, setting in SOURCE_OPTIONS.items():
        info = Settings.model_fields[setting]
        kind: Any = (
            Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        )
        found[option] = (kind | None, Field(default=None, description=info.description))
    return found


class _ConfigFileSource(PydanticBaseSettingsSource):
    """Reads the TOML file named by ``HARVESTMAN_CONFIG`` (set by ``--config``)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError  # __call__ does the work

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get(CONFIG_ENV)
        if not path:
            return {}
        return read_config_file(Path(path))


def read_config_file(path: Path) -> dict[str, Any]:
    """Flatten a TOML config file into field names; group tables prefix their keys."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key in GROUPS and isinstance(value, dict):
            for sub, subvalue in value.items():
                flat[f"{key}_{sub}"] = subvalue
        else:
            flat[key] = value
    return flat


def load_settings(**overrides: Any) -> Settings:
    """Build the settings, translating validation failures into one readable ConfigError.

    ``overrides`` are CLI flags; ``None`` values mean "not given" and are dropped.
    """
    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        return Settings(**given)
    except ValidationError as exc:
        raise _config_error(exc) from None


def with_values(settings: Settings, values: Mapping[str, Any]) -> Settings:
    """``settings`` with ``values`` in place, validated as a whole as at start-up (a source's
    options, its scope and depth); ConfigError names each value refused.

    The environment and the config file are not read again: ``settings`` already hold them.
    Measured at ~0.1 ms of CPU a call (the job runner's, twice per run; through BaseSettings'
    sources, read again, 10-30 ms), where ``model_copy(update=...)``, which checks nothing,
    took ~5 us.
    """
    derived = Settings.__new__(Settings)
    token = _DERIVING.set(True)
    try:  # BaseModel's __init__: BaseSettings' would read every source again
        BaseModel.__init__(derived, **{**settings.model_dump(), **values})
        return derived
    except ValidationError as exc:
        raise _config_error(exc) from None
    finally:
        _DERIVING.reset(token)


def _config_error(exc: ValidationError) -> ConfigError:
    lines = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        if not where:  # a check across settings: its input is every setting, secrets too
            lines.append(f"  settings: {error['msg']}")
            continue
        lines.append(f"  {where}: {error['msg']} (got {_shown(where, error.get('input'))!r})")
    return ConfigError("invalid settings:\n" + "\n".join(lines))


_SECRETS = ("api_jwt_secret", "proxy_key", "archive_s3_secret_access_key")


def _shown(where: str, value: Any) -> Any:
    """A refused setting's value as an error may print it: secrets hidden, proxy passwords
    masked."""
    if where.startswith(_SECRETS):
        return "***"
    if where.startswith("proxy_urls"):
        from harvestman.proxies import redact_proxy_url

        if isinstance(value, str):
            return redact_proxy_url(value)
        if isinstance(value, list):
            return [redact_proxy_url(item) if isinstance(item, str) else item for item in value]
    return value
