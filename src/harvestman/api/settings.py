"""The API's settings: plain values, resolved once from ``harvestman.config.Settings``.

The ``api_*`` fields of ``Settings`` (defaults < TOML ``[api]`` < ``HARVESTMAN_API_*`` < flags)
are the one place they are read; ``ApiSettings.from_settings`` copies them out so the routes
never look a setting up, and tests build an ``ApiSettings`` directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from harvestman.config import Settings

# Secrets that must never protect a real deployment; ``serve`` refuses them outside --dev.
DEFAULT_SECRETS = frozenset({"", "changeme", "change-me", "secret", "dev-secret-change-in-prod"})
DEV_SECRET = "harvestman-dev-secret-not-for-production"


def _setting(name: str, *, shown: bool = True) -> Any:
    """A field copied from the setting ``name``, with its default: no default is written twice
    (the setting's description says what it means)."""
    info = Settings.model_fields[name]
    meta = {"setting": name}
    if info.default_factory is not None:  # a list: each ApiSettings gets its own
        return field(
            default_factory=lambda: info.get_default(call_default_factory=True),
            repr=shown,
            metadata=meta,
        )
    return field(default=info.default, repr=shown, metadata=meta)


@dataclass(slots=True, kw_only=True)
class ApiSettings:
    """Everything the API reads: each field but ``dev`` is the setting it names, default and
    all.

    ``allow_networks`` lists CIDRs (``127.0.0.0/8``) or host names whose URLs the API accepts
    although they resolve to private, loopback or link-local addresses (tests allow 127.0.0.1);
    it is the crawler's ``network_allow`` (one list for both), unless overridden here.
    """

    jwt_secret: str = _setting("api_jwt_secret", shown=False)
    dev: bool = False
    redis_url: str | None = _setting("redis_url")
    redis_prefix: str = _setting("redis_prefix")
    rate_anonymous: int = _setting("api_rate_anonymous")
    rate_user: int = _setting("api_rate_user")
    rate_admin: int = _setting("api_rate_admin")
    rate_seed: int = _setting("api_rate_seed")  # on top of the role's limit
    rate_window: float = _setting("api_rate_window")
    allow_networks: list[str] = _setting("network_allow")  # noqa: RUF009 (a default_factory)
    crawl_name: str = _setting("crawl_name")  # the frontier and pages endpoints' default
    sse_interval: float = _setting("api_sse_interval")
    log_poll_interval: float = _setting("api_log_poll_interval")
    token_days: float = _setting("api_token_days")
    count_cache_seconds: float = _setting("api_count_cache_seconds")
    max_offset: int = _setting("api_max_offset")
    products_max_limit: int = _setting("api_products_max_limit")
    export_max_rows: int = _setting("api_export_max_rows")
    max_body_bytes: int = _setting("api_max_body_bytes")  # beyond: a 413, read no further
    max_json_depth: int = _setting("api_max_json_depth")  # deeper: a 422, parsed no further
    max_text_length: int = _setting("api_max_text_length")
    trusted_proxies: list[str] = _setting("api_trusted_proxies")  # noqa: RUF009 (a factory)
    login_failures: int = _setting("api_login_failures")  # per rate window, name and client
    login_hours: float = _setting("api_login_hours")

    @classmethod
    def from_settings(
        cls, settings: Settings, *, dev: bool = False, **overrides: Any
    ) -> ApiSettings:
        """The API's share of ``settings``, then ``overrides``."""
        values: dict[str, Any] = {"dev": dev}
        for each in fields(cls):
            if "setting" in each.metadata:
                value = getattr(settings, each.metadata["setting"])
                values[each.name] = list(value) if isinstance(value, list) else value
        values.update(overrides)
        return cls(**values)
