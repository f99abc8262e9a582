"""The test tiers (support/tiers.py), the migrated SQLite template (support/sqlite_template.py)
and the hypothesis dev profile (support/profiles.py): the machinery of ``make check``."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvestman.store import SqlStore, dialect, migrate
from support import profiles
from support.cli import run_cli
from support.sqlite_template import SchemaTemplate
from support.tiers import DECISIONS

NEVER_RUN = pytest.mark.skip(reason="a sample for the tiering rule: collected, never run")


@NEVER_RUN
def test_sample_on_the_site(site: object) -> None:
    pass


@NEVER_RUN
def test_sample_on_postgresql(pg_schema_url: str) -> None:
    pass


async def _help() -> int:
    status, _, _ = await run_cli("--help")
    return status


@NEVER_RUN
async def test_sample_running_the_cli_through_a_helper() -> None:
    await _help()


@NEVER_RUN
@pytest.mark.fast
def test_sample_kept_fast_by_its_marker(site: object) -> None:
    pass


@NEVER_RUN
def test_sample_of_plain_code() -> None:
    assert sorted([2, 1]) == [1, 2]


def test_each_test_lands_in_the_tier_of_what_it_uses(request: pytest.FixtureRequest) -> None:
    decisions = request.config.stash[DECISIONS]
    here = request.node.nodeid.split("::")[0]

    def of(name: str) -> list[str]:
        return decisions[f"{here}::{name}"]

    assert of("test_sample_on_the_site") == ["site"]
    assert of("test_sample_on_postgresql") == ["services"]
    assert of("test_sample_running_the_cli_through_a_helper") == ["subprocess"]
    assert of("test_sample_kept_fast_by_its_marker") == []
    assert of("test_sample_of_plain_code") == []
    assert of("test_each_test_lands_in_the_tier_of_what_it_uses") == []


def test_a_slow_test_is_marked_slow_and_with_its_reason(request: pytest.FixtureRequest) -> None:
    decisions = request.config.stash[DECISIONS]
    slow = [node for node, found in decisions.items() if found]
    assert any(node.endswith("::test_sample_on_the_site") for node in slow)
    assert request.node.get_closest_marker("slow") is None


async def _store_schema(path: Path) -> tuple[str | None, list[object]]:
    async with SqlStore(f"sqlite:///{path}") as store:
        await store.prepare_schema()
    engine = dialect.make_engine(f"sqlite:///{path}")
    try:
        return migrate.current_revision(engine), migrate.drift(engine)
    finally:
        engine.dispose()


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::sqlalchemy.exc.SAWarning")
async def test_a_fresh_sqlite_store_is_a_copy_of_the_migrated_template(
    tmp_path: Path, schema_template: SchemaTemplate
) -> None:
    before = schema_template.copies
    revision, drift = await _store_schema(tmp_path / "fresh.db")
    assert schema_template.copies == before + 1
    engine = dialect.make_engine(f"sqlite:///{tmp_path / 'other.db'}")
    assert revision == migrate.head_revision(engine)
    engine.dispose()
    assert drift == []


@pytest.mark.migrate_from_scratch
@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::sqlalchemy.exc.SAWarning")
async def test_a_test_about_migrations_runs_them_all(
    tmp_path: Path, schema_template: SchemaTemplate
) -> None:
    before = schema_template.copies
    revision, drift = await _store_schema(tmp_path / "fresh.db")
    assert schema_template.copies == before
    assert revision is not None
    assert drift == []


def test_a_store_with_tables_is_migrated_not_overwritten(
    tmp_path: Path, schema_template: SchemaTemplate
) -> None:
    engine = dialect.make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE notes (id INTEGER PRIMARY KEY)")
            conn.exec_driver_sql("INSERT INTO notes VALUES (1)")
        before = schema_template.copies
        migrate.upgrade(engine)
        assert schema_template.copies == before
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT id FROM notes").scalar_one() == 1
    finally:
        engine.dispose()


@settings(max_examples=300, deadline=None)
@given(st.integers())
def _a_property(number: int) -> None:
    assert number == number


def test_the_dev_profile_caps_a_property_tests_own_examples() -> None:
    item = types.SimpleNamespace(obj=_a_property)
    profiles.cap_examples([item], profiles.DEV_EXAMPLES)  # type: ignore[list-item]
    assert _a_property._hypothesis_internal_use_settings.max_examples == profiles.DEV_EXAMPLES  # type: ignore[attr-defined]
