"""What a search asks of a store: the indexed table, the filters, how common the phrases are,
and the plan a backend (:mod:`.fts5`, :mod:`.tsvector`) runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harvestman.search.query import Query


@dataclass(frozen=True, slots=True)
class Target:
    """An indexed table: its text columns in index order and their bm25 weights on SQLite.

    On PostgreSQL the weights are the A/B/C/D classes the migration gave the same columns.
    """

    table: str
    columns: tuple[str, ...]
    weights: tuple[float, ...]
    rank_vector: str = "search_vector"  # PostgreSQL: the vector ts_rank_cd reads
    pair_vector: str | None = None  # PostgreSQL: neighbouring word pairs (migration 0011)


@dataclass(frozen=True, slots=True)
class Filter:
    """One filter. ``tokens`` (FTS5 syntax over the scope column) is used on SQLite when given,
    else ``where``, a condition on the table aliased ``p`` with named ``params``.

    ``tokens_if_rare``: use the tokens only when the filter keeps few of the newest rows. bm25
    counts the rows of the tokens as of any phrase, which costs more than checking the
    condition on each candidate when most rows pass (a crawl in a store of one crawl).
    ``narrow``: the filter usually keeps few rows (a host), so walking the newest rows until
    enough pass would be slow (PostgreSQL then reads the indexes). ``equals``: (column, values)
    of an equality to one of the values, whose share of rows PostgreSQL's statistics tell.
    ``walkable``: an index lists the rows of each of those values newest first (PostgreSQL may
    then walk them, checking each, rather than read the GIN index, however narrow the filter).
    """

    where: str
    params: dict[str, Any] = field(default_factory=dict)
    tokens: str | None = None
    expanding: tuple[str, ...] = ()
    tokens_if_rare: bool = False
    narrow: bool = False
    equals: tuple[str, tuple[Any, ...]] | None = None
    walkable: bool = False


@dataclass(frozen=True, slots=True)
class Estimate:
    """How common the query's phrases are: the share of ``rows`` holding each; on PostgreSQL
    also each word's share (what its GIN index lists); on SQLite, of each phrase of several
    words, the share of rows holding all its words (``held``: the rows a phrase costs)."""

    rows: float
    shares: dict[str, float]
    words: dict[str, float] = field(default_factory=dict)
    held: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a backend runs: the query (stop words out), whether to score, the filters, the
    estimate of its phrases and the fraction of rows the query matches (None when unknown)."""

    query: Query
    scored: bool
    filters: Sequence[Filter]
    estimate: Estimate | None
    fraction: float | None
