"""Host slots: a request holds its host's turn from lease to response.

Locally the frontier spaces a host's requests; when workers share a coordinator, the shared
host gate does it across workers too (a token per request, released with the delay owed).
"""

from __future__ import annotations

from collections.abc import Callable

from harvestman.coord import Coordinator
from harvestman.crawl.frontier import Frontier
from harvestman.records import CrawlRequest


class HostSlots:
    """The frontier's host slots, and the coordinator's when it is shared."""

    def __init__(
        self,
        frontier: Frontier,
        coordinator: Coordinator,
        clock: Callable[[], float],
        *,
        per_host_concurrency: int,
        gate_hold: float,
    ) -> None:
        self.frontier = frontier
        self.coordinator = coordinator
        self.shared = coordinator.shared
        self.clock = clock
        self.per_host_concurrency = per_host_concurrency
        self.gate_hold = gate_hold  # a token outlives a crashed holder by this much
        self.tokens: dict[int, str] = {}

    async def acquire(self, request: CrawlRequest) -> bool:
        """Take the shared host gate (always granted without one); False: another worker has
        the host, and the request is back in the frontier until it may be free."""
        if not self.shared:
            return True
        # The operator's concurrency for the host, when set (domain_settings), else the crawl's.
        limit = self.frontier.concurrency_of(request.host)
        token, wait = await self.coordinator.acquire_host(request.host, limit, self.gate_hold)
        if token is None:
            self.frontier.requeue(request, not_before=self.clock() + wait)
            return False
        self.tokens[request.id] = token
        return True

    async def release(
        self, request: CrawlRequest, *, fetched: bool = True, not_before: float = 0.0
    ) -> None:
        """The request is done with its host (``fetched``: a request went out)."""
        self.frontier.release(request, fetched=fetched, not_before=not_before)
        if self.tokens:  # a shared host gate was taken (no await on the local path)
            await self._release_token(request, fetched, not_before)

    async def requeue(
        self, request: CrawlRequest, not_before: float = 0.0, *, fetched: bool = False
    ) -> None:
        """The request goes back to the frontier's buffer, not before ``not_before``."""
        self.frontier.requeue(request, not_before=not_before)
        if self.tokens:
            await self._release_token(request, fetched, not_before)

    async def _release_token(self, request: CrawlRequest, fetched: bool, not_before: float) -> None:
        token = self.tokens.pop(request.id, None)
        if token is not None:
            delay = self.frontier.delay_of(request.host) if fetched else 0.0
            delay = max(delay, not_before - self.clock())
            await self.coordinator.release_host(request.host, token, delay)
