"""The record of scheduled backups (``backups`` table): one row per run, and the two figures
``GET /metrics`` reports from it."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, func, insert, select

from harvestman.store.schema import backups
from harvestman.store.transaction import transaction

OK = "ok"
FAILED = "failed"


@dataclass(frozen=True, slots=True)
class BackupRun:
    """One scheduled backup: ``status`` is ``ok`` or ``failed`` (then ``error`` says why)."""

    started_at: float
    finished_at: float
    status: str
    path: str
    bytes: int | None = None
    rows: int | None = None
    verified: bool = False
    error: str | None = None


@dataclass(frozen=True, slots=True)
class BackupSummary:
    """``last_success``: when the newest good backup finished (epoch seconds, 0.0: never);
    ``failures``: failed runs ever recorded."""

    last_success: float
    failures: int


def record_backup(engine: Engine, run: BackupRun) -> None:
    with transaction(engine) as conn:
        conn.execute(
            insert(backups).values(
                started_at=run.started_at,
                finished_at=run.finished_at,
                status=run.status,
                path=run.path,
                bytes=run.bytes,
                rows=run.rows,
                verified=run.verified,
                error=None if run.error is None else run.error[:2000],
            )
        )


def backup_summary(engine: Engine) -> BackupSummary:
    with engine.connect() as conn:
        last = conn.execute(
            select(func.max(backups.c.finished_at)).where(backups.c.status == OK)
        ).scalar()
        failures = conn.execute(
            select(func.count()).select_from(backups).where(backups.c.status == FAILED)
        ).scalar_one()
    return BackupSummary(float(last or 0.0), int(failures))
