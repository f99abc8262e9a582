"""What site parsers found, in the store: their records, their daily success counts, failures.

Written inside the crawl's batch transaction (``SqlStore.record``), one statement per table per
batch; read by ``harvestman stats``, ``harvestman export --what records`` and the API.

- ``parsed_records``: one row per (crawl, page, parser, record key), upserted. An unchanged
  record (same content hash) keeps its data and ``updated_at``; only ``last_seen_at`` moves. A
  record a parser stops returning stays, with the ``last_seen_at`` of the last parse that
  returned it: a parser that broke on a new layout does not erase what it found before.
- ``parser_stats``: attempts, successes, empty pages and errors per (crawl, host, parser,
  version, UTC day), added to by each batch, so a layout change shows as a drop from one day to
  the next (and a new parser version starts its own line).
- a parser that raised or returned bad records: an ``error_logs`` row, category ``parse``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any, Final

from sqlalchemy import Connection, Engine, bindparam, case, cast, func, select

from harvestman.errors import error_category
from harvestman.records import Outcome, positional_key
from harvestman.store import dialect
from harvestman.store.schema import error_logs, parsed_records, parser_stats

DAY: Final = 86400.0
_COUNTS: Final = ("attempts", "successes", "empty", "errors", "records", "seconds")
_OUTCOME_COLUMN: Final = {"ok": "successes", "empty": "empty", "error": "errors"}
RECORD_FIELDS: Final = (
    "page_url", "host", "parser", "parser_version", "record_key", "kind", "data",
    "content_hash", "first_seen_at", "last_seen_at", "updated_at",
)  # fmt: skip


def day_of(moment: float) -> float:
    """The UTC midnight (epoch seconds) of the day ``moment`` falls in."""
    return moment - moment % DAY


def write_parsed(
    conn: Connection, engine: Engine, crawl_id: int, outcomes: Sequence[Outcome], now: float
) -> None:
    """Write the batch's records, parser counts and parser failures (inside its transaction)."""
    parsed = [o for o in outcomes if o.parser_runs]
    if not parsed:
        return
    _write_records(conn, engine, crawl_id, parsed, now)
    _add_stats(conn, engine, crawl_id, parsed, now)
    failures = [
        {
            "crawl_id": crawl_id,
            "category": error_category(failure.error_class),
            "error_class": failure.error_class,
            "message": f"{failure.parser} {failure.version}: {failure.message}"[:4000],
            "task": failure.url,
            "stack_trace": failure.traceback or None,
            "created_at": now,
        }
        for o in parsed
        for failure in o.parse_failures or ()
    ]
    if failures:
        conn.execute(error_logs.insert(), failures)


def _write_records(
    conn: Connection, engine: Engine, crawl_id: int, outcomes: Sequence[Outcome], now: float
) -> None:
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}  # one per key: a batch upserts once
    for outcome in outcomes:
        positions: dict[str, int] = {}
        host = outcome.page.host if outcome.page is not None else outcome.request.host
        for record in outcome.records or ():
            position = positions.get(record.parser, 0)
            positions[record.parser] = position + 1
            key = record.key or positional_key(position)
            rows[(outcome.request.url_hash, record.parser, key)] = {
                "crawl_id": crawl_id,
                "url_hash": outcome.request.url_hash,
                "page_url": outcome.request.url,
                "host": host,
                "parser": record.parser,
                "parser_version": record.parser_version,
                "record_key": key,
                "kind": record.kind,
                "data": record.data_json(),
                "content_hash": record.content_hash(),
                "first_seen_at": now,
                "last_seen_at": now,
                "updated_at": now,
            }
    if not rows:
        return
    stmt = dialect.insert(engine, parsed_records)
    new = stmt.excluded
    changed = parsed_records.c.content_hash != new.content_hash

    def if_changed(name: str) -> Any:
        return case((changed, new[name]), else_=parsed_records.c[name])

    stmt = stmt.on_conflict_do_update(
        index_elements=["crawl_id", "url_hash", "parser", "record_key"],
        set_={
            **{name: if_changed(name) for name in ("kind", "parser_version", "data", "updated_at")},
            "page_url": new.page_url,
            "content_hash": new.content_hash,
            "last_seen_at": new.last_seen_at,
        },
    )
    # Key order: two workers upserting records of the same pages take row locks in one order.
    conn.execute(stmt, [rows[key] for key in sorted(rows)])


def _add_stats(
    conn: Connection, engine: Engine, crawl_id: int, outcomes: Sequence[Outcome], now: float
) -> None:
    totals: dict[tuple[str, str, str], dict[str, float]] = {}
    for outcome in outcomes:
        for run in outcome.parser_runs or ():
            key = (outcome.request.host, run.parser, run.version)
            counts = totals.get(key)
            if counts is None:
                counts = totals[key] = dict.fromkeys(_COUNTS, 0)
            counts["attempts"] += 1
            counts[_OUTCOME_COLUMN[run.outcome]] += 1
            counts["records"] += run.records
            counts["seconds"] += run.seconds
    stmt = dialect.insert(engine, parser_stats)
    stmt = stmt.on_conflict_do_update(
        index_elements=["crawl_id", "host", "parser", "parser_version", "day"],
        set_={
            **{name: parser_stats.c[name] + stmt.excluded[name] for name in _COUNTS},
            "updated_at": stmt.excluded.updated_at,
        },
    )
    day = day_of(now)
    conn.execute(
        stmt,
        [
            {
                "crawl_id": crawl_id, "day": day, "host": host, "parser": parser,
                "parser_version": version, "updated_at": now, **counts,
            }
            for (host, parser, version), counts in sorted(totals.items())
        ],
    )  # fmt: skip


# -- reading ----------------------------------------------------------------------------------


def iter_records(
    engine: Engine, crawl_id: int, *, parser: str | None = None, batch: int = 1000
) -> Iterator[dict[str, Any]]:
    """Every stored record of a crawl (optionally of one parser), in id order, constant memory.

    ``data`` comes back as the stored JSON text.
    """
    columns = [parsed_records.c[name] for name in ("id", "url_hash", *RECORD_FIELDS)]
    query = select(*columns).where(
        parsed_records.c.crawl_id == crawl_id, parsed_records.c.id > bindparam("last")
    )
    if parser is not None:
        query = query.where(parsed_records.c.parser == parser)
    query = query.order_by(parsed_records.c.id).limit(batch)
    last_id = 0
    while True:
        with engine.connect() as conn:
            rows = conn.execute(query, {"last": last_id}).mappings().all()
        if not rows:
            return
        for row in rows:
            yield dict(row)
        last_id = rows[-1]["id"]


def parser_stats_report(
    engine: Engine,
    crawl_id: int | None,
    *,
    host: str | None = None,
    parser: str | None = None,
    since: float | None = None,
    with_days: bool = False,
) -> list[dict[str, Any]]:
    """Success rates per (host, parser, version) of a crawl (of every crawl: None), busiest
    first.

    Each line sums the days since ``since`` (all by default) and says how the last day with
    attempts compares with the days before it: ``last_day``, ``last_day_rate``,
    ``earlier_rate`` (``None`` when there is no earlier day) and ``drop`` (``earlier_rate -
    last_day_rate``, or ``None``), so a site whose layout changed shows as a positive drop.
    ``with_days`` adds ``days``: the counts of each day, oldest first.
    """
    c = parser_stats.c
    conditions = [] if crawl_id is None else [c.crawl_id == crawl_id]
    if host is not None:
        conditions.append(c.host == host)
    if parser is not None:
        conditions.append(c.parser == parser)
    if since is not None:
        conditions.append(c.day >= day_of(since))
    # Summed per day: every crawl's rows of one (host, parser, version, day) are one day.
    query = (
        select(
            c.host, c.parser, c.parser_version, c.day,
            func.max(c.updated_at).label("updated_at"),
            # cast: PostgreSQL sums bigints as numeric (a Decimal to the driver)
            *(cast(func.sum(c[name]), c[name].type).label(name) for name in _COUNTS),
        )
        .where(*conditions)
        .group_by(c.host, c.parser, c.parser_version, c.day)
        .order_by(c.host, c.parser, c.parser_version, c.day)
    )  # fmt: skip
    lines: dict[tuple[str, str, str], dict[str, Any]] = {}
    with engine.connect() as conn:
        for row in conn.execute(query).mappings():
            key = (row["host"], row["parser"], row["parser_version"])
            line = lines.get(key)
            if line is None:
                line = lines[key] = {
                    "host": key[0], "parser": key[1], "version": key[2],
                    **dict.fromkeys(_COUNTS, 0), "updated_at": 0.0, "days": [],
                }  # fmt: skip
            day = {"day": row["day"], **{name: row[name] for name in _COUNTS}}
            day["success_rate"] = _rate(day)
            line["days"].append(day)
            for name in _COUNTS:
                line[name] += row[name]
            line["updated_at"] = max(line["updated_at"], row["updated_at"])
    report = []
    for line in lines.values():
        days = line["days"] if with_days else line.pop("days")
        line["seconds"] = round(line["seconds"], 6)
        line["success_rate"] = _rate(line)
        last = days[-1]
        earlier = {name: sum(d[name] for d in days[:-1]) for name in ("attempts", "successes")}
        line["last_day"] = last["day"]
        line["last_day_rate"] = last["success_rate"]
        line["earlier_rate"] = _rate(earlier)
        line["drop"] = (
            None
            if line["earlier_rate"] is None or last["success_rate"] is None
            else round(line["earlier_rate"] - last["success_rate"], 6)
        )
        report.append(line)
    report.sort(key=lambda line: (-line["attempts"], line["host"], line["parser"]))
    return report


HEALTH_DAYS: Final = 8  # days of parser_stats the health figures read


def parser_health(engine: Engine, now: float) -> list[dict[str, Any]]:
    """Per (parser, version, domain), over every crawl: the success ratio and attempts of its
    last day with attempts among the last ``HEALTH_DAYS``, and what to hold it against: the
    ratio of its day before (``previous_day``) and that of the version seen before it on the
    domain (``previous_version``, on that version's own last day), ``None`` when unknown.
    What ``/metrics`` exports as ``harvestman_parser_*`` gauges."""
    c = parser_stats.c
    query = (
        select(
            c.parser, c.parser_version, c.host, c.day,
            func.sum(c.attempts).label("attempts"), func.sum(c.successes).label("successes"),
            func.min(c.id).label("first_id"),
        )
        .where(c.day >= day_of(now) - (HEALTH_DAYS - 1) * DAY)
        .group_by(c.parser, c.parser_version, c.host, c.day)
        .order_by(c.parser, c.host, c.parser_version, c.day)
    )  # fmt: skip
    series: dict[tuple[str, str, str], list[Any]] = {}
    with engine.connect() as conn:
        for row in conn.execute(query):
            if row.attempts:
                series.setdefault((row.parser, row.host, row.parser_version), []).append(row)
    lines: dict[tuple[str, str, str], dict[str, Any]] = {}
    first_seen: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for (parser, host, version), days in series.items():
        last = days[-1]
        before = days[-2] if len(days) > 1 and days[-2].day == last.day - DAY else None
        lines[(parser, host, version)] = {
            "parser": parser, "version": version, "domain": host,
            "attempts": int(last.attempts), "success_ratio": _ratio(last),
            "previous_day": None if before is None else _ratio(before),
            "previous_version": None,
        }  # fmt: skip
        first_seen.setdefault((parser, host), []).append((min(d.first_id for d in days), version))
    for (parser, host), versions in first_seen.items():
        versions.sort()
        for (_, earlier), (_, later) in itertools.pairwise(versions):
            line = lines[(parser, host, later)]
            line["previous_version"] = lines[(parser, host, earlier)]["success_ratio"]
    return list(lines.values())


def _ratio(row: Any) -> float:
    # PostgreSQL sums BIGINT as NUMERIC (Decimal): ints first, so the ratio is a float.
    return int(row.successes) / int(row.attempts)


def _rate(counts: dict[str, Any]) -> float | None:
    return round(counts["successes"] / counts["attempts"], 6) if counts["attempts"] else None


def record_count(engine: Engine, crawl_id: int) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(parsed_records)
                .where(parsed_records.c.crawl_id == crawl_id)
            ).scalar_one()
        )
