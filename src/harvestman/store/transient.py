"""Which store errors are transient: the same write may succeed later, unchanged.

Only these are retried by a batch writer's caller; any other refusal is some record's fault and
is isolated (``store.isolation``). The list is explicit, matched on SQLSTATE codes, SQLite
result codes and SQLAlchemy's own exception types.
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from sqlalchemy import exc as sa

__all__ = ["Refusal", "is_transient", "refusal"]

_PG_STATES: Final = frozenset(
    {
        "40001",  # serialization_failure
        "40P01",  # deadlock_detected
        "55P03",  # lock_not_available: lock_timeout, NOWAIT
        "57014",  # query_canceled: statement_timeout, pg_cancel_backend
        "57P01",  # admin_shutdown
        "57P02",  # crash_shutdown
        "57P03",  # cannot_connect_now: the server is starting or stopping
    }
)
_PG_CLASSES: Final = frozenset(
    {
        "08",  # connection exceptions
        "53",  # insufficient resources: disk full, out of memory, too many connections
        "58",  # system errors outside PostgreSQL: I/O errors
    }
)
# SQLite result codes; extended codes (SQLITE_BUSY_SNAPSHOT, SQLITE_IOERR_WRITE...) included.
_SQLITE_CODES: Final = (
    "SQLITE_BUSY",  # "database is locked": another writer held it past busy_timeout
    "SQLITE_LOCKED",
    "SQLITE_FULL",
    "SQLITE_IOERR",
    "SQLITE_CANTOPEN",
    "SQLITE_PROTOCOL",
    "SQLITE_NOMEM",
    "SQLITE_INTERRUPT",
)


def is_transient(exc: BaseException) -> bool:
    """True when retrying the same write later may succeed; False for a refusal of its data.

    Transient, and nothing else:

    - PostgreSQL, by SQLSTATE: class 08 (the connection failed or dropped), 40001
      (serialization failure), 40P01 (deadlock), 55P03 (lock timeout), 57014 (statement
      timeout or cancel), 57P01/57P02/57P03 (the server shut down, crashed or is starting),
      class 53 (insufficient resources: disk full, out of memory, too many connections) and
      class 58 (I/O errors);
    - a driver's connection failure that carries no SQLSTATE (``OperationalError``: the
      server closed the connection, it cannot be reached);
    - SQLite, by result code: SQLITE_BUSY ("database is locked"), SQLITE_LOCKED, SQLITE_FULL,
      SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_PROTOCOL, SQLITE_NOMEM, SQLITE_INTERRUPT;
    - SQLAlchemy: a connection it invalidated (``connection_invalidated``), a
      ``DisconnectionError`` and a pool ``TimeoutError``.

    >>> is_transient(ValueError("not a database error"))
    False
    """
    if isinstance(exc, sa.DisconnectionError | sa.TimeoutError):
        return True
    if not isinstance(exc, sa.DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    sqlite_code = getattr(orig, "sqlite_errorname", None)
    if isinstance(sqlite_code, str):
        return sqlite_code.startswith(_SQLITE_CODES)
    state = getattr(orig, "sqlstate", None)
    if not isinstance(state, str):
        return isinstance(exc, sa.OperationalError)
    return state in _PG_STATES or state[:2] in _PG_CLASSES


class Refusal(Enum):
    """Why the store refused a request, for callers that answer someone (the API's status)."""

    INVALID_VALUE = "invalid_value"  # the request's own value (NUL, out of range): its fault
    CONFLICT = "conflict"  # a constraint: the change conflicts with stored data
    UNAVAILABLE = "unavailable"  # the store is away: try again later
    INTERNAL = "internal"  # anything else: a bug


def refusal(exc: BaseException | None) -> Refusal:
    """What a store error's cause says about whose fault it is.

    >>> refusal(None)
    <Refusal.UNAVAILABLE: 'unavailable'>
    >>> refusal(ValueError("a bug"))
    <Refusal.INTERNAL: 'internal'>
    """
    if exc is None or isinstance(
        exc, sa.OperationalError | sa.InterfaceError | sa.DisconnectionError | sa.TimeoutError
    ):
        return Refusal.UNAVAILABLE
    if isinstance(exc, sa.DataError):
        return Refusal.INVALID_VALUE
    if isinstance(exc, sa.IntegrityError):
        return Refusal.CONFLICT
    return Refusal.INTERNAL
