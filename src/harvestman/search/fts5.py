"""SQLite: match with FTS5, rank with bm25, sample how common phrases are in the index.

Every query reads the FTS5 table (``<table>_fts``, migration 0006) newest row first, so a
broad query stops after ``window`` rows. Filters with ``tokens`` are part of the MATCH; the
others are checked by row id through the covering index ``ix_<table>_search_filter``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, bindparam, text

from harvestman.search.plan import Estimate, Filter, Plan, Target
from harvestman.search.query import Query

RARE_FRACTION = 0.1  # a filter keeping less of the newest rows is matched in the index


def estimate(
    conn: Connection, target: Target, phrases: tuple[str, ...], sample_rows: int, min_sample: int
) -> Estimate | None:
    """The share of the newest ``sample_rows`` rows holding each phrase; None for a small store."""
    low, sample = _sample(conn, target, sample_rows)
    if sample < min_sample:
        return None
    fts = f"{target.table}_fts"
    count = text(f"SELECT count(*) FROM {fts} WHERE {fts} MATCH :match AND rowid > :low")
    columns = " ".join(target.columns)
    shares = {
        p: conn.execute(count, {"match": f"{{{columns}}} : {string(p)}", "low": low}).scalar_one()
        / sample
        for p in phrases
    }
    return Estimate(sample, shares)


def cheaper_filter(conn: Connection, target: Target, f: Filter, sample_rows: int) -> Filter:
    """``f``, without its tokens when they are to be used only if rare and are not."""
    if not f.tokens_if_rare or f.tokens is None:
        return f
    low, sample = _sample(conn, target, sample_rows)
    fts = f"{target.table}_fts"
    count = text(f"SELECT count(*) FROM {fts} WHERE {fts} MATCH :match AND rowid > :low")
    kept = conn.execute(count, {"match": f"{{scope}} : ({f.tokens})", "low": low}).scalar_one()
    if kept < RARE_FRACTION * sample:
        return f
    return replace(f, tokens=None)


def _sample(conn: Connection, target: Target, sample_rows: int) -> tuple[int, int]:
    # The FTS5 docsize table holds a row id and a few bytes per row: counting in the table
    # itself would read every page's text.
    docsize = f"{target.table}_fts_docsize"
    newest = conn.execute(text(f"SELECT max(id) FROM {docsize}")).scalar()
    if newest is None:
        return 0, 0
    low = newest - sample_rows
    count = text(f"SELECT count(*) FROM {docsize} WHERE id > :low")
    return low, conn.execute(count, {"low": low}).scalar_one()


def ranked(
    conn: Connection, target: Target, plan: Plan, *, limit: int, offset: int, window: int
) -> tuple[int, list[tuple[int, float]], bool]:
    """How many rows matched (counting stops at ``window + 1``), the page of ranked rows, and
    True: FTS5 searches every row (its index knows positions, so phrases cost no row reads)."""
    fts = f"{target.table}_fts"
    match = f"{{{' '.join(target.columns)}}} : ({expression(plan.query)})"
    scope = [f.tokens for f in plan.filters if f.tokens is not None]
    if scope:
        match = f"{{scope}} : ({' AND '.join(scope)}) AND {match}"
    conditions = [f for f in plan.filters if f.tokens is None]
    params: dict[str, Any] = {"match": match, "window": window + 1, "ranked": window}
    join = ""
    if conditions:
        # CROSS JOIN keeps FTS5 the outer loop: driven the other way, every row would run a
        # MATCH of its own, which reads whole doclists each time (seconds on a big store). The
        # covering index holds the filtered columns without the text (60 ms -> 15 ms when
        # 1,400 of 500,000 pages are checked).
        join = (
            f" CROSS JOIN {target.table} AS p INDEXED BY ix_{target.table}_search_filter"
            " ON p.id = f.rowid"
        )
        for condition in conditions:
            params.update(condition.params)
    where = "".join(f" AND {c.where}" for c in conditions)
    weights = ", ".join(str(w) for w in (*target.weights, 0.0))  # scope weighs nothing
    score = f"-bm25({fts}, {weights})" if plan.scored else "0.0"
    inner = (
        f"SELECT f.rowid AS id, {score} AS score FROM {fts} AS f{join} "
        f"WHERE {fts} MATCH :match{where} ORDER BY f.rowid DESC LIMIT :window"
    )
    expand = [bindparam(name, expanding=True) for c in conditions for name in c.expanding]
    rows: list[Any] = []
    if limit > 0:
        # One row past the window tells whether there were more; only the window is ranked.
        numbered = (
            f"SELECT id, score, count(*) OVER () AS n, row_number() OVER (ORDER BY id DESC) AS r "
            f"FROM ({inner}) AS c"
        )
        page = text(
            f"SELECT id, score, n FROM ({numbered}) AS w WHERE r <= :ranked "
            "ORDER BY score DESC, id DESC LIMIT :limit OFFSET :offset"
        ).bindparams(*expand)
        rows = conn.execute(page, {**params, "limit": limit, "offset": offset}).all()
    if rows:
        return rows[0].n, [(r.id, float(r.score)) for r in rows], True
    counted = text(f"SELECT count(*) FROM ({inner}) AS c").bindparams(*expand)
    return conn.execute(counted, params).scalar_one(), [], True


def expression(query: Query) -> str:
    """FTS5 syntax for ``query``: every phrase a quoted string, so no input is an operator."""
    found = " AND ".join(
        "(" + " OR ".join(string(p) for p in group) + ")" for group in query.groups
    )
    for phrase in query.excluded:
        found = f"({found}) NOT {string(phrase)}"
    return found


def string(phrase: str) -> str:
    return '"' + phrase.replace('"', '""') + '"'
