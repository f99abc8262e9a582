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

import itertools
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any, TypeAlias

from sqlalchemy import Connection
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.dml import UpdateBase


def execute_many(
    conn: Connection,
    statement: UpdateBase,
    rows: Iterable[Mapping[str, Any]],
    shared: Mapping[str, Any] | None = None,
) -> int:
    """Run ``statement`` once for each of ``rows`` (dicts, every one with the first one's keys);
    the driver's row count (-1: it cannot tell, as psycopg after an executemany). Rows are read
    one at a time: each dict may be dropped as soon as its values are handed over. ``shared``:
    values of the statement's other parameters, the same in every row.

    A statement object run again (a module's constant) is compiled once per dialect and set
    of keys: building and compiling the page upsert cost ~0.6 ms a batch of 200."""
    remaining = iter(rows)
    first = next(remaining, None)
    if first is None:
        return 0
    prepared = _prepare(conn, statement, tuple(first))
    if prepared is None:  # expanded per execution: SQLAlchemy's to do
        many = [
            {**shared, **row} if shared else row for row in itertools.chain((first,), remaining)
        ]
        return conn.execute(statement, many).rowcount
    sql, fixed, to_params = prepared
    if shared:
        fixed = {**fixed, **shared}
    params = [
        to_params({**fixed, **row} if fixed else row)
        for row in itertools.chain((first,), remaining)
    ]
    return conn.exec_driver_sql(sql, params).rowcount


_Prepared: TypeAlias = tuple[str, dict[str, Any], Callable[[Mapping[str, Any]], Any]]
# statement -> (dialect, driver, the rows' keys) -> its SQL, the values bound in it, the rows'
# conversion (None: a statement SQLAlchemy runs itself). By the dialect's name, not the engine:
# dialect.make_engine makes every engine of a dialect alike (no serializer of its own).
_prepared: weakref.WeakKeyDictionary[UpdateBase, dict[tuple[str, ...], _Prepared | None]] = (
    weakref.WeakKeyDictionary()
)


def _prepare(conn: Connection, statement: UpdateBase, columns: tuple[str, ...]) -> _Prepared | None:
    dialect = conn.dialect
    known = _prepared.setdefault(statement, {})
    key = (dialect.name, dialect.driver, *columns)
    if key in known:
        return known[key]
    compiled = statement.compile(dialect=dialect, column_keys=list(columns))
    assert isinstance(compiled, SQLCompiler)
    prepared: _Prepared | None = None
    if not compiled.post_compile_params:
        # Values bound in the statement itself (``updated_at=now``) are every row's.
        fixed = {key: value for key, value in compiled.params.items() if key not in columns}
        convert = _bind_processors(conn, compiled)
        order = compiled.positiontup
        to_params = _named(convert) if order is None else _positional(order, convert)
        prepared = (str(compiled), fixed, to_params)
    known[key] = prepared
    return prepared


def _positional(
    order: Sequence[str], convert: Mapping[str, Callable[[Any], Any]]
) -> Callable[[Mapping[str, Any]], Any]:
    """A row's values as a tuple in the statement's order (SQLite's qmark), converted."""
    pick: Callable[[Mapping[str, Any]], Any]
    if len(order) == 1:  # itemgetter of one key gives the value, not a tuple
        key = order[0]
        pick = lambda row: (row[key],)  # noqa: E731
    else:
        pick = itemgetter(*order)
    at = [(index, convert[key]) for index, key in enumerate(order) if key in convert]
    if not at:
        return pick

    def values(row: Mapping[str, Any]) -> tuple[Any, ...]:
        picked = list(pick(row))
        for index, processor in at:
            picked[index] = processor(picked[index])
        return tuple(picked)

    return values


def _named(
    convert: Mapping[str, Callable[[Any], Any]],
) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A row's values as a dict (PostgreSQL's named parameters), converted."""

    def values(row: Mapping[str, Any]) -> dict[str, Any]:
        named = dict(row)
        for key, processor in convert.items():
            named[key] = processor(named[key])
        return named

    return values


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
