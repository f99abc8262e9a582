"""Sign-in attempts counted in the store (``sign_in_attempts``, migration 0025), so that every
``serve`` sharing the store counts together, and counted before the password is checked.

``reserve_sign_in`` adds one attempt to each key in one transaction, an upsert per key
(``INSERT … ON CONFLICT (key) DO UPDATE … RETURNING``: PostgreSQL row-locks the key until
commit, SQLite has one writer), keys taken in sorted order so two reservations never wait on
each other crosswise. If any key is then past its limit the transaction rolls back and the
attempt is refused: concurrent attempts are admitted one at a time, never more than the limit.
``release_sign_in`` gives a successful attempt's count back (a person who signs in is not
held back by their own successes). Windows are fixed: a key's count restarts ``window``
seconds after its first attempt; rows two windows old are deleted first, in a transaction of
their own, skipping rows another reservation holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import case, delete, select, update

from harvestman.store import dialect
from harvestman.store.connection import StoreConnection
from harvestman.store.schema import sign_in_attempts

__all__ = ["SignInRepository"]


class _Refused(Exception):
    def __init__(self, wait: float) -> None:
        self.wait = wait


class SignInRepository(StoreConnection):
    """The ``sign_in_attempts`` table. Synchronous: the API runs these off the event loop."""

    def reserve_sign_in(
        self, keys: Sequence[str], *, limit: int, window: float, now: float
    ) -> float | None:
        """Count one attempt against every key and return None, or, when a key has had
        ``limit`` attempts in its window already, count nothing and return the seconds until
        that window ends."""
        table = sign_in_attempts
        expired = table.c.window_start <= now - window
        with self._begin() as conn:  # its own transaction: it holds no key while one waits
            stale = (
                select(table.c.key)
                .where(table.c.window_start <= now - 2 * window)
                .order_by(table.c.key)
                .limit(1000)
                .with_for_update(skip_locked=True)
            )
            conn.execute(delete(table).where(table.c.key.in_(stale.scalar_subquery())))
        try:
            with self._begin() as conn:
                for key in sorted(set(keys)):
                    upsert = dialect.insert(self.engine, table).values(
                        key=key, window_start=now, attempts=1
                    )
                    counted = upsert.on_conflict_do_update(
                        index_elements=["key"],
                        set_={
                            "attempts": case((expired, 1), else_=table.c.attempts + 1),
                            "window_start": case((expired, now), else_=table.c.window_start),
                        },
                    ).returning(table.c.attempts, table.c.window_start)
                    attempts, started = conn.execute(counted).one()
                    if attempts > limit:
                        raise _Refused(max(0.0, float(started) + window - now))
        except _Refused as refused:  # rolled back: the refused attempt is not counted
            return refused.wait
        return None

    def release_sign_in(self, keys: Sequence[str]) -> None:
        """Give back one attempt of each key (the attempt succeeded)."""
        table = sign_in_attempts
        with self._begin() as conn:
            conn.execute(
                update(table)
                .where(table.c.key.in_(sorted(set(keys))), table.c.attempts > 0)
                .values(attempts=table.c.attempts - 1)
            )
