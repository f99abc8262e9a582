"""The API's settings: plain values, resolved once from ``harvestman.config.Settings``.

The ``api_*`` fields of ``Settings`` (defaults < TOML ``[api]`` < ``HARVESTMAN_API_*`` < flags)
are the one place they are read; ``ApiSettings.from_settings`` copies them out so the routes
never look a setting up, and tests build an ``ApiSettings`` directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvestman.config import Settings

# Secrets that must never protect a real deployment; ``serve`` refuses them outside --dev.
DEFAULT_SECRETS = frozenset({"", "changeme", "change-me", "secret", "dev-secret-change-in-prod"})
DEV_SECRET = "harvestman-dev-secret-not-for-production"


@dataclass(slots=True, kw_only=True)
class ApiSettings:
    """Everything the API reads.

    ``allow_networks`` lists CIDRs (``127.0.0.0/8``) or host names whose URLs the API accepts
    although they resolve to private, loopback or link-local addresses (tests allow 127.0.0.1);
    it is the crawler's ``network_allow`` (one list for both), unless overridden here.
    """

    jwt_secret: str = field(default="", repr=False)
    dev: bool = False
    redis_url: str | None = None
    redis_prefix: str = "harvestman"
    rate_anonymous: int = 10  # requests per minute per client
    rate_user: int = 100
    rate_admin: int = 500
    rate_seed: int = 10  # POST /api/frontier/seed, on top of the role's limit
    rate_window: float = 60.0
    allow_networks: list[str] = field(default_factory=list)
    crawl_name: str = "default"  # the namespace the frontier and pages endpoints default to
    sse_interval: float = 5.0  # seconds between events of the /sse streams
    log_poll_interval: float = 0.5  # seconds between store reads of a followed job log
    token_days: float = 30.0
    count_cache_seconds: float = 5.0  # a list's total is recounted after this
    max_offset: int = 10_000  # beyond, lists are paged by cursor
    products_max_limit: int = 200  # most products (or history rows) on one page
    export_max_rows: int = 1_000_000  # most rows one download of a list holds
    max_body_bytes: int = 1024 * 1024  # a larger request body is a 413, read no further
    max_json_depth: int = 32  # a JSON body nested deeper is a 422, parsed no further
    max_text_length: int = 10_000  # a longer string in a body or parameter is a 422
    trusted_proxies: list[str] = field(default_factory=list)  # whose X-Forwarded-For counts
    login_failures: int = 5  # sign-in attempts per rate window, per name and per client
    login_hours: float = 24.0  # lifetime of a sign-in token

    @classmethod
    def from_settings(
        cls, settings: Settings, *, dev: bool = False, **overrides: object
    ) -> ApiSettings:
        """The API's share of ``settings``, then ``overrides``."""
        values: dict[str, object] = {
            "jwt_secret": settings.api_jwt_secret,
            "dev": dev,
            "redis_url": settings.redis_url,
            "redis_prefix": settings.redis_prefix,
            "rate_anonymous": settings.api_rate_anonymous,
            "rate_user": settings.api_rate_user,
            "rate_admin": settings.api_rate_admin,
            "rate_seed": settings.api_rate_seed,
            "rate_window": settings.api_rate_window,
            "allow_networks": list(settings.network_allow),
            "crawl_name": settings.crawl_name,
            "sse_interval": settings.api_sse_interval,
            "log_poll_interval": settings.api_log_poll_interval,
            "token_days": settings.api_token_days,
            "count_cache_seconds": settings.api_count_cache_seconds,
            "max_offset": settings.api_max_offset,
            "products_max_limit": settings.api_products_max_limit,
            "export_max_rows": settings.api_export_max_rows,
            "max_body_bytes": settings.api_max_body_bytes,
            "max_json_depth": settings.api_max_json_depth,
            "max_text_length": settings.api_max_text_length,
            "trusted_proxies": list(settings.api_trusted_proxies),
            "login_failures": settings.api_login_failures,
            "login_hours": settings.api_login_hours,
        }
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]
