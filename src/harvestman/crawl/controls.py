"""The operators' per-domain settings in a running crawl: read from the store every
``domain_settings_ttl`` seconds and handed to the frontier (pause, delay, concurrency,
priority) and to the outcomes (re-crawl interval).

Every worker reads them on its own, so a change made over the API is in force everywhere
within one TTL; no message has to reach the workers.
"""

from __future__ import annotations

import asyncio
import logging

from harvestman.crawl.frontier import Frontier
from harvestman.crawl.outcomes import Outcomes
from harvestman.errors import StoreError
from harvestman.records import DomainControl
from harvestman.store import ControlStore

log = logging.getLogger(__name__)


class DomainControls:
    """Reads ``domain_settings`` and applies them; ``loop`` repeats it every ``ttl`` seconds."""

    def __init__(self, store: ControlStore, outcomes: Outcomes, *, ttl: float) -> None:
        self.store = store
        self.outcomes = outcomes
        self.ttl = ttl
        self.current: dict[str, DomainControl] = {}

    async def refresh(self, frontier: Frontier) -> None:
        """Read the settings once and apply them; a store failure keeps the last ones."""
        try:
            controls = await self.store.domain_controls()
        except StoreError as exc:
            log.warning("could not read the domain settings (%s): keeping the last ones", exc)
            return
        if controls != self.current:
            log.info("domain settings changed: %d hosts set", len(controls))
        self.current = controls
        frontier.apply_controls(controls)
        self.outcomes.recrawl = {
            host: control.recrawl_interval
            for host, control in controls.items()
            if control.recrawl_interval is not None
        }

    async def loop(self, frontier: Frontier) -> None:
        while True:
            await asyncio.sleep(self.ttl)
            await self.refresh(frontier)
