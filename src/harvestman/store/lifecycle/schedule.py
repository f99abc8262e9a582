"""Scheduled backups: what the service's leader runs once per ``backup_interval_hours``.

A run writes ``harvestman-<UTC stamp>.dump`` (PostgreSQL, ``pg_dump`` custom format) or
``harvestman-<UTC stamp>.db`` (SQLite, the online copy of ``sqlitebackup``) to
``backup_dir``, verifies it (PostgreSQL: restored into a scratch database, every table's rows
counted against the dump's; SQLite: the copy's ``quick_check``), records the outcome in the
``backups`` table (``GET /metrics`` reports the last success and the failures from there), and
deletes the backups of this schedule older than ``backup_keep_days`` (by the stamp in their
names; other files are never touched). A failure is recorded and logged, never raised: the next
turn tries again.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from harvestman.errors import HarvestmanError
from harvestman.store.dialect import sqlite_path
from harvestman.store.lifecycle.backups import FAILED, OK, BackupRun, record_backup

if TYPE_CHECKING:
    from harvestman.config import Settings

log = logging.getLogger(__name__)

HOUR = 3600.0
DAY = 86400.0
_STAMP = "%Y%m%dT%H%M%SZ"
_NAME = re.compile(r"harvestman-(\d{8}T\d{6}Z)\.(?:dump|db)")


@dataclass(frozen=True, slots=True)
class BackupSchedule:
    """Where and how often the service backs its store up (seconds), and what it keeps.

    ``admin_url`` is a PostgreSQL role that may ``CREATE DATABASE`` for the verification
    (None: the store's own URL).
    """

    database_url: str
    directory: Path
    interval: float = DAY
    keep: float = 7 * DAY
    verify: bool = True
    admin_url: str | None = None
    pg_bin_dir: str | None = None

    def __post_init__(self) -> None:
        if self.interval <= 0 or self.keep <= 0:
            raise ValueError("the backup interval and the time kept must be positive")

    @classmethod
    def from_settings(cls, settings: Settings) -> BackupSchedule | None:
        """The ``backup_*`` settings' schedule; None when ``backup_interval_hours`` is unset."""
        if settings.backup_interval_hours is None:
            return None
        return cls(
            settings.database_url,
            Path(settings.backup_dir),
            interval=settings.backup_interval_hours * HOUR,
            keep=settings.backup_keep_days * DAY,
            verify=settings.backup_verify,
            admin_url=settings.backup_admin_url,
            pg_bin_dir=settings.backup_pg_bin_dir,
        )

    def run(self, engine: Engine, now: float) -> BackupRun:
        """Take, verify and record one backup as of ``now`` (epoch seconds), then prune."""
        began = time.monotonic()
        stamp = datetime.fromtimestamp(now, UTC).strftime(_STAMP)
        database = sqlite_path(self.database_url)
        path = self.directory / f"harvestman-{stamp}.{'dump' if database is None else 'db'}"
        try:
            if database is None:
                size, rows, verified = self._postgres(path)
            else:
                size, rows, verified = self._sqlite(database, path)
        except Exception as exc:  # any failure (a driver's too) is recorded and alerted on
            if not isinstance(exc, HarvestmanError | OSError):
                log.exception("the scheduled backup failed unexpectedly")
            run = BackupRun(now, now + time.monotonic() - began, FAILED, str(path),
                            error=f"{type(exc).__name__}: {exc}")  # fmt: skip
            log.error("the scheduled backup to %s failed: %s", path, run.error)
        else:
            run = BackupRun(now, now + time.monotonic() - began, OK, str(path), size, rows,
                            verified)  # fmt: skip
            log.info("backed the store up to %s (%d bytes, %d rows)", path, size, rows)
        record_backup(engine, run)
        for old in self.prune(now):
            log.info("deleted the backup %s (older than %g days)", old, self.keep / DAY)
        return run

    def prune(self, now: float) -> list[Path]:
        """Delete this schedule's backups stamped more than ``keep`` before ``now``."""
        if not self.directory.is_dir():
            return []
        deleted = []
        for path in sorted(self.directory.iterdir()):
            match = _NAME.fullmatch(path.name)
            if match is None:
                continue
            taken = datetime.strptime(match[1], _STAMP).replace(tzinfo=UTC).timestamp()
            if taken < now - self.keep:
                path.unlink(missing_ok=True)
                deleted.append(path)
        return deleted

    def _postgres(self, path: Path) -> tuple[int, int, bool]:
        from harvestman.store.lifecycle.pgdump import backup_postgres, verify_postgres_backup
        from harvestman.store.lifecycle.pgtools import PgTools

        tools = PgTools.find(self.pg_bin_dir)
        report = backup_postgres(self.database_url, path, tools=tools)
        if self.verify:
            report = verify_postgres_backup(
                report, self.admin_url or self.database_url, tools=tools
            )
        return report.bytes, report.rows, report.verified

    def _sqlite(self, database: Path, path: Path) -> tuple[int, int, bool]:
        import contextlib
        import sqlite3

        from harvestman.store.lifecycle.sqlitebackup import backup_sqlite

        report = backup_sqlite(database, path)  # checked (quick_check) before it is renamed in
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as copy:
            names = [row[0] for row in copy.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )]  # fmt: skip
            rows = sum(
                int(copy.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]) for name in names
            )
        return report.bytes, rows, True
