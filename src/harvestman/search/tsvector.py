"""PostgreSQL: match with the ``search_vector`` GIN index, rank with ts_rank_cd.

PostgreSQL's planner misjudges full-text queries: it costs ``@@`` on a row as cheap, when each
check reads the row's vector out of TOAST (a few µs), so it walks the primary key backwards
through tens of thousands of rows for a word in one page of twenty (190 ms), and through the
whole table for a rare phrase (seconds). So the scan is chosen here, with ``SET LOCAL`` for the
transaction, from ANALYZE's statistics of the vector and of the filtered columns: walking the
newest rows until ``window`` match, when that checks fewer rows than the GIN index would list
(a common query without a narrow filter); otherwise reading the GIN index (and the filters'
B-tree indexes) within the newest rows expected to hold ``window`` matches, then, if they fall
short, everywhere.
"""

from __future__ import annotations

import math
import re
from typing import Any

from sqlalchemy import Connection, bindparam, text

from harvestman.search.plan import Estimate, Plan, Target
from harvestman.search.query import Query

CONFIG = "simple"  # the migration's text search configuration: no stemming, no stop words
# Measured on 500,000 pages (bench/bench_search.py): checking ``@@`` on a row read out of TOAST,
# and listing one row of a word from the GIN index.
ROW_CHECK_US = 4.0
POSTING_US = 0.12
_WORD = re.compile(r"\w+")


def estimate(
    conn: Connection, target: Target, phrases: tuple[str, ...], sample_rows: int, min_sample: int
) -> Estimate | None:
    """How common each phrase and word is, from ANALYZE's statistics of ``search_vector``; None
    for a small or never analyzed table. A phrase of several words is guessed as if its words
    were independent (they are rarer together, but the guess only picks a scan)."""
    del sample_rows  # ANALYZE samples the whole table
    stats = conn.execute(
        text(
            "SELECT s.most_common_elems::text::text[] AS words, s.most_common_elem_freqs AS shares,"
            " c.reltuples AS rows FROM pg_stats AS s JOIN pg_class AS c "
            "ON c.oid = to_regclass(quote_ident(s.schemaname) || '.' || quote_ident(s.tablename))"
            " WHERE s.schemaname = current_schema() AND s.tablename = :table "
            "AND s.attname = 'search_vector'"
        ),
        {"table": target.table},
    ).first()
    if stats is None or stats.words is None or stats.rows < min_sample:
        return None
    known = dict(zip(stats.words, stats.shares, strict=False))
    words = {w: known.get(w, 0.0) for p in phrases for w in _WORD.findall(p.lower())}
    shares = {p: math.prod(words[w] for w in _WORD.findall(p.lower())) for p in phrases}
    return Estimate(stats.rows, shares, words)


def ranked(
    conn: Connection, target: Target, plan: Plan, *, limit: int, offset: int, window: int
) -> tuple[int, list[tuple[int, float]]]:
    """How many rows matched (counting stops at ``window + 1``) and the page of ranked rows."""
    tsq = tsquery(conn, plan.query)
    if tsq is None:
        return 0, []
    params: dict[str, Any] = {"tsq": tsq, "window": window + 1}
    expanding: list[str] = []
    for f in plan.filters:
        params.update(f.params)
        expanding.extend(f.expanding)
    where = "".join(f" AND {f.where}" for f in plan.filters)
    top = conn.execute(text(f"SELECT max(id) FROM {target.table}")).scalar() or 0
    fraction = _matching_fraction(conn, target, plan)
    walk = _walks(plan, fraction, window)
    settings = ("enable_bitmapscan",) if walk else ("enable_indexscan", "enable_seqscan")
    for setting in settings:
        conn.exec_driver_sql(f"SET LOCAL {setting} = off")
    newest = (
        f"SELECT p.id FROM {target.table} AS p WHERE p.search_vector @@ CAST(:tsq AS tsquery)"
        f"{where}{{since}} ORDER BY p.id DESC LIMIT :window"
    )
    expand = [bindparam(name, expanding=True) for name in expanding]
    ids: list[int] = []
    if not walk and fraction:
        # Read the index only within the newest rows that should hold the window's matches.
        low = top - int(2 * (window + 1) / fraction)
        if low > 0:
            bounded = text(newest.format(since=" AND p.id > :low")).bindparams(*expand)
            ids = list(conn.execute(bounded, {**params, "low": low}).scalars())
    if len(ids) <= window:
        everywhere = text(newest.format(since="")).bindparams(*expand)
        ids = list(conn.execute(everywhere, params).scalars())
    found, ids = len(ids), ids[:window]
    if limit <= 0 or not ids:
        return found, []
    if not plan.scored:
        return found, [(i, 0.0) for i in ids[offset : offset + limit]]
    page = text(
        f"SELECT id, ts_rank_cd(search_vector, CAST(:tsq AS tsquery), 1) AS score "
        f"FROM {target.table} WHERE id IN :ids ORDER BY score DESC, id DESC "
        "LIMIT :limit OFFSET :offset"
    ).bindparams(bindparam("ids", expanding=True))
    rows = conn.execute(page, {"tsq": tsq, "ids": ids, "limit": limit, "offset": offset})
    return found, [(r.id, float(r.score)) for r in rows]


def _matching_fraction(conn: Connection, target: Target, plan: Plan) -> float | None:
    """The share of rows the query and its equality filters keep, by the statistics."""
    if plan.fraction is None:
        return None
    fraction = plan.fraction
    for f in plan.filters:
        if f.equals is not None:
            column, value = f.equals
            stats = conn.execute(
                text(
                    "SELECT most_common_vals::text::text[] AS vals, most_common_freqs AS shares "
                    "FROM pg_stats WHERE schemaname = current_schema() AND tablename = :table "
                    "AND attname = :column"
                ),
                {"table": target.table, "column": column},
            ).first()
            if stats is not None and stats.vals is not None:
                known = dict(zip(stats.vals, stats.shares, strict=False))
                fraction *= known.get(str(value), 0.0)
    return fraction


def _walks(plan: Plan, fraction: float | None, window: int) -> bool:
    """Whether walking the newest rows (checking each) beats listing the words' rows from the
    GIN index, by the measured cost of each. Never under a narrow filter, nor for a phrase of
    several words: words found together are far rarer as neighbours, and the walk would then
    check the whole table (seconds)."""
    if not fraction or plan.estimate is None or any(f.narrow for f in plan.filters):
        return False
    if any(len(_WORD.findall(p)) > 1 for group in plan.query.groups for p in group):
        return False
    postings = (
        sum(
            plan.estimate.words.get(w, 0.0)
            for group in plan.query.groups
            for phrase in group
            for w in _WORD.findall(phrase.lower())
        )
        * plan.estimate.rows
    )
    return (window + 1) / fraction * ROW_CHECK_US < postings * POSTING_US


def tsquery(conn: Connection, query: Query) -> str | None:
    """The tsquery text for ``query``, or None when no phrase has a lexeme.

    Each phrase goes through ``phraseto_tsquery`` (the parser that built the vectors), so
    ``e-mail`` or ``don't`` are split as the pages were; the result comes back as text so the
    main query carries it as a constant the planner can estimate.
    """
    params: dict[str, str] = {}

    def phrase(value: str) -> str:
        name = f"p{len(params)}"
        params[name] = value
        return f"phraseto_tsquery('{CONFIG}', :{name})"

    # Phrases without a lexeme in PostgreSQL's parser drop out of && and || by themselves.
    found = " && ".join(f"({' || '.join(phrase(p) for p in group)})" for group in query.groups)
    for excluded in query.excluded:
        found = f"({found}) && !!{phrase(excluded)}"
    value = conn.execute(text(f"SELECT CAST({found} AS text)"), params).scalar_one()
    return value or None
