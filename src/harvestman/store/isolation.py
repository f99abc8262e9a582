"""One bad record never blocks the rest of its batch.

``SqlStore.record`` writes a batch through :func:`write_batch`:

1. every value is checked against its column (``store.values``); what was changed is noted in
   ``error_logs`` (``UnstorableValue``) in the batch's transaction;
2. the batch is written in one transaction, as always;
3. when the store refuses it for a transient reason (``store.transient.is_transient``), the
   error is raised: the caller retries the whole batch later;
4. any other refusal is some record's fault. The batch is written again in one new
   transaction, each half inside a savepoint, halving a refused half again down to single
   records. A refused outcome is dead-lettered: its URL is ``failed`` with ``StoreRejected``
   and the database's message (``harvestman dead-letter list``), with an ``error_logs`` row;
   a refused discovered URL is dropped, with an ``error_logs`` row. Everything else commits in
   that same transaction, so a batch is still written whole or not at all.

A batch of n records with one bad one costs about 2·log2(n) savepoint writes (16 for 200);
only a refused batch pays it. A transient error during the halving rolls it all back and is
raised like any other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from sqlalchemy import Connection, update
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from harvestman.errors import StoreRejected, UnstorableValue, error_category
from harvestman.records import NewUrl, Outcome, UrlStatus
from harvestman.store.schema import error_logs, urls
from harvestman.store.transient import is_transient
from harvestman.store.values import Note, check_batch, rule_for

__all__ = ["BatchReport", "write_batch"]

log = logging.getLogger(__name__)

Write: TypeAlias = Callable[[Connection, Sequence[Outcome], Sequence[NewUrl]], None]
Begin: TypeAlias = Callable[[], AbstractContextManager[Connection]]
Unit: TypeAlias = Outcome | NewUrl

# What a write raises for a record it cannot take: the database's errors, and the driver's
# when it cannot even bind a value (an int past 64 bits on SQLite, text it cannot encode).
_REFUSALS: Final = (SQLAlchemyError, OverflowError, UnicodeError)
_MESSAGE_CHARS: Final = 1000
_REJECTED: Final = StoreRejected.__name__
_ADJUSTED: Final = UnstorableValue.__name__


@dataclass(slots=True)
class BatchReport:
    """What the write did besides writing: values changed, records dead-lettered or dropped."""

    notes: list[Note] = field(default_factory=list)
    rejected: list[tuple[Unit, str]] = field(default_factory=list)


def write_batch(
    begin: Begin,
    write: Write,
    crawl_id: int,
    outcomes: Sequence[Outcome],
    new_urls: Sequence[NewUrl],
    now: float,
) -> BatchReport:
    """Write a batch with ``write(conn, outcomes, new_urls)`` inside ``begin()``, isolating
    any record the store refuses (see the module docstring). Raises only transient errors."""
    checked = check_batch(outcomes, new_urls)
    report = BatchReport(notes=checked.notes)
    if checked.notes:
        log.warning("%d records had values changed to fit the store", len(checked.notes))
    try:
        with begin() as conn:
            write(conn, checked.outcomes, checked.new_urls)
            _log_notes(conn, crawl_id, checked.notes, now)
        return report
    except _REFUSALS as exc:
        if is_transient(exc):
            raise
        refusal: BaseException = exc
    units: list[Unit] = [*checked.new_urls, *checked.outcomes]
    log.warning(
        "the store refused a batch of %d records (%s); isolating", len(units), _say(refusal)
    )
    with begin() as conn:
        report.rejected = _write_or_halve(conn, write, units, refusal)
        for unit, message in report.rejected:
            _reject(conn, crawl_id, unit, message, now)
        _log_notes(conn, crawl_id, checked.notes, now)
    log.warning(
        "dead-lettered or dropped %d of %d records the store refused: %s",
        len(report.rejected), len(units), "; ".join(message for _, message in report.rejected),
    )  # fmt: skip
    return report


def _write_or_halve(
    conn: Connection, write: Write, units: list[Unit], refusal: BaseException | None
) -> list[tuple[Unit, str]]:
    """Write ``units`` in a savepoint; when refused (``refusal``: already known), each half
    again. Returns the single records refused, with the database's message."""
    if refusal is None:
        try:
            with conn.begin_nested():
                write(
                    conn,
                    [unit for unit in units if isinstance(unit, Outcome)],
                    [unit for unit in units if isinstance(unit, NewUrl)],
                )
            return []
        except _REFUSALS as exc:
            if is_transient(exc):
                raise
            refusal = exc
    if len(units) == 1:
        return [(units[0], _say(refusal))]
    middle = len(units) // 2
    return _write_or_halve(conn, write, units[:middle], None) + _write_or_halve(
        conn, write, units[middle:], None
    )


def _reject(conn: Connection, crawl_id: int, unit: Unit, message: str, now: float) -> None:
    """Dead-letter a refused outcome (its URL fails for good) or note a dropped URL."""
    try:
        with conn.begin_nested():
            if isinstance(unit, Outcome):
                conn.execute(
                    update(urls)
                    .where(urls.c.id == unit.request.id)
                    .values(
                        status=UrlStatus.FAILED.value,
                        error_class=_REJECTED,
                        error=message,
                        next_crawl_at=unit.next_crawl_at,  # asked for again after its TTL
                        attempts=unit.attempts,
                        status_code=unit.status_code,
                        lease_until=None,
                        leased_by=None,
                        updated_at=now,
                    )
                )
                task, text = unit.request.url, message
            else:
                task, text = unit.url, f"discovered URL dropped: {message}"
            conn.execute(error_logs.insert(), [_error_row(crawl_id, _REJECTED, text, task, now)])
    except _REFUSALS as exc:
        if is_transient(exc):
            raise
        # Its lease expires and the URL comes back; nothing else waits for it.
        log.error("could not dead-letter %s: %s", _task_of(unit), _say(exc))


def _task_of(unit: Unit) -> str:
    return unit.request.url if isinstance(unit, Outcome) else unit.url


def _log_notes(conn: Connection, crawl_id: int, notes: Sequence[Note], now: float) -> None:
    if notes:
        conn.execute(
            error_logs.insert(),
            [_error_row(crawl_id, _ADJUSTED, note.message, note.task, now) for note in notes],
        )


def _error_row(
    crawl_id: int, error_class: str, message: str, task: str, now: float
) -> dict[str, object]:
    return {
        "crawl_id": crawl_id,
        "category": error_category(error_class),
        "error_class": error_class,
        "message": rule_for(error_logs.c.message).check(message[:4000])[0],
        "task": rule_for(error_logs.c.task).check(task)[0],
        "stack_trace": None,
        "created_at": now,
    }


def _say(exc: BaseException) -> str:
    """The database's own message on one line (not the statement and its parameters)."""
    cause = exc.orig if isinstance(exc, DBAPIError) else exc
    text = " ".join(f"{type(cause).__name__}: {cause}".split())
    clean, _ = rule_for(urls.c.error).check(text[:_MESSAGE_CHARS])
    return str(clean)
