"""The lifecycle as store methods, for callers that hold the store rather than its engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harvestman.store.connection import StoreConnection
from harvestman.store.lifecycle.backups import BackupSummary, backup_summary
from harvestman.store.lifecycle.replay import ReplayPlan, replay
from harvestman.store.lifecycle.retention import RetentionReport, RetentionRules, apply_retention
from harvestman.store.lifecycle.storage import (
    StoreSizes,
    archive_locations,
    page_rows,
    pages_per_day,
    store_sizes,
)
from harvestman.store.lifecycle.unarchive import ArchiveRestoreReport, restore_archive


class LifecycleRepository(StoreConnection):
    """Retention and replay on this store (synchronous and long-running: run them off the
    event loop). See ``store.lifecycle.retention`` and ``store.lifecycle.replay``."""

    def apply_retention(self, rules: RetentionRules, now: float) -> RetentionReport:
        return apply_retention(self.engine, rules, now)

    def replay(
        self, crawl_id: int, domain: str, since: float, *, dry_run: bool, now: float, **options: Any
    ) -> ReplayPlan:
        return replay(self.engine, crawl_id, domain, since, dry_run=dry_run, now=now, **options)

    def restore_archive(
        self, path: Path, *, since: float | None, domain: str | None, now: float
    ) -> ArchiveRestoreReport:
        return restore_archive(self.engine, path, since=since, domain=domain, now=now)

    def backup_summary(self) -> BackupSummary:
        """The last good scheduled backup and the failed ones (``GET /metrics``)."""
        return backup_summary(self.engine)

    def storage_sizes(self) -> StoreSizes:
        """Rows and bytes per table and index (``harvestman storage``)."""
        return store_sizes(self.engine)

    def pages_per_day(self, since: float) -> dict[float, int]:
        return pages_per_day(self.engine, since)

    def page_rows(self) -> tuple[int, int]:
        return page_rows(self.engine)

    def archive_locations(self) -> list[str]:
        return archive_locations(self.engine)
