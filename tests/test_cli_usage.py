"""How the `harvestman` command treats what it is given: revisions, missing stores, filters."""

from __future__ import annotations

import doctest
import gc
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import func, select
from typer.testing import CliRunner

from harvestman.cli import stores
from harvestman.cli.app import app
from harvestman.store import migrate
from harvestman.store.schema import crawls, urls
from storerows import open_store
from test_api_errors import arrange


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, " ".join(result.stderr.split())


def test_the_store_helpers_examples_hold() -> None:
    assert doctest.testmod(stores).failed == 0


def test_db_downgrade_takes_a_relative_revision_and_keeps_the_rows(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    engine = open_store(f"sqlite:///{db}")
    arrange(engine)
    head = migrate.head_revision(engine)
    script = ScriptDirectory.from_config(migrate.alembic_config(engine))
    previous = script.get_revision(head).down_revision

    code, _, err = run("db", "downgrade", "-1", "--db", str(db))
    assert (code, err) == (0, f"schema at {previous}")
    assert migrate.current_revision(engine) == previous
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(crawls)).scalar() == 2
        assert conn.execute(select(func.count()).select_from(urls)).scalar() == 5

    code, _, err = run("db", "upgrade", "--db", str(db))
    assert (code, err) == (0, f"schema at {head}")
    engine.dispose()


CHECK = "check --db or --database-url"
READERS = [
    ("stats",),
    ("export", "--format", "csv"),
    ("errors",),
    ("dead-letter", "list"),
    ("dead-letter", "requeue"),
    ("search", "kettle"),
    ("status",),
    ("replay", "--domain", "a.test", "--since", "1h", "--dry-run"),
    ("maintenance",),
    ("db", "current"),
    ("db", "downgrade", "base"),
    ("admin", "rebuild-cache", "--redis-url", "redis://127.0.0.1:6379/0"),
]


@pytest.mark.parametrize("command", READERS, ids=" ".join)
def test_a_command_that_reads_refuses_a_missing_sqlite_file_and_creates_nothing(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    missing = tmp_path / "sub" / "missing.db"
    code, out, err = run(*command, "--db", str(missing))
    assert (code, out) == (2, "")
    assert err == f"error: no store at {missing} (nothing was created): {CHECK}"
    assert list(tmp_path.iterdir()) == []


def test_the_default_store_is_refused_too_when_it_is_not_there(tmp_path: Path) -> None:
    # The autouse fixture runs each test in tmp_path: the default ./harvestman.db is absent.
    code, _, err = run("stats")
    assert (code, err) == (2, f"error: no store at harvestman.db (nothing was created): {CHECK}")
    assert list(tmp_path.iterdir()) == []


def test_errors_refuses_an_unknown_category_and_names_the_known_ones(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    engine = open_store(f"sqlite:///{db}")
    arrange(engine)
    engine.dispose()

    code, out, err = run("errors", "--category", "bogus", "--db", str(db))
    assert (code, out) == (2, "")
    assert err == (
        "error: unknown category 'bogus'; choose one of network, http, parse, validation, storage"
    )

    code, out, _ = run("errors", "--category", "network", "--db", str(db))
    assert (code, out.splitlines()) == (
        0, ["network\tFetchTimeout\thttp://a.test/1\tFetchTimeout at http://a.test/1\tdefault"],
    )  # fmt: skip


CLOSERS = [
    ("db", "upgrade"),
    ("db", "current"),
    ("stats",),
    ("export", "--format", "csv"),
    ("errors",),
    ("dead-letter", "list"),
    ("search", "kettle"),
    ("maintenance",),
]


@pytest.mark.parametrize("command", CLOSERS, ids=" ".join)
def test_a_command_closes_the_store_before_it_returns(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    # SQLite deletes the WAL and shared-memory files when the last connection closes: a pooled
    # connection left open (an engine never disposed) keeps them. The result holds the exit's
    # traceback, and with it the command's frames: only dispose() can have closed the store.
    db = tmp_path / "store.db"
    engine = open_store(f"sqlite:///{db}")
    arrange(engine)
    engine.dispose()
    gc.disable()
    try:
        result = CliRunner().invoke(app, [*command, "--db", str(db)])
        assert result.exit_code == 0, result.stderr
        assert [path.name for path in tmp_path.glob("store.db*")] == ["store.db"]
    finally:
        gc.enable()
