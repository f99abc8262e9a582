"""What went wrong, as the store keeps it: the error log and the dead letters.

``error_logs`` has a row per recorded failure (category, error class, message, the URL as
``task``); the dead letters are the frontier rows that failed for good (``status = failed``:
retries exhausted, or an error no retry helps). The CLI (``harvestman errors``, ``harvestman
dead-letter``) and the API (``/api/errors``, ``/api/dead-letter``) both read and change them
through these functions, as ``SqlStore`` methods (``FailureRepository``). Synchronous
SQLAlchemy Core on the store's engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Engine, func, or_, select, update

from harvestman.records import UrlStatus
from harvestman.store.connection import StoreConnection
from harvestman.store.schema import crawls, error_logs, urls
from harvestman.store.transaction import locked_ids, transaction

CATEGORIES = ("network", "http", "parse", "validation", "storage")
MAX_IDS = 1000  # ids per re-queue request: one IN list, far below SQLite's parameter limit

DEAD_LETTER_FIELDS = (
    "id", "crawl_id", "url", "host", "kind", "depth", "attempts", "status_code", "error_class",
    "error", "discovered_at", "last_fetched_at", "updated_at", "next_crawl_at",
)  # fmt: skip


def _error_conditions(
    crawl_id: int | None,
    category: str | None,
    error_class: str | None,
    host: str | None,
    since: float | None,
) -> list[ColumnElement[bool]]:
    table = error_logs.c
    where: list[ColumnElement[bool]] = []
    if crawl_id is not None:
        where.append(table.crawl_id == crawl_id)
    if category:
        where.append(table.category == category)
    if error_class:
        where.append(table.error_class == error_class)
    if host:
        # The task is the URL, normalized: scheme://host[:port]/...
        host = host.lower()
        where.append(
            or_(
                table.task.startswith(f"http://{host}/", autoescape=True),
                table.task.startswith(f"https://{host}/", autoescape=True),
            )
        )
    if since is not None:
        where.append(table.created_at >= since)
    return where


def error_rows(
    engine: Engine,
    *,
    crawl_id: int | None = None,
    category: str | None = None,
    error_class: str | None = None,
    host: str | None = None,
    since: float | None = None,
    before_id: int | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """Error log entries, newest first, each with its crawl's name (``crawl``).

    Every filter is optional: a crawl, a category, an error class, a URL host (as the store
    keys hosts: ``host[:port]``), entries since an epoch time. Pages go backwards by id: pass
    the last row's ``id`` as ``before_id`` for the next page.
    """
    where = _error_conditions(crawl_id, category, error_class, host, since)
    if before_id is not None:
        where.append(error_logs.c.id < before_id)
    query = (
        select(error_logs, crawls.c.name.label("crawl"))
        .select_from(error_logs.outerjoin(crawls, crawls.c.id == error_logs.c.crawl_id))
        .where(*where)
        .order_by(error_logs.c.id.desc())
        .limit(limit)
    )
    with engine.connect() as conn:
        return [dict(row) for row in conn.execute(query).mappings()]


def error_summary(
    engine: Engine, *, crawl_id: int | None = None, since: float | None = None
) -> dict[str, Any]:
    """Error log entries counted by category and by (category, error class), most first."""
    where = _error_conditions(crawl_id, None, None, None, since)
    count = func.count().label("n")
    query = (
        select(error_logs.c.category, error_logs.c.error_class, count)
        .where(*where)
        .group_by(error_logs.c.category, error_logs.c.error_class)
        .order_by(count.desc(), error_logs.c.category, error_logs.c.error_class)
    )
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    by_category = dict.fromkeys(CATEGORIES, 0)
    for category, _, n in rows:
        by_category[category] = by_category.get(category, 0) + int(n)
    return {
        "total": sum(by_category.values()),
        "by_category": by_category,
        "by_type": [
            {"category": category, "type": error_class, "count": int(n)}
            for category, error_class, n in rows
        ],
    }


def _dead_conditions(
    crawl_id: int | None, host: str | None, error_class: str | None, ids: Sequence[int] | None
) -> list[ColumnElement[bool]]:
    where = [urls.c.status == UrlStatus.FAILED.value]
    if crawl_id is not None:
        where.append(urls.c.crawl_id == crawl_id)
    if host:
        where.append(urls.c.host == host.lower())
    if error_class:
        where.append(urls.c.error_class == error_class)
    if ids is not None:
        if len(ids) > MAX_IDS:
            raise ValueError(f"at most {MAX_IDS} ids at a time, got {len(ids)}")
        where.append(urls.c.id.in_(list(ids)))
    return where


def dead_letters(
    engine: Engine,
    crawl_id: int | None,
    *,
    host: str | None = None,
    error_class: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """A page of the crawl's (every crawl's: None) dead letters (failed URLs) in id order,
    and how many there are."""
    where = _dead_conditions(crawl_id, host, error_class, None)
    columns = [urls.c[name] for name in DEAD_LETTER_FIELDS]
    with engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(urls).where(*where)).scalar_one()
        rows = conn.execute(
            select(*columns).where(*where).order_by(urls.c.id).limit(limit).offset(offset)
        ).mappings()
        return [dict(row) for row in rows], int(total)


def dead_letter_classes(
    engine: Engine, crawl_id: int | None, *, host: str | None = None
) -> list[dict[str, Any]]:
    """The crawl's (every crawl's: None) dead letters counted by error class (of one host),
    most first: what a filter by class can offer."""
    where = _dead_conditions(crawl_id, host, None, None)
    count = func.count().label("n")
    query = (
        select(urls.c.error_class, count)
        .where(*where)
        .group_by(urls.c.error_class)
        .order_by(count.desc(), urls.c.error_class)
    )
    with engine.connect() as conn:
        return [{"type": cls, "count": int(n)} for cls, n in conn.execute(query)]


def requeue_dead_letters(
    engine: Engine,
    crawl_id: int,
    now: float,
    *,
    ids: Sequence[int] | None = None,
    host: str | None = None,
    error_class: str | None = None,
    dry_run: bool = False,
) -> int:
    """Put the crawl's dead letters back into the frontier: due now, retries reset. Which: the
    given ``ids`` (failed rows among them), those of a ``host`` or an ``error_class``, or all.

    Returns how many rows were (with ``dry_run``: would be) re-queued; a dry run changes nothing.
    """
    where = _dead_conditions(crawl_id, host, error_class, ids)
    if dry_run:
        with engine.connect() as conn:
            return int(
                conn.execute(select(func.count()).select_from(urls).where(*where)).scalar_one()
            )
    with transaction(engine) as conn:
        changed = conn.execute(
            update(urls)
            .where(locked_ids(*where))
            .values(status=UrlStatus.PENDING.value, attempts=0, next_crawl_at=now, updated_at=now)
        ).rowcount
    return int(changed or 0)


class FailureRepository(StoreConnection):
    """The functions above as store methods (synchronous: run them off the event loop)."""

    def error_rows(self, **filters: Any) -> list[dict[str, Any]]:
        return error_rows(self.engine, **filters)

    def error_summary(
        self, *, crawl_id: int | None = None, since: float | None = None
    ) -> dict[str, Any]:
        return error_summary(self.engine, crawl_id=crawl_id, since=since)

    def dead_letters(
        self, crawl_id: int | None, **filters: Any
    ) -> tuple[list[dict[str, Any]], int]:
        return dead_letters(self.engine, crawl_id, **filters)

    def dead_letter_classes(
        self, crawl_id: int | None, host: str | None = None
    ) -> list[dict[str, Any]]:
        return dead_letter_classes(self.engine, crawl_id, host=host)

    def requeue_dead_letters(self, crawl_id: int, now: float, **filters: Any) -> int:
        return requeue_dead_letters(self.engine, crawl_id, now, **filters)
