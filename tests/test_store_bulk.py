"""store.bulk.execute_many: many rows through the driver's executemany, on SQLite and
PostgreSQL, against what ``Connection.execute`` writes for the same statement and rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    JSON,
    Column,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    select,
    update,
)

from harvestman.store import dialect
from harvestman.store.bulk import execute_many
from storerows import store_url

metadata = MetaData()
things = Table(
    "bulk_things",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(50), nullable=False),
    Column("size", Float),
    Column("note", String(50)),
    Column("updated_at", Float),
    Column("extra", JSON),  # a type whose values SQLAlchemy converts (serialized)
)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    engine = dialect.make_engine(store_url(request, tmp_path))
    metadata.create_all(engine)
    return engine


def contents(engine: Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(select(things).order_by(things.c.id))]


ROWS = [{"id": n, "name": f"thing {n}", "size": n / 2, "note": None} for n in range(1, 6)]


def test_inserts_and_updates_write_what_sqlalchemy_writes(engine: Engine) -> None:
    with engine.begin() as conn:
        # A generator: each row is read once.
        added = execute_many(conn, things.insert(), (dict(row) for row in ROWS))
    assert added in (5, -1)  # -1: the driver cannot tell (psycopg's executemany)
    assert contents(engine) == [(n, f"thing {n}", n / 2, None, None, None) for n in range(1, 6)]

    # Named parameters in an order of their own, and a value bound in the statement itself.
    statement = (
        update(things)
        .where(things.c.id == bindparam("row_id"))
        .values(note=bindparam("new_note"), size=things.c.size + bindparam("more"), updated_at=7.5)
    )
    changes = [{"more": 1.0, "new_note": f"n{n}", "row_id": n} for n in (2, 4)]
    with engine.begin() as conn:
        assert execute_many(conn, statement, changes) in (2, -1)
    rows = contents(engine)
    assert rows[1] == (2, "thing 2", 2.0, "n2", 7.5, None)
    assert rows[3] == (4, "thing 4", 3.0, "n4", 7.5, None)
    assert rows[0] == (1, "thing 1", 0.5, None, None, None)

    # One parameter: a one-value tuple per row for a positional driver.
    one = update(things).where(things.c.id == bindparam("row_id")).values(note="one")
    with engine.begin() as conn:
        assert execute_many(conn, one, [{"row_id": 5}]) in (1, -1)
        assert execute_many(conn, one, []) == 0
    assert contents(engine)[4][3] == "one"


def test_values_are_converted_as_their_types_ask(engine: Engine) -> None:
    rows = [{"id": 1, "name": "a", "extra": {"k": [1, 2]}, "size": 3}]
    with engine.begin() as conn:
        execute_many(conn, things.insert(), rows)
    assert contents(engine) == [(1, "a", 3.0, None, None, {"k": [1, 2]})]
    with engine.connect() as conn:  # stored as JSON, not as a Python repr
        assert conn.execute(select(things.c.extra["k"][1])).scalar_one() == 2


def test_an_expanding_parameter_is_left_to_sqlalchemy(engine: Engine) -> None:
    with engine.begin() as conn:
        execute_many(conn, things.insert(), [{"id": n, "name": "x"} for n in (1, 2, 3)])
        statement = (
            update(things)
            .where(things.c.id.in_(bindparam("ids", expanding=True)))
            .values(note="in")
        )
        execute_many(conn, statement, [{"ids": [1, 3]}])
    assert [row[3] for row in contents(engine)] == ["in", None, "in"]


def test_a_statement_run_again_takes_each_runs_shared_values_and_keys(engine: Engine) -> None:
    with engine.begin() as conn:
        execute_many(conn, things.insert(), [{"id": n, "name": "x"} for n in (1, 2, 3)])
    statement = (
        update(things)
        .where(things.c.id == bindparam("row_id"))
        .values(note=bindparam("note_of_all"), updated_at=bindparam("at"))
    )
    with engine.begin() as conn:
        execute_many(conn, statement, [{"row_id": 1}], shared={"note_of_all": "a", "at": 1.0})
        execute_many(conn, statement, [{"row_id": 2}], shared={"note_of_all": "b", "at": 2.0})
        # The same statement with a row's own value for what was shared before.
        execute_many(conn, statement, [{"row_id": 3, "at": 3.0}], shared={"note_of_all": "c"})
    assert [row[3:5] for row in contents(engine)] == [("a", 1.0), ("b", 2.0), ("c", 3.0)]
