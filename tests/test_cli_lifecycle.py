"""`harvestman maintenance`, `backup`, `restore` and `replay` on a real crawled store."""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import sys
from pathlib import Path

from testsite import TestSite

CLI = [sys.executable, "-m", "harvestman.cli"]


async def run(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *CLI, *args, env={**os.environ, "COLUMNS": "200", "HARVESTMAN_FETCH_TIMEOUT": "1",
                          "HARVESTMAN_FETCH_RETRY_BACKOFF": "0.01"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, err.decode()


def count(db: Path, sql: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchone()[0]


async def test_backup_restore_replay_and_maintenance(site: TestSite, tmp_path: Path) -> None:
    db, copy, restored = tmp_path / "h.db", tmp_path / "copy.db", tmp_path / "restored.db"
    code, err = await run("crawl", site.url("/"), "--db", str(db), "--max-depth", "1",
                          "--delay", "0", "--no-progress")  # fmt: skip
    assert code == 0, err
    pages = count(db, "SELECT count(*) FROM crawled_pages")

    code, err = await run("backup", str(copy), "--db", str(db))
    assert code == 0, err
    # A table a person reads, never a dataclass's repr.
    assert "BackupReport" not in err
    assert "backup written" in err
    assert re.search(rf"│ path +│ {re.escape(str(copy))} ", err)
    code, err = await run("restore", str(copy), "--db", str(restored))
    assert code == 0, err
    assert count(restored, "SELECT count(*) FROM crawled_pages") == pages
    code, err = await run("restore", str(copy), "--db", str(restored))
    assert code == 1  # an existing store is not replaced without --force
    assert "force" in err

    code, err = await run("replay", "--domain", site.host, "--since", "1h", "--dry-run",
                          "--db", str(db))  # fmt: skip
    assert code == 0, err
    assert count(db, "SELECT count(*) FROM urls WHERE status = 'pending'") == 0
    code, err = await run("replay", "--domain", site.host, "--since", "1h", "--db", str(db))
    assert code == 0, err
    assert count(db, "SELECT count(*) FROM urls WHERE status = 'pending'") > 0

    code, err = await run("maintenance", "--db", str(db))
    assert code == 0, err
    assert "RetentionReport" not in err
    assert "compaction: backend" in err
    code, err = await run("backup", str(copy), "--db", str(db))
    assert code == 2  # never over an existing file without --overwrite
    assert "exists: pass --overwrite" in err
    code, err = await run("backup", str(tmp_path / "pg.dump"), "--database-url",
                          "postgresql://x@127.0.0.1/y")  # fmt: skip
    assert code == 1  # pg_dump's backup of a database that is not there
    assert "backup failed: OperationalError" in err
