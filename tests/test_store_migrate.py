"""The start-up schema checks: the code's head revision, and a store migrated only when behind.

A command compares the database's revision with ``migrate.HEAD`` without loading Alembic; these
tests keep that constant equal to the scripts' head, and show what a crawl's start does with a
store at the head, behind it, and empty.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from harvestman.errors import SchemaOutdated
from harvestman.store import SqlStore, migrate


def test_the_start_up_checks_head_is_the_head_of_the_migration_scripts(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'head.db'}")
    try:
        assert migrate.head_revision(store.engine) == migrate.HEAD
    finally:
        store.dispose()


async def test_a_store_behind_the_head_is_migrated_at_start(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'behind.db'}")
    migrate.upgrade(store.engine)
    migrate.downgrade(store.engine, "-1")
    assert migrate.current_revision(store.engine) not in (None, migrate.HEAD)
    async with store:
        await store.prepare_schema()
    assert migrate.current_revision(store.engine) == migrate.HEAD
    migrate.check_current(store.engine)


async def test_an_empty_store_is_migrated_at_start(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'empty.db'}")
    assert migrate.current_revision(store.engine) is None
    async with store:
        await store.prepare_schema()
    assert migrate.current_revision(store.engine) == migrate.HEAD


def test_a_store_at_the_head_starts_without_loading_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'at-head.db'}"
    store = SqlStore(url)
    migrate.upgrade(store.engine)
    store.dispose()
    start = (
        "import asyncio, sys\n"
        "from harvestman.store import SqlStore, migrate\n"
        "async def main():\n"
        f"    async with SqlStore({url!r}) as store:\n"
        "        await store.prepare_schema()\n"
        "        await store.check_schema()\n"
        "asyncio.run(main())\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'alembic'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", start], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_a_version_table_with_two_revisions_is_refused(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'two.db'}")
    migrate.upgrade(store.engine)
    with store.engine.begin() as conn:
        conn.execute(text("INSERT INTO alembic_version (version_num) VALUES ('elsewhere')"))
    try:
        with pytest.raises(SchemaOutdated, match="several revisions"):
            migrate.check_current(store.engine)
    finally:
        store.dispose()
