"""The crawl service's HTTP API (FastAPI): routers, auth, rate limits, SSE, metrics.

::

    app = create_app(settings, sql_store=store, job_store=jobs, scheduler=scheduler)
"""

from __future__ import annotations

import importlib
from typing import Any

# Everything loads on first use: FastAPI and the jobs package cost ~0.5 s to import, which
# every `harvestman` command would otherwise pay just because `serve` exists.
_HOMES = {
    "create_app": "harvestman.api.app",
    "Principal": "harvestman.api.auth",
    "Role": "harvestman.api.auth",
    "create_token": "harvestman.api.auth",
    "decode_token": "harvestman.api.auth",
    "resolve_secret": "harvestman.api.auth",
    "ApiSettings": "harvestman.api.settings",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(home), name)


__all__ = [
    "ApiSettings",
    "Principal",
    "Role",
    "create_app",
    "create_token",
    "decode_token",
    "resolve_secret",
]
