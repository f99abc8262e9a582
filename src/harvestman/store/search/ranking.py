"""Match and rank on either store: FTS5 with bm25 on SQLite, tsvector with ts_rank_cd on PostgreSQL.

Two things make full-text search slow on a big store, and both are bounded here:

- *Ranking every match.* bm25 or ts_rank_cd over 200,000 matches takes a second. So the newest
  ``window`` matches (highest row id) that pass the filters are taken in index order and only
  those are ranked: a query matching up to ``window`` rows is ranked exactly; beyond that the
  newest ``window`` are, and the total is reported as a lower bound (as Elasticsearch's
  ``track_total_hits`` does).
- *Common words.* Both stores pay for every row that holds a word of the query, whatever the
  filters and the window: FTS5's bm25 counts them for its IDF, PostgreSQL's GIN index lists
  them (30-80 ms for a word in most of 500,000 pages). Such a word weighs nothing in bm25 (an
  IDF <= 0 is clamped to zero), so a word (not a quoted phrase) in more than half of the rows is
  a stop word: a query that has other terms leaves it out, from an ``OR`` too
  (``Ranked.ignored``); a query of stop words alone lists its newest matches unranked (rank 0).
  How common a word is comes from the newest ``SAMPLE_ROWS`` rows on SQLite (counted in the
  index, a millisecond) and from the statistics ANALYZE keeps of ``search_vector`` on
  PostgreSQL (free). A store of fewer than ``MIN_SAMPLE`` rows has no stop words.

The dialect parts are :mod:`.fts5` and :mod:`.tsvector`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection

from harvestman.search.query import Query
from harvestman.store import dialect
from harvestman.store.search import fts5, tsvector
from harvestman.store.search.plan import Estimate, Filter, Plan, Target

SAMPLE_ROWS = 10_000
MIN_SAMPLE = 1_000
STOP_FRACTION = 0.5


@dataclass(frozen=True, slots=True)
class Ranked:
    """One page of ranked row ids; ``total`` is exact when ``is_exact``, else a lower bound;
    ``query`` what was searched: the query without ``ignored``, its stop words."""

    total: int
    is_exact: bool
    rows: list[tuple[int, float]]
    query: Query
    ignored: tuple[str, ...] = ()


def rank(
    conn: Connection,
    target: Target,
    query: Query,
    filters: Sequence[Filter],
    *,
    limit: int,
    offset: int,
    window: int,
) -> Ranked:
    """Rank the matches of ``query`` under ``filters``: ``(row id, rank)``, best first.

    ``rank`` is higher for a better match; it compares within one store and one query only.
    Ties go to the newer row. At most ``window`` rows are ranked, and pages end there.
    """
    if query.is_empty:
        return Ranked(0, True, [], query)
    sqlite = dialect.is_sqlite(conn.engine)
    backend = fts5 if sqlite else tsvector
    # Only words can be stop words: a quoted phrase is asked for on purpose. The phrases are
    # estimated to bound their cost (and on PostgreSQL to choose its scan).
    phrases = tuple(dict.fromkeys(p for group in query.groups for p in group))

    estimate = backend.estimate(conn, target, phrases, SAMPLE_ROWS, MIN_SAMPLE)
    kept, ignored, scored = _without_stop_words(query, estimate)
    fraction = None
    if estimate is not None:
        if sqlite:
            filters = [fts5.cheaper_filter(conn, target, f, SAMPLE_ROWS) for f in filters]
        fraction = 1.0
        for group in kept.groups:
            fraction *= min(1.0, sum(estimate.shares.get(p, 0.0) for p in group))
    plan = Plan(kept, scored, filters, estimate, fraction)
    found, rows, complete = backend.ranked(conn, target, plan, limit=min(limit, window - offset),
                                           offset=offset, window=window)  # fmt: skip
    return Ranked(min(found, window), found <= window and complete, rows, kept, ignored)


def _without_stop_words(
    query: Query, estimate: Estimate | None
) -> tuple[Query, tuple[str, ...], bool]:
    """``query`` without its stop words, the phrases left out, and whether to rank."""
    if estimate is None:
        return query, (), True
    stop = {p for p, share in estimate.shares.items() if share > STOP_FRACTION and " " not in p}
    kept = tuple(k for k in (tuple(p for p in g if p not in stop) for g in query.groups) if k)
    if not kept:
        return query, (), False
    ignored = tuple(p for g in query.groups for p in g if p in stop)
    return Query(kept, query.excluded), ignored, True
