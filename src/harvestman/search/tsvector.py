"""PostgreSQL: match with the ``search_vector`` GIN index, rank with ts_rank_cd.

PostgreSQL's planner misjudges full-text queries: it costs ``@@`` on a row as cheap, when each
check reads the row's vector out of TOAST (a few µs), so it walks the primary key backwards
through tens of thousands of rows for a word in one page of twenty (190 ms), and through the
whole table for a rare phrase (seconds). So the scan is chosen here, with ``SET LOCAL`` for the
transaction, from ANALYZE's statistics of the vector and of the filtered columns: walking the
newest rows until ``window`` match, when that checks fewer rows than the GIN index would list
(a common query without a narrow filter); otherwise reading the GIN index (and the filters'
B-tree indexes) within the newest rows expected to hold ``window`` matches, then, while they
fall short, within older ranges four times as wide. The GIN index cannot tell a phrase from
its words, so each row holding them all is checked; past ``MAX_PHRASE_CHECKS`` such rows the
search stops there and says its total is a lower bound.
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
# Of the pages holding each word of a phrase, the share holding them as neighbours: a guess
# (0.09 for "the <word>", far less for two rarer words) that only sets where the index scan
# starts; the scan widens WIDEN times at each step while it finds too few.
NEIGHBOURS = 0.1
WIDEN = 4
# At most this many rows holding all the words of a phrase are checked for it (~30 ms): each
# check reads the row's vector out of TOAST, and a phrase of two common words that are rarely
# neighbours ("the" and a word in one page in ten) has 50,000 such rows in 500,000 pages. Past
# that, the phrase's matches among the newest rows checked are what is ranked, and the total is
# reported as a lower bound.
MAX_PHRASE_CHECKS = 10_000
# For the search's transaction: no JIT (the planner's costs of a scan of a big table pass
# jit_above_cost, and compiling costs tens of ms a query), no parallel workers (their start
# costs more than the scan here), and bitmaps that stay exact (a lossy one makes PostgreSQL
# check ``@@`` on every row of its pages, each read out of storage).
SESSION = (("jit", "off"), ("max_parallel_workers_per_gather", "0"), ("work_mem", "'64MB'"))
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
    shares = {p: _phrase_share([words[w] for w in _WORD.findall(p.lower())]) for p in phrases}
    return Estimate(stats.rows, shares, words)


def _phrase_share(word_shares: list[float]) -> float:
    """The share of rows holding a phrase whose words are in ``word_shares`` of the rows."""
    return math.prod(word_shares) * NEIGHBOURS ** max(0, len(word_shares) - 1)


def ranked(
    conn: Connection, target: Target, plan: Plan, *, limit: int, offset: int, window: int
) -> tuple[int, list[tuple[int, float]], bool]:
    """How many rows matched (counting stops at ``window + 1``), the page of ranked rows, and
    whether every row was searched (not when a phrase had more than ``MAX_PHRASE_CHECKS``
    rows to check)."""
    tsq = tsquery(conn, plan.query)
    if tsq is None:
        return 0, [], True
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
    for setting, value in SESSION:
        conn.exec_driver_sql(f"SET LOCAL {setting} = {value}")
    newest = (
        f"SELECT p.id FROM {target.table} AS p WHERE p.search_vector @@ CAST(:tsq AS tsquery)"
        f"{where}{{within}} ORDER BY p.id DESC LIMIT :window"
    )
    expand = [bindparam(name, expanding=True) for name in expanding]
    ids: list[int] = []
    # Read the index within the newest rows that should hold the window's matches, then, while
    # they fall short, within older and wider ranges (never the same row twice): a phrase
    # whose words are common but rarely neighbours would otherwise check every row holding
    # its words.
    span = int(2 * (window + 1) / fraction) if fraction and not walk else top
    checks = _phrase_check_share(plan)
    most = max(1, int(MAX_PHRASE_CHECKS / checks)) if checks else None
    if most is not None:
        span = min(span, most)
    high: int | None = None
    complete = True
    while len(ids) <= window:
        low = top - span
        within = (" AND p.id > :low" if low > 0 else "") + (
            " AND p.id <= :high" if high is not None else ""
        )
        scan = text(newest.format(within=within)).bindparams(*expand)
        more = {"low": low, "high": high, "window": window + 1 - len(ids)}
        ids.extend(conn.execute(scan, {**params, **more}).scalars())
        if low <= 0:
            break
        if most is not None and span >= most:
            complete = len(ids) > window
            break
        high, span = low, span * WIDEN if most is None else min(span * WIDEN, most)
    found, ids = len(ids), ids[:window]
    if limit <= 0 or not ids:
        return found, [], complete
    if not plan.scored:
        return found, [(i, 0.0) for i in ids[offset : offset + limit]], complete
    # One array parameter: a thousand bound values cost milliseconds to render and parse.
    page = text(
        f"SELECT id, ts_rank_cd({target.rank_vector}, CAST(:tsq AS tsquery), 1) AS score "
        f"FROM {target.table} WHERE id = ANY(CAST(:ids AS bigint[])) "
        "ORDER BY score DESC, id DESC LIMIT :limit OFFSET :offset"
    )
    rows = conn.execute(page, {"tsq": tsq, "ids": ids, "limit": limit, "offset": offset})
    return found, [(r.id, float(r.score)) for r in rows], complete


def _phrase_check_share(plan: Plan) -> float | None:
    """The share of rows a query with a phrase of several words checks (rows holding all its
    words, by the statistics); None without such a phrase or when its words are rare."""
    if plan.estimate is None or not any(
        len(_WORD.findall(p)) > 1 for group in plan.query.groups for p in group
    ):
        return None
    share = 1.0
    for group in plan.query.groups:
        held = (
            math.prod(plan.estimate.words.get(w, 0.0) for w in _WORD.findall(p.lower()))
            for p in group
        )
        share *= min(1.0, sum(held))
    return share or None


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
