"""The data lifecycle: retention, compaction, backup and restore, replay.

Every entry point is synchronous and takes the store's SQLAlchemy ``Engine`` (``SqlStore.engine``)
or, for backups, the SQLite file: run them from the CLI directly, or in a thread from the service.
"""

from harvestman.lifecycle.backup import BackupReport, RestoreRefused, backup_sqlite, restore_sqlite
from harvestman.lifecycle.compaction import CompactionReport, compact
from harvestman.lifecycle.replay import ReplayPlan, parse_since, replay
from harvestman.lifecycle.retention import RetentionReport, RetentionRules, apply_retention

__all__ = [
    "BackupReport",
    "CompactionReport",
    "ReplayPlan",
    "RestoreRefused",
    "RetentionReport",
    "RetentionRules",
    "apply_retention",
    "backup_sqlite",
    "compact",
    "parse_since",
    "replay",
    "restore_sqlite",
]
