"""PostgreSQL: match with the ``search_vector`` and ``pair_vector`` GIN indexes, rank with
ts_rank_cd.

PostgreSQL's planner misjudges full-text queries: it costs ``@@`` on a row as cheap, when each
check reads the row's vector out of TOAST (a few µs), so it walks the primary key backwards
through tens of thousands of rows for a word in one page of twenty (190 ms), and through the
whole table for a rare phrase (seconds). So the scan is chosen here, with ``SET LOCAL`` for the
transaction, from ANALYZE's statistics of the vector and of the filtered columns, by the
measured cost of each step: walking the newest rows of the crawl (or of a host, in each of its
two forms' part of the index) until ``window`` match, when that checks few rows (a common word);
otherwise reading the GIN index (and the filters' B-tree indexes), for every match when they
are few, else within the newest rows expected to hold twice the window, then, while they fall
short, within the newest rows the matches found say would. Each GIN read lists all of a word's
rows again, so the ranges are sized to need one. The kept rows are ranked by ts_rank_cd in the
same statement. The GIN index cannot tell a phrase from its words, so pages keep a second
vector of neighbouring word pairs (``pair_vector``, migration 0011): a two-word phrase is its
pair, found in that GIN index with no row to check; a longer one is checked on the rows
holding all its pairs. A phrase the parser does not split into neighbours is checked on each
row holding its words; past ``MAX_PHRASE_CHECKS`` rows to check the search stops there and
says its total is a lower bound.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BindParameter, Connection, bindparam, text

from harvestman.search.query import Query, has_several_words, phrase_words
from harvestman.store.search.plan import Estimate, Filter, Plan, Target

CONFIG = "simple"  # the migration's text search configuration: no stemming, no stop words
# Measured on 500,000 pages (bench/bench_search.py: the table far larger than shared_buffers,
# read from the OS's cache), in µs: checking ``@@`` on a row read out of TOAST (walking);
# listing one row of a word from the GIN index into a bitmap; listing one row of an id range
# from a B-tree into a bitmap; reading one matching row of a bitmap from the table. Only their
# ratios matter: they choose between scans (walking wins for a word in more than ~1/4 of the
# rows; both cost ~20 ms there).
ROW_CHECK_US = 8.5
POSTING_US = 0.15
RANGE_US = 0.15
FETCH_US = 7.0
# Of the pages holding each word of a phrase, the share holding them as neighbours: a guess
# (0.09 for "the <word>", far less for two rarer words) that only sizes the first index scan;
# the next ones are sized by the matches found.
NEIGHBOURS = 0.1
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
SESSION = (("jit", "off"), ("max_parallel_workers_per_gather", "0"), ("work_mem", "64MB"))


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
    # A word the statistics do not list is rarer than those they do; as PostgreSQL's own
    # estimate (ts_selfuncs.c), half the least common listed. Not 0: a share of 0 leaves the
    # scan unbounded, and a word just short of the list then lists all its rows (200+ ms).
    unlisted = min(known.values(), default=0.0) / 2
    words = {w: known.get(w, unlisted) for p in phrases for w in phrase_words(p.lower())}
    shares = {p: _phrase_share([words[w] for w in phrase_words(p.lower())]) for p in phrases}
    pairs = [p for p in phrases if len(phrase_words(p)) == 2]
    if target.pair_vector is not None and pairs:
        shares.update(_pair_shares(conn, target, pairs, shares))
    return Estimate(stats.rows, shares, words)


def _pair_shares(
    conn: Connection, target: Target, phrases: list[str], guesses: dict[str, float]
) -> dict[str, float]:
    """Two-word phrases' shares from the statistics of the pairs' vector: a pair it does not
    list is rarer than those it does, so the guess is capped at the least common listed."""
    stats = conn.execute(
        text(
            "SELECT most_common_elems::text::text[] AS pairs, most_common_elem_freqs AS shares "
            "FROM pg_stats WHERE schemaname = current_schema() AND tablename = :table "
            "AND attname = :column"
        ),
        {"table": target.table, "column": target.pair_vector},
    ).first()
    if stats is None or stats.pairs is None:
        return {}
    known = dict(zip(stats.pairs, stats.shares, strict=False))
    floor = min(known.values(), default=0.0)
    return {
        p: known.get(" ".join(phrase_words(p.lower())), min(guesses[p], floor)) for p in phrases
    }


def _phrase_share(word_shares: list[float]) -> float:
    """The share of rows holding a phrase whose words are in ``word_shares`` of the rows."""
    return math.prod(word_shares) * NEIGHBOURS ** max(0, len(word_shares) - 1)


def ranked(
    conn: Connection, target: Target, plan: Plan, *, limit: int, offset: int, window: int
) -> tuple[int, list[tuple[int, float]], bool]:
    """How many rows matched (counting stops at ``window + 1``), the page of ranked rows, and
    whether every row was searched (not when a phrase had more than ``MAX_PHRASE_CHECKS``
    rows to check)."""
    match = tsquery(conn, plan.query, pairs=target.pair_vector is not None)
    if match is None:
        return 0, [], True
    params: dict[str, Any] = {"tsq": match.words, "pairs": match.pairs, "window": window + 1}
    expanding: list[str] = []
    for f in plan.filters:
        params.update(f.params)
        expanding.extend(f.expanding)
    where = "".join(f" AND {f.where}" for f in plan.filters)
    top = conn.execute(text(f"SELECT max(id) FROM {target.table}")).scalar() or 0
    fraction = _matching_fraction(conn, target, plan)
    walk = match.pairs is None and _walks(plan, fraction, window)
    scans = ("enable_bitmapscan",) if walk else ("enable_indexscan", "enable_seqscan")
    settings = [*((s, "off") for s in scans), *SESSION]
    # One round trip (set_config with is_local is SET LOCAL), not one a setting.
    conn.exec_driver_sql(
        "SELECT " + ", ".join(f"set_config('{name}', '{value}', true)" for name, value in settings)
    )
    matches = []
    if match.words is not None:
        matches.append("p.search_vector @@ CAST(:tsq AS tsquery)")
    if match.pairs is not None:
        matches.append(f"p.{target.pair_vector} @@ CAST(:pairs AS tsquery)")
    arms = _walked_arms(plan.filters, params) if walk else [where]

    # The newest matches are ranked as they are found: their short vector rides along past the
    # LIMIT, so it is read once and only for the rows kept (reading the rows again by id cost
    # a few ms more).
    vector = f", p.{target.rank_vector} AS vector" if plan.scored else ""
    score = "ts_rank_cd(n.vector, CAST(:rank AS tsquery), 1)" if plan.scored else "0.0"
    params["rank"] = match.full

    def newest(within: str) -> str:
        selects = [
            f"SELECT p.id{vector} FROM {target.table} AS p WHERE {' AND '.join(matches)}{arm}"
            f"{within} ORDER BY p.id DESC LIMIT :window"
            for arm in arms
        ]
        found = selects[0]
        if len(selects) > 1:
            union = " UNION ALL ".join(f"({s})" for s in selects)
            found = f"SELECT * FROM ({union}) AS u ORDER BY id DESC LIMIT :window"
        return f"SELECT n.id, {score} AS score FROM ({found}) AS n"

    expand: list[BindParameter[Any]] = [bindparam(name, expanding=True) for name in expanding]
    # Read the index within the newest rows that should hold the window's matches, then, while
    # they fall short, within the newest rows the matches found so far say would: a phrase
    # whose words are common but rarely neighbours would otherwise check every row holding
    # its words. Each scan lists the words' GIN postings again, so it is sized to be the last.
    span = top if walk or not fraction else _span(fraction, window + 1, top)
    checks = _phrase_check_share(plan, match.checked)
    most = max(1, int(MAX_PHRASE_CHECKS / checks)) if checks else None
    if most is not None:
        span = min(span, most)
    complete = True
    while True:
        low = top - span
        scan = text(newest(" AND p.id > :low" if low > 0 else "")).bindparams(*expand)
        rows = conn.execute(scan, {**params, "low": low}).all()
        if len(rows) > window or low <= 0:
            break
        if most is not None and span >= most:
            complete = False
            break
        # None found says the matches are rarer than one in ``span`` rows.
        span = max(span * 2, _span(max(len(rows), 0.5) / span, window + 1, top))
        if most is not None:
            span = min(span, most)
    # The window is the newest ``window`` matches; the one past it only says there are more.
    kept = sorted(rows, key=lambda r: r.id, reverse=True)[:window]
    if plan.scored:
        kept.sort(key=lambda r: (r.score, r.id), reverse=True)  # ties to the newer row
    page = kept[offset : offset + limit] if limit > 0 else []
    return len(rows), [(r.id, float(r.score)) for r in page], complete


def _phrase_check_share(plan: Plan, checked: frozenset[str]) -> float | None:
    """The share of rows a query with a phrase of several words checks (rows holding all its
    words, by the statistics); None without such a phrase in ``checked`` (phrases not answered
    by their pairs alone) or when its words are rare."""
    estimate = plan.estimate
    if estimate is None or not any(has_several_words(p) for p in checked):
        return None
    share = 1.0
    for group in plan.query.groups:
        held = (
            math.prod(estimate.words.get(w, 0.0) for w in phrase_words(p.lower()))
            if p in checked or len(phrase_words(p)) == 1
            else estimate.shares.get(p, 0.0)
            for p in group
        )
        share *= min(1.0, sum(held))
    return share or None


def _matching_fraction(conn: Connection, target: Target, plan: Plan) -> float | None:
    """The share of rows the query and its equality filters keep, by the statistics."""
    if plan.fraction is None or plan.estimate is None:
        return plan.fraction
    equals = dict(f.equals for f in plan.filters if f.equals is not None)
    if not equals:
        return plan.fraction
    stats = conn.execute(
        text(
            "SELECT attname, most_common_vals::text::text[] AS vals, most_common_freqs AS shares, "
            "n_distinct, null_frac FROM pg_stats WHERE schemaname = current_schema() "
            "AND tablename = :table AND attname = ANY(:columns)"
        ),
        {"table": target.table, "columns": list(equals)},
    ).all()
    fraction = plan.fraction
    for row in stats:
        known = dict(zip(row.vals or (), row.shares or (), strict=False))
        # A value the statistics do not list shares what they leave with the other unlisted
        # values, as PostgreSQL's own estimate of an equality does (var_eq_const).
        distinct = row.n_distinct if row.n_distinct > 0 else -row.n_distinct * plan.estimate.rows
        left = max(0.0, 1.0 - sum(known.values()) - row.null_frac)
        unlisted = left / max(1.0, distinct - len(known))
        fraction *= min(1.0, sum(known.get(str(v), unlisted) for v in equals[row.attname]))
    return fraction


def _span(density: float, needed: int, top: int) -> int:
    """How many of the newest rows a scan should read to find ``needed`` matches where a row
    matches with ``density``; ``top`` (every row) when reading all the matches costs less than
    listing the range's ids to read twice the matches needed in it."""
    span = int(2 * needed / density) if density > 0 else top
    bounded = span * (RANGE_US + density * FETCH_US)
    return top if span >= top or density * top * FETCH_US <= bounded else span


def _walks(plan: Plan, fraction: float | None, window: int) -> bool:
    """Whether walking the newest rows of the filters' own indexes (checking each) beats
    listing the words' rows from the GIN index and reading the newest matches, by the measured
    cost of each. A walk checks the rows its index lists: those of a crawl, or of a crawl's
    host, until the window is full. Never under a narrow filter no index walks, nor for a
    phrase of several words: words found together are far rarer as neighbours, and the walk
    would then check the whole table (seconds)."""
    estimate = plan.estimate
    if not plan.fraction or not fraction or estimate is None:
        return False
    if any(f.narrow and not f.walkable for f in plan.filters):
        return False
    if any(has_several_words(p) for group in plan.query.groups for p in group):
        return False
    postings = (
        sum(
            estimate.words.get(w, 0.0)
            for group in plan.query.groups
            for phrase in group
            for w in phrase_words(phrase.lower())
        )
        * estimate.rows
    )
    filtered = fraction / plan.fraction * estimate.rows  # the rows the equality filters keep
    walked = min((window + 1) / plan.fraction, filtered)
    read = min(fraction * estimate.rows, 2 * (window + 1))
    return walked * ROW_CHECK_US < postings * POSTING_US + read * FETCH_US


def _walked_arms(filters: Sequence[Filter], params: dict[str, Any]) -> list[str]:
    """The conditions of a walk, one set per value of a walkable filter of several values
    (a host and its ``www.`` form: each is walked in its own part of the index, and the parts
    merged), adding the values to ``params``."""
    arms = [""]
    for i, f in enumerate(filters):
        if f.walkable and f.equals is not None:
            column, values = f.equals
            names = [f"walk{i}_{j}" for j in range(len(values))]
            params.update(zip(names, values, strict=True))
            arms = [f"{arm} AND p.{column} = :{name}" for arm in arms for name in names]
        else:
            arms = [f"{arm} AND {f.where}" for arm in arms]
    return arms


@dataclass(frozen=True, slots=True)
class Match:
    """A query as tsquery texts: ``full`` (every phrase with its positions) ranks; rows match
    ``words`` on ``search_vector`` and ``pairs`` on the pairs' vector (either may be None).
    ``checked``: the phrases of several words ``words`` checks row by row."""

    full: str
    words: str | None
    pairs: str | None
    checked: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Phrase:
    text: str
    tsquery: str  # '' when the parser finds no lexeme in it
    pairs: tuple[str, ...]  # the tsquery lexemes of its neighbouring pairs, if it has some

    @property
    def exact(self) -> bool:
        """Whether its one pair is the phrase: two lexemes, neighbours."""
        return len(self.pairs) == 1 and self.tsquery.count("<->") == 1


def tsquery(conn: Connection, query: Query, *, pairs: bool = False) -> Match | None:
    """The tsquery texts for ``query``, or None when no phrase has a lexeme.

    Each phrase goes through ``phraseto_tsquery`` and ``to_tsvector`` (the parser that built
    the vectors), so ``e-mail`` or ``don't`` are split as the pages were; the texts are sent
    back as constants the planner can estimate. With ``pairs`` (the table has a pairs' vector,
    migration 0011), a group whose phrases all have neighbouring pairs is matched on the pairs:
    a two-word phrase by its pair alone, a longer one by its pairs and then its positions.
    """
    phrases = list(dict.fromkeys(p for g in (*query.groups, query.excluded) for p in g))
    parsed = conn.execute(
        text(
            f"SELECT o.p, CAST(phraseto_tsquery('{CONFIG}', o.p) AS text) AS tsq, ARRAY("
            f"SELECT u.lexeme FROM unnest(to_tsvector('{CONFIG}', o.p)) AS u, "
            "unnest(u.positions) AS at ORDER BY at) AS lexemes "
            "FROM unnest(CAST(:phrases AS text[])) AS o(p)"
        ),
        {"phrases": phrases},
    ).all()
    found = {row.p: _phrase(row.p, row.tsq, row.lexemes) for row in parsed}
    # Phrases without a lexeme in PostgreSQL's parser drop out of their group, as they would
    # of && and || in SQL.
    kept = ([found[p] for p in group if found[p].tsquery] for group in query.groups)
    groups = [g for g in kept if g]
    if not groups:
        return None
    excluded = [found[p].tsquery for p in query.excluded if found[p].tsquery]
    full = _and([_or([p.tsquery for p in g]) for g in groups], excluded)
    by_words: list[str] = []
    by_pairs: list[str] = []
    checked: set[str] = set()
    for group in groups:
        if pairs and all(p.pairs for p in group):
            by_pairs.append(_or([_and(list(p.pairs), []) for p in group]))
            if all(p.exact for p in group):
                continue
        by_words.append(_or([p.tsquery for p in group]))
        checked.update(p.text for p in group)
    words = _and(by_words, excluded) if by_words or excluded else None
    return Match(full, words, _and(by_pairs, []) if by_pairs else None, frozenset(checked))


def _phrase(phrase: str, tsq: str, lexemes: list[str]) -> _Phrase:
    # Lexemes never hold a space (the parser splits there), so "a b" names a pair and only one.
    pairs = tuple(dict.fromkeys(f"{a} {b}" for a, b in itertools.pairwise(lexemes)))
    # Neighbours only: a parser that skipped a word would leave a gap ('a' <2> 'b').
    if tsq.count("<->") != len(lexemes) - 1 or "<" in tsq.replace("<->", ""):
        pairs = ()
    return _Phrase(phrase, tsq, tuple(_lexeme(p) for p in pairs))


def _lexeme(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _or(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else "(" + " | ".join(parts) + ")"


def _and(parts: list[str], excluded: list[str]) -> str:
    return " & ".join([*(f"({p})" for p in parts), *(f"!({e})" for e in excluded)])
