"""One statement for many rows, through the driver's ``executemany``.

SQLAlchemy turns each row's parameters into the statement's order one by one in Python
(``construct_params``): in a crawl's batch writes that cost about as much as SQLite's own work
(seeds: bench/seeds_bench.py; a 20,000-page crawl: ~0.5 s of the crawler's process, which is
the crawl's bound). Here the statement is compiled once and the rows go to the driver as they
are: tuples in the statement's order for a positional driver (SQLite's qmark), dicts for a named
one (PostgreSQL's), each value through the conversion its type asks for, if any (a bind
processor: SQLite's Float, JSON). A statement that expands parameters per execution (an IN
list) runs through ``Connection.execute`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.dml import UpdateBase


def execute_many(
    conn: Connection,
    statement: UpdateBase,
    columns: Sequence[str],
    rows: Iterable[Mapping[str, Any]],
) -> int:
    """Run ``statement`` once for each of ``rows`` (dicts keyed by ``columns``, every row the
    same keys); the driver's row count (-1: it cannot tell, as psycopg after an executemany).
    Rows are read one at a time: each dict may be dropped as soon as its values are handed
    over."""
    compiled = statement.compile(dialect=conn.dialect, column_keys=list(columns))
    assert isinstance(compiled, SQLCompiler)
    if compiled.post_compile_params:  # expanded per execution: SQLAlchemy's to do
        return conn.execute(statement, list(rows)).rowcount
    # Values bound in the statement itself (``updated_at=now``) are every row's.
    fixed = {key: value for key, value in compiled.params.items() if key not in columns}
    convert = _bind_processors(conn, compiled)
    params: list[Any]
    if compiled.positiontup is not None:
        order = compiled.positiontup
        pick = itemgetter(*order)
        at = [(index, convert[key]) for index, key in enumerate(order) if key in convert]
        one = len(order) == 1
        params = []
        for row in rows:
            picked = pick({**fixed, **row} if fixed else row)
            values = [picked] if one else list(picked)
            for index, processor in at:
                values[index] = processor(values[index])
            params.append(tuple(values))
    else:
        params = []
        for row in rows:
            named = {**fixed, **row}
            for key, processor in convert.items():
                named[key] = processor(named[key])
            params.append(named)
    if not params:
        return 0
    return conn.exec_driver_sql(str(compiled), params).rowcount


def _bind_processors(conn: Connection, compiled: SQLCompiler) -> dict[str, Callable[[Any], Any]]:
    """The conversions SQLAlchemy applies to values bound to the statement, by key (SQLite's
    Float: to float; JSON: serialized); most columns have none."""
    dialect = conn.dialect
    convert: dict[str, Callable[[Any], Any]] = {}
    for key, bind in compiled.binds.items():
        processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if processor is not None:
            convert[key] = processor
    return convert
