"""The API's settings: plain values, resolved once by the caller (``harvestman serve``).

They live here until the lead moves them into ``harvestman.config.Settings`` (as ``api_*``
fields); ``from_env`` reads the same names from the environment meanwhile.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

# Secrets that must never protect a real deployment; ``serve`` refuses them outside --dev.
DEFAULT_SECRETS = frozenset({"", "changeme", "change-me", "secret", "dev-secret-change-in-prod"})
DEV_SECRET = "harvestman-dev-secret-not-for-production"


@dataclass(slots=True, kw_only=True)
class ApiSettings:
    """Everything the API reads.

    ``allow_networks`` lists CIDRs (``127.0.0.0/8``) or host names whose URLs the API accepts
    although they resolve to private, loopback or link-local addresses (tests allow 127.0.0.1).
    """

    jwt_secret: str = ""
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
    token_days: float = 30.0

    @classmethod
    def from_env(cls, *, dev: bool = False, **overrides: object) -> ApiSettings:
        """Settings from ``HARVESTMAN_API_*`` variables, then ``overrides``."""
        env = os.environ
        values: dict[str, object] = {
            "jwt_secret": env.get("HARVESTMAN_API_JWT_SECRET", ""),
            "dev": dev,
            "allow_networks": [
                part.strip()
                for part in env.get("HARVESTMAN_API_ALLOW_NETWORKS", "").split(",")
                if part.strip()
            ],
        }
        for name in ("rate_anonymous", "rate_user", "rate_admin", "rate_seed"):
            raw = env.get(f"HARVESTMAN_API_{name.upper()}")
            if raw:
                values[name] = int(raw)
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]
