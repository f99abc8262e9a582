"""Which coordinator a worker process uses: Redis's when one is configured, else the store's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvestman.coord.interfaces import Coordinator

if TYPE_CHECKING:
    from harvestman.config import Settings
    from harvestman.store import Store


def coordinator_for(settings: Settings, store: Store, worker_id: str) -> Coordinator:
    """Redis's coordinator when one is configured, else the store's (its host gate only)."""
    from harvestman.coord.store import StoreCoordinator

    if settings.redis_url:
        from harvestman.coord.redis import RedisCoordinator

        return RedisCoordinator(
            settings.redis_url,
            store.hosts,
            prefix=settings.redis_prefix,
            worker_id=worker_id,
            seen_ttl=settings.crawl_visited_ttl,
        )
    return StoreCoordinator(store.hosts)
