"""Backup and restore of the embedded SQLite store, online.

``backup_sqlite`` copies with SQLite's backup API in one step: one read transaction, so the copy
is the store as it was at one instant, and in WAL mode a crawl keeps writing meanwhile (its new
transactions go to the WAL, which cannot be checkpointed past the copy until it ends, so it grows
by what is written during the copy). The copy is written beside ``out_path``, checked, fsynced
and renamed into place: ``out_path`` is either absent or a complete copy. It is a single file in
rollback-journal mode (no ``-wal`` beside it); the store switches it back to WAL when it opens it.

``restore_sqlite`` checks the backup, then copies it into the store with the same API while
holding the store's exclusive lock, which it can take only when no other connection (in any
process) has the store open: a restore under a running crawl is refused, always. Over an
existing store it is refused unless ``force``.

PostgreSQL stores are backed up with ``pg_dump`` (``store.lifecycle.pgdump``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from harvestman.errors import RestoreRefused, StoreError

__all__ = ["BackupReport", "RestoreRefused", "backup_sqlite", "restore_sqlite"]


@dataclass(frozen=True, slots=True)
class BackupReport:
    """A written copy (or a restored store): where, how big, its schema revision, how long."""

    path: Path
    bytes: int
    pages: int
    revision: str | None
    seconds: float


def backup_sqlite(db_path: Path, out_path: Path, *, overwrite: bool = False) -> BackupReport:
    """Write a consistent copy of the SQLite store at ``db_path`` to ``out_path``, online.

    Raises ``StoreError`` when the store cannot be read or the copy fails its check, and
    ``FileExistsError`` when ``out_path`` exists and ``overwrite`` is false.
    """
    started = time.monotonic()
    db_path, out_path = Path(db_path), Path(out_path)
    if out_path.exists() and not overwrite:
        raise FileExistsError(f"{out_path} exists: pass overwrite to replace it")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    partial = out_path.with_name(out_path.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        with (
            contextlib.closing(_open_existing(db_path)) as source,
            contextlib.closing(sqlite3.connect(partial, isolation_level=None)) as copy,
        ):
            source.backup(copy)  # pages=-1: all in one step, one read snapshot
            copy.execute("PRAGMA journal_mode=DELETE")
            _check(copy, partial)
            pages = _pages(copy)
            revision = _revision(copy)
        _fsync(partial)
        os.replace(partial, out_path)
        _fsync(out_path.parent)
    except sqlite3.Error as exc:
        partial.unlink(missing_ok=True)
        raise StoreError(f"backup of {db_path} failed: {type(exc).__name__}: {exc}") from exc
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return BackupReport(
        out_path, out_path.stat().st_size, pages, revision, time.monotonic() - started
    )


def restore_sqlite(backup_path: Path, db_path: Path, *, force: bool = False) -> BackupReport:
    """Replace the store at ``db_path`` with the copy at ``backup_path``.

    The backup must pass ``PRAGMA quick_check`` and be a Harvestman store (it has the
    ``crawls`` table and an Alembic revision); the caller runs migrations afterwards if it is
    older than the code. Raises ``RestoreRefused`` when ``db_path`` exists and ``force`` is false,
    or when another connection has it open; ``StoreError`` when the backup is unusable. The copy
    into the store is one transaction: an interrupted restore leaves the store as it was.
    """
    started = time.monotonic()
    backup_path, db_path = Path(backup_path), Path(db_path)
    try:
        with contextlib.closing(_open_existing(backup_path)) as backup:
            _check(backup, backup_path)
            revision = _revision(backup)
            if revision is None or not _has_table(backup, "crawls"):
                raise StoreError(f"{backup_path} is not a Harvestman store")
            if db_path.exists() and not force:
                raise RestoreRefused(f"{db_path} exists: pass force to overwrite it")
            db_path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.closing(_lock_exclusively(db_path)) as target:
                # Out of WAL while we hold the store alone: the backup API cannot write into a
                # WAL database of another page size, and the store turns WAL back on at open.
                target.execute("PRAGMA journal_mode=DELETE")
                backup.backup(target)
                pages = _pages(target)
    except sqlite3.Error as exc:
        raise StoreError(f"restore into {db_path} failed: {type(exc).__name__}: {exc}") from exc
    return BackupReport(
        db_path, db_path.stat().st_size, pages, revision, time.monotonic() - started
    )


def _open_existing(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise StoreError(f"{path} is not a file")
    return sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=30, isolation_level=None)


def _lock_exclusively(path: Path) -> sqlite3.Connection:
    """A connection holding ``path``'s exclusive lock until it closes.

    Every open connection to a WAL store holds a shared lock on the file, idle or not, so the
    exclusive lock is granted only when nobody else has the store open.
    """
    db = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        db.execute("BEGIN EXCLUSIVE")
        db.execute("COMMIT")  # in exclusive locking mode the lock outlives the transaction
    except sqlite3.OperationalError as exc:
        db.close()
        raise RestoreRefused(
            f"{path} is open by another connection (stop the crawl first)"
        ) from exc
    return db


def _check(db: sqlite3.Connection, path: Path) -> None:
    # quick_check proves every page and record well formed in O(N). integrity_check would also
    # match each index against its table (O(N log N)), but the backup API copies pages as they
    # are: what a copy can get wrong is structure, which quick_check sees.
    verdict = db.execute("PRAGMA quick_check").fetchall()
    if verdict != [("ok",)]:
        problems = "; ".join(str(row[0]) for row in verdict[:5])
        raise StoreError(f"{path} fails its integrity check: {problems}")


def _pages(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA page_count").fetchone()[0])


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return found.fetchone() is not None


def _revision(db: sqlite3.Connection) -> str | None:
    if not _has_table(db, "alembic_version"):
        return None
    row = db.execute("SELECT version_num FROM alembic_version").fetchone()
    return None if row is None else str(row[0])


def _fsync(path: Path) -> None:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if path.is_dir() else os.O_RDONLY
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
