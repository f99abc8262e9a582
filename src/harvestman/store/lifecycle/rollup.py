"""Stats roll-up: minute rows of the stats history older than a cutoff become day rows.

One batch is one transaction: the minute rows of an id range that are past the cutoff are
deleted (``DELETE ... RETURNING`` their counters) and their sums added to the day rows of the same
crawls (the additive upsert the engines use). Nothing is read back and written again, so a
crash leaves every count either still in its minute row or already in its day; a day partly
rolled up (minute rows younger than the cutoff remain) just gets the rest added by a later run.

With an ``archive`` callback the removed minute rows are handed to it (retention writes them to
``stats-minutes-<stamp>.jsonl.gz`` and fsyncs) before the transaction commits: a minute row
leaves the store only once it is on disk (a crash in between archives it twice, never zero times).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Row

from harvestman.store.history import COUNTERS, add_counts, bucket_start
from harvestman.store.schema import stats_history


def roll_up_batch(
    conn: Connection,
    first: int,
    last: int,
    cutoff: float,
    archive: Callable[[Sequence[Row[*tuple[Any, ...]]]], None] | None = None,
) -> tuple[int, int]:
    """Roll the minute rows with ids ``first..last`` that start before ``cutoff`` into day rows,
    in the caller's transaction; return (minute rows removed, day rows added to). ``archive``
    gets the removed rows (every column) first."""
    table = stats_history.c
    removed = conn.execute(
        stats_history.delete()
        .where(
            table.id.between(first, last),
            table.resolution == "minute",
            table.bucket_start < cutoff,
        )
        .returning(*stats_history.c)
    ).all()
    if archive is not None and removed:
        archive(removed)
    days: defaultdict[int, defaultdict[float, Counter[str]]] = defaultdict(
        lambda: defaultdict(Counter)
    )
    for row in removed:
        day = days[int(row.crawl_id)][bucket_start(float(row.bucket_start), "day")]
        for name in COUNTERS:
            day[name] += int(row._mapping[name])
    for crawl_id, buckets in sorted(days.items()):
        add_counts(conn, crawl_id, "day", buckets)
    return len(removed), sum(len(buckets) for buckets in days.values())
