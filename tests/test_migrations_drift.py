"""Models and migrations agree: autogenerate's comparison of ``schema.metadata`` (with the job
tables) against a freshly upgraded database finds nothing, on SQLite and PostgreSQL, and the
root ``alembic.ini`` gives a contributor a working ``alembic`` command."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from harvestman.store import migrate
from storerows import open_store, store_url

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(params=["sqlite", "postgresql"])
def upgraded(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Engine]]:
    url = store_url(request, tmp_path)
    engine = open_store(url)
    yield url, engine
    engine.dispose()


def test_a_freshly_upgraded_database_matches_the_models(upgraded: tuple[str, Engine]) -> None:
    _, engine = upgraded
    assert migrate.drift(engine) == []


def test_the_comparison_sees_an_index_the_migrations_lack(upgraded: tuple[str, Engine]) -> None:
    _, engine = upgraded
    with engine.begin() as conn:
        conn.execute(text("DROP INDEX ix_urls_host"))
        conn.execute(text("CREATE INDEX ix_stray ON crawls (created_at)"))

    found = sorted((diff[0], diff[1].name) for diff in migrate.drift(engine))

    assert found == [("add_index", "ix_urls_host"), ("remove_index", "ix_stray")]


def alembic(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARVESTMAN_DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "alembic", "-c", str(ROOT / "alembic.ini"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_the_alembic_command_upgrades_and_checks_a_database(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'dev.db'}"
        if kind == "sqlite"
        else str(request.getfixturevalue("pg_schema_url"))
    )
    upgraded = alembic(url, "upgrade", "head")
    assert upgraded.returncode == 0, upgraded.stderr
    engine = open_store(url)  # already at head: a no-op that gives us an engine
    try:
        assert migrate.current_revision(engine) == migrate.head_revision(engine)
        checked = alembic(url, "check")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "No new upgrade operations detected" in checked.stdout + checked.stderr

        with engine.begin() as conn:
            conn.execute(text("DROP INDEX ix_urls_host"))
        drifted = alembic(url, "check")
        assert drifted.returncode != 0
        assert "ix_urls_host" in drifted.stdout + drifted.stderr
    finally:
        engine.dispose()
