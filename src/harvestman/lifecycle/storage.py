"""The storage report: ``harvestman storage`` and ``GET /api/admin/storage``.

What the store occupies (``store.lifecycle.storage``: rows and bytes per table and index), what
the raw archive holds (every location crawls recorded, plus the settings' own when the archive
is on: a local directory or an S3 bucket, walked object by object), how many pages a day the
last ``WINDOW_DAYS`` stored, and when each local disk is full at that rate.

The rate: pages per day (the stats history's, over the days of the window the store has data
for) times what a page costs (the store's bytes over its pages; the archive's bytes over the
pages with an archived body, times the share of pages archived). A disk holding both the store
and the archive gets both rates. ``full_on`` is the UTC date its free space runs out (None: not
growing). PostgreSQL's disk is known only when the server runs here and this role may read
``data_directory``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvestman.archive.location import archive_location, open_blobs
from harvestman.archive.raw import ArchiveError
from harvestman.store.dialect import sqlite_path

if TYPE_CHECKING:
    from harvestman.config import Settings
    from harvestman.store import BlockingMaintenance
    from harvestman.store.lifecycle.storage import StoreSizes

__all__ = ["ArchiveUsage", "DiskUsage", "StorageReport", "storage_report"]

DAY = 86400.0
WINDOW_DAYS = 30
_LAST_DATE = datetime(9999, 12, 31, tzinfo=UTC).timestamp()  # later: "never" (None)


@dataclass(frozen=True, slots=True)
class ArchiveUsage:
    """A raw archive location: its objects and their bytes, or why it could not be read."""

    location: str
    objects: int | None
    bytes: int | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class DiskUsage:
    """A local file system holding the store or the archive: its size, free bytes, what lands
    on it a day, the day it is full."""

    path: str
    holds: list[str]
    total_bytes: int
    free_bytes: int
    growth_bytes_per_day: float
    full_on: str | None


@dataclass(frozen=True, slots=True)
class StorageReport:
    store: StoreSizes
    archives: list[ArchiveUsage]
    pages_per_day: dict[str, int]  # UTC date -> pages
    store_growth_bytes_per_day: float
    archive_growth_bytes_per_day: float
    disks: list[DiskUsage] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (the API's body)."""
        from dataclasses import asdict

        return asdict(self)


def storage_report(store: BlockingMaintenance, settings: Settings, now: float) -> StorageReport:
    """The storage report of a store (its maintenance door) as of ``now`` (blocking: it
    reads the store and walks the archive)."""
    sizes = store.storage_sizes()
    since = (now // DAY - WINDOW_DAYS + 1) * DAY
    daily = store.pages_per_day(since)
    pages, archived = store.page_rows()
    archives = _archives(store, settings)
    archive_bytes = sum(a.bytes or 0 for a in archives)
    rate = _pages_per_day(daily, now)
    store_growth = rate * sizes.total_bytes / pages if pages else 0.0
    archive_growth = rate * archive_bytes / pages if pages and archived else 0.0
    places: list[tuple[str, str, float]] = []
    store_dir = _store_directory(settings.database_url, sizes)
    if store_dir is not None:
        places.append((store_dir, "store", store_growth))
    places += [
        (a.location, "archive", archive_growth * (a.bytes or 0) / archive_bytes)
        for a in archives
        if archive_bytes and not a.location.startswith("s3://") and os.path.isdir(a.location)
    ]
    return StorageReport(
        sizes,
        archives,
        {
            datetime.fromtimestamp(day, UTC).date().isoformat(): count
            for day, count in sorted(daily.items())
        },
        store_growth,
        archive_growth,
        _disks(places, now),
    )


def _pages_per_day(daily: dict[float, int], now: float) -> float:
    """The mean over the days from the first with pages to today (a young store is not
    diluted by the days before it existed)."""
    if not daily:
        return 0.0
    days = now // DAY - min(daily) // DAY + 1
    return sum(daily.values()) / max(days, 1.0)


def _archives(store: BlockingMaintenance, settings: Settings) -> list[ArchiveUsage]:
    locations = set(store.archive_locations())
    if settings.archive_enabled:
        locations.add(archive_location(settings))
    found = []
    for location in sorted(locations):
        try:
            blobs = open_blobs(location, settings)
            try:
                objects, size = blobs.usage()
            finally:
                blobs.close()
        except ArchiveError as exc:
            found.append(ArchiveUsage(location, None, None, str(exc)))
        else:
            found.append(ArchiveUsage(location, objects, size))
    return found


def _store_directory(database_url: str, sizes: StoreSizes) -> str | None:
    path = sqlite_path(database_url)
    if path is not None:
        return str(path.resolve().parent)
    directory = sizes.data_directory
    return directory if directory is not None and os.path.isdir(directory) else None


def _disks(places: list[tuple[str, str, float]], now: float) -> list[DiskUsage]:
    """One entry per file system (``st_dev``): what it holds and when it is full."""
    by_device: dict[int, list[tuple[str, str, float]]] = {}
    for path, what, growth in places:
        by_device.setdefault(Path(path).stat().st_dev, []).append((path, what, growth))
    disks = []
    for held in by_device.values():
        path = held[0][0]
        usage = shutil.disk_usage(path)
        growth = sum(g for _, _, g in held)
        full_on = None
        if growth > 0 and now + usage.free / growth * DAY < _LAST_DATE:
            full_on = datetime.fromtimestamp(now + usage.free / growth * DAY, UTC)
        disks.append(
            DiskUsage(
                path,
                sorted({what for _, what, _ in held}),
                usage.total,
                usage.free,
                growth,
                None if full_on is None else full_on.date().isoformat(),
            )
        )
    return disks
