"""A new SQLite store copied from the schema template: the same schema as the migrations make,
made by them once; an unusable template directory or a database that is not empty migrates as
before."""

from __future__ import annotations

import doctest
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from harvestman.store import SqlStore, migrate, template

pytestmark = pytest.mark.migrate_from_scratch  # the real migrations make each template here


def schema_of(engine: Engine) -> list[tuple[str, str, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT type, name, sql FROM sqlite_master ORDER BY type, name"))
        return [tuple(row) for row in rows]  # type: ignore[misc]


async def prepared(path: Path, cache: Path | None) -> SqlStore:
    store = SqlStore(f"sqlite:///{path}", schema_template=cache)
    async with store:
        await store.prepare_schema()
    return store


def test_the_template_names_its_head() -> None:
    assert doctest.testmod(template).failed == 0


async def test_a_new_store_copied_from_the_template_holds_what_the_migrations_make(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    migrated = await prepared(tmp_path / "migrated.db", None)
    first = await prepared(tmp_path / "first.db", cache)  # makes the template, then copies it
    second = await prepared(tmp_path / "second.db", cache)

    assert [p.name for p in cache.iterdir()] == [template.template_name()]
    for store in (first, second):
        assert migrate.current_revision(store.engine) == migrate.HEAD
        assert schema_of(store.engine) == schema_of(migrated.engine)


def test_a_new_store_is_copied_without_loading_alembic(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    start = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from harvestman.store import SqlStore\n"
        "async def main(db, cache):\n"
        "    async with SqlStore(f'sqlite:///{db}', schema_template=Path(cache)) as store:\n"
        "        await store.prepare_schema()\n"
        "asyncio.run(main(*sys.argv[1:]))\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'alembic'))\n"
    )

    def loaded(db: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", start, str(tmp_path / db), str(cache)],
            capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
        return done.stdout.strip()

    assert loaded("first.db") != "[]"  # the template is made by the migrations
    assert loaded("second.db") == "[]"


async def test_a_template_directory_that_cannot_be_made_leaves_the_migrations_to_run(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")

    migrated = await prepared(tmp_path / "migrated.db", None)
    store = await prepared(tmp_path / "new.db", blocker / "cache")

    assert migrate.current_revision(store.engine) == migrate.HEAD
    assert schema_of(store.engine) == schema_of(migrated.engine)


async def test_a_database_with_tables_of_its_own_is_migrated_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / "theirs.db"
    theirs = SqlStore(f"sqlite:///{path}")
    with theirs.engine.begin() as conn:
        conn.execute(text("CREATE TABLE notes (body TEXT)"))
        conn.execute(text("INSERT INTO notes VALUES ('kept')"))
    theirs.dispose()
    await prepared(tmp_path / "made.db", tmp_path / "cache")  # a template is there

    store = await prepared(path, tmp_path / "cache")

    assert migrate.current_revision(store.engine) == migrate.HEAD
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT body FROM notes")).scalars().all() == ["kept"]
