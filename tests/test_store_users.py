"""The users table (store.users) and migration 0013, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from harvestman.store import SqlStore, dialect, migrate
from harvestman.store.users import UnknownUser, UserExists


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'users.db'}"
    else:
        url = request.getfixturevalue("pg_schema_url")
    made = SqlStore(url)
    migrate.upgrade(made.engine)
    yield made
    made.dispose()


def test_users_are_created_listed_disabled_and_given_new_passwords(store: SqlStore) -> None:
    made = store.create_user("ada", "hash-1", "admin")
    assert (made.name, made.role, made.enabled, made.password_hash) == (
        "ada",
        "admin",
        True,
        "hash-1",
    )
    store.create_user("bob", "hash-2", "user")
    with pytest.raises(UserExists):
        store.create_user("ada", "hash-3", "user")
    assert [(u.name, u.role) for u in store.list_users()] == [("ada", "admin"), ("bob", "user")]
    issued = made.tokens_after + 5
    assert store.token_is_current("ada", issued)
    store.set_user_password("ada", "hash-4")
    found = store.find_user("ada")
    assert found is not None
    assert found.password_hash == "hash-4"
    assert not store.token_is_current("ada", found.tokens_after - 1)
    assert store.token_is_current("ada", found.tokens_after)
    store.set_user_enabled("ada", False)
    assert not store.token_is_current("ada", found.tokens_after + 10**6)
    assert not store.token_is_current("nobody", 10**10)
    with pytest.raises(UnknownUser):
        store.set_user_enabled("nobody", True)
    assert store.find_user("nobody") is None


def _insert_source(conn: object, source_id: int | None, name: str) -> int:
    row = conn.execute(  # type: ignore[attr-defined]
        text(
            "INSERT INTO sources (id, name, start_urls, max_depth, scope, max_pages, enabled, "
            "created_at, updated_at, options) "
            "VALUES (:id, :name, '[]', 0, '{}', 0, true, 0, 0, '{}') RETURNING id"
        ),
        {"id": source_id, "name": name},
    )
    return int(row.scalar())


def test_sqlite_source_ids_are_never_reused_across_the_migration(tmp_path: Path) -> None:
    engine = dialect.make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    migrate.upgrade(engine, "0012")
    with engine.begin() as conn:
        _insert_source(conn, 3, "kept")
        conn.execute(
            text(
                "INSERT INTO jobs (source_id, url, status, interval_type, schedule_enabled, "
                "adaptive_scheduling, max_retries, retry_backoff_seconds, current_retry_count, "
                "is_paused, metadata, created_at, updated_at) "
                "VALUES (3, 'http://a/', 'scheduled', 'minutes', 1, 1, 3, 60, 0, 0, '{}', 0, 0)"
            )
        )
        # A source 7 existed once and was deleted; its crawl namespace stays in the store.
        conn.execute(
            text("INSERT INTO crawls (name, created_at, seeds) VALUES ('source-7', 0, '[]')")
        )
    migrate.upgrade(engine)
    with engine.begin() as conn:
        # The rebuild kept the source and its job (no cascade).
        assert conn.execute(text("SELECT source_id FROM jobs")).scalars().all() == [3]
        new_id = _insert_source(conn, None, "new")
        assert new_id == 8
        conn.execute(text("DELETE FROM sources WHERE id = 8"))
        assert _insert_source(conn, None, "newer") == 9
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    engine.dispose()
