"""SQLite: match with FTS5, rank with bm25, sample how common phrases are in the index.

Every query reads the FTS5 table (``<table>_fts``, migration 0006) newest row first, so a
broad query stops after ``window`` rows. Filters with ``tokens`` are part of the MATCH; the
others are checked by row id through the covering index ``ix_<table>_search_filter``.

bm25 counts the rows of each of its phrases in the whole index (their IDF), which for a phrase
of common words means checking positions in every row holding them all (100+ ms). So a phrase
that the newest rows hold the words of too often is searched among the newest rows only, ranked
by bm25 of its rarest word, and the total is then a lower bound.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import BindParameter, Connection, bindparam, text

from harvestman.search.query import Query, has_several_words, phrase_words
from harvestman.store.search.plan import Estimate, Filter, Plan, Target

RARE_FRACTION = 0.1  # a filter keeping less of the newest rows is matched in the index
# A query with phrases of several words is searched among the newest rows expected to hold at
# most this many rows with all their words (~4 µs each to check, plus their ranking).
MAX_PHRASE_CHECKS = 5_000


def estimate(
    conn: Connection, target: Target, phrases: tuple[str, ...], sample_rows: int, min_sample: int
) -> Estimate | None:
    """Of the newest ``sample_rows`` rows, the share holding each word and the share holding
    all the words of each phrase of several words; None for a small store."""
    low, sample = _sample(conn, target, sample_rows)
    if sample < min_sample:
        return None
    fts = f"{target.table}_fts"
    count = text(f"SELECT count(*) FROM {fts} WHERE {fts} MATCH :match AND rowid > :low")
    columns = " ".join(target.columns)

    def share(match: str) -> float:
        found = conn.execute(count, {"match": f"{{{columns}}} : ({match})", "low": low})
        return float(found.scalar_one()) / sample

    shares = {p: share(string(p)) for p in phrases if not has_several_words(p)}
    held = {p: share(_words(p)) for p in phrases if has_several_words(p)}
    words = {w: share(string(w)) for p in held for w in phrase_words(p)}
    return Estimate(sample, shares, words, held)


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
    whether every row was searched (not when a phrase was searched among the newest only)."""
    fts = f"{target.table}_fts"
    columns = " ".join(target.columns)
    match = f"{{{columns}}} : ({expression(plan.query)})"
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
    low = _phrase_floor(conn, target, plan)
    if low is None:
        inner = (
            f"SELECT f.rowid AS id, {score} AS score FROM {fts} AS f{join} "
            f"WHERE {fts} MATCH :match{where} ORDER BY f.rowid DESC LIMIT :window"
        )
    else:
        # The phrases' matches among the newest rows only, ranked by bm25 of each phrase's
        # rarest word: bm25 counts the rows of each of its terms in the whole store (IDF), the
        # cost this bounds, for a word by reading its list of rows.
        shares = plan.estimate.words if plan.estimate is not None else {}
        rarest = {
            p: min(phrase_words(p), key=lambda w: shares.get(w, 0.0))
            for g in plan.query.groups for p in g if has_several_words(p)
        }  # fmt: skip
        words = f"{{{columns}}} : ({expression(plan.query, instead=rarest)})"
        params.update(low=low, words=words)
        scored = (
            f"SELECT s.rowid AS id, {score} AS score FROM {fts} AS s "
            f"WHERE {fts} MATCH :words AND s.rowid > :low"
        )
        # Materialized: joined row by row, FTS5 would run the words' query (and its IDF) again
        # for each match.
        inner = (
            f"WITH m AS MATERIALIZED (SELECT f.rowid AS id FROM {fts} AS f{join} "
            f"WHERE {fts} MATCH :match{where} AND f.rowid > :low ORDER BY f.rowid DESC "
            f"LIMIT :window), w AS MATERIALIZED ({scored}) "
            "SELECT m.id AS id, coalesce(w.score, 0.0) AS score FROM m "
            "LEFT JOIN w ON w.id = m.id ORDER BY m.id DESC"
        )
    expand: list[BindParameter[Any]] = [
        bindparam(name, expanding=True) for c in conditions for name in c.expanding
    ]
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
        rows = list(conn.execute(page, {**params, "limit": limit, "offset": offset}).all())
    if rows:
        found = rows[0].n
    else:
        counted = text(f"SELECT count(*) FROM ({inner}) AS c").bindparams(*expand)
        found = conn.execute(counted, params).scalar_one()
    # Older rows were not searched: unless the window filled, there may be more matches.
    complete = low is None or found > window
    return found, [(r.id, float(r.score)) for r in rows], complete


def _phrase_floor(conn: Connection, target: Target, plan: Plan) -> int | None:
    """The row id above which a query with phrases of several words is searched: None for the
    whole store, when fewer than ``MAX_PHRASE_CHECKS`` rows hold all the words it needs."""
    estimate = plan.estimate
    if estimate is None or not any(has_several_words(p) for g in plan.query.groups for p in g):
        return None
    share = 1.0
    for group in plan.query.groups:
        share *= min(1.0, sum(estimate.held.get(p, estimate.shares.get(p, 0.0)) for p in group))
    if share <= 0:
        return None
    newest = conn.execute(text(f"SELECT max(id) FROM {target.table}_fts_docsize")).scalar() or 0
    span = int(MAX_PHRASE_CHECKS / share)
    return newest - span if span < newest else None


def _words(phrase: str) -> str:
    """FTS5 syntax for the words of ``phrase``, each required, in any order."""
    return " AND ".join(string(w) for w in phrase_words(phrase)) or string(phrase)


def expression(query: Query, *, instead: dict[str, str] | None = None) -> str:
    """FTS5 syntax for ``query``: every phrase a quoted string, so no input is an operator.
    ``instead``: phrases to replace (by one of their words), and nothing excluded: what ranks."""
    found = " AND ".join(
        "(" + " OR ".join(string((instead or {}).get(p, p)) for p in group) + ")"
        for group in query.groups
    )
    for phrase in query.excluded if instead is None else ():
        found = f"({found}) NOT {string(phrase)}"
    return found


def string(phrase: str) -> str:
    return '"' + phrase.replace('"', '""') + '"'
