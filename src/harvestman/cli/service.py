"""``serve``, ``token`` and ``admin``: the crawl service and its shared state.

``serve`` and ``token`` live with the API (``harvestman.api.commands``), which loads FastAPI
only when ``serve`` runs; ``harvestman.cli`` mounts them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from harvestman.cli.exits import err, usage_error
from harvestman.cli.options import ConfigOption, DatabaseUrlOption, DbOption, RedisOption
from harvestman.cli.runtime import run
from harvestman.cli.stores import open_store

if TYPE_CHECKING:
    from harvestman.config import Settings
    from harvestman.store import SqlStore

SERVE_HELP = "Run the crawl service: REST API, dashboard, scheduler."

admin_app = typer.Typer(help="Maintenance of shared state.", no_args_is_help=True)


@admin_app.command("rebuild-cache")
def rebuild_cache(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    redis_url: RedisOption = None,
    config: ConfigOption = None,
) -> None:
    """Rebuild Redis' seen-URL sets and robots.txt cache from the store."""
    with open_store(config, db, database_url, must_exist=True, redis_url=redis_url) as (
        settings,
        store,
    ):
        if not settings.redis_url:
            raise usage_error("no Redis configured (--redis-url or HARVESTMAN_REDIS_URL)")
        counts = run(_rebuild(settings, store))
    err.print(f"rebuilt: {counts}")


async def _rebuild(settings: Settings, store: SqlStore) -> dict[str, Any]:
    import asyncio
    import time

    from harvestman.coord.redis import RedisCoordinator

    async with store:
        await store.check_schema()
        crawl_ids = await asyncio.to_thread(store.reports.crawl_ids)
        namespaces = {
            str(cid): await asyncio.to_thread(store.rows.url_hashes, cid)
            for cid in crawl_ids.values()
        }
        now = time.time()
        robots = [
            r
            for r in await asyncio.to_thread(store.exports.robots_records)
            if r.robots_fetched_at is not None and r.robots_fetched_at + settings.robots_ttl > now
        ]
        coordinator = RedisCoordinator(
            settings.redis_url or "", store.hosts, prefix=settings.redis_prefix,
            seen_ttl=settings.crawl_visited_ttl,
        )  # fmt: skip
        try:
            return await coordinator.rebuild(namespaces, robots, settings.robots_ttl)
        finally:
            await coordinator.close()
