"""The data lifecycle: retention, compaction, backup and restore, replay.

Retention, compaction and replay speak SQL, so they live in the store (``store/lifecycle/``) and
are re-exported here; callers holding a ``SqlStore`` go through its maintenance door
(``store.maintenance.apply_retention``, ``store.maintenance.replay``). Backups copy the SQLite
file (``store.lifecycle.sqlitebackup``) or run ``pg_dump`` / ``pg_restore`` on a PostgreSQL
store (``store.lifecycle.pgdump``). Every entry point is synchronous: run them
from the CLI directly, or in a thread from the service.
"""

from harvestman.lifecycle.since import parse_since
from harvestman.store.lifecycle.compaction import CompactionReport, compact
from harvestman.store.lifecycle.pgdump import backup_postgres, verify_postgres_backup
from harvestman.store.lifecycle.pgrestore import restore_postgres
from harvestman.store.lifecycle.pgtools import PgBackupReport, PgTools
from harvestman.store.lifecycle.replay import ReplayPlan, replay
from harvestman.store.lifecycle.retention import RetentionReport, RetentionRules, apply_retention
from harvestman.store.lifecycle.sqlitebackup import (
    BackupReport,
    RestoreRefused,
    backup_sqlite,
    restore_sqlite,
)
from harvestman.store.lifecycle.unarchive import ArchiveRestoreReport, restore_archive

__all__ = [
    "ArchiveRestoreReport",
    "BackupReport",
    "CompactionReport",
    "PgBackupReport",
    "PgTools",
    "ReplayPlan",
    "RestoreRefused",
    "RetentionReport",
    "RetentionRules",
    "apply_retention",
    "backup_postgres",
    "backup_sqlite",
    "compact",
    "parse_since",
    "replay",
    "restore_archive",
    "restore_postgres",
    "restore_sqlite",
    "verify_postgres_backup",
]
