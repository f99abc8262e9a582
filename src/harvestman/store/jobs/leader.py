"""A renewable lease in the store, so one instance at a time runs the maintenance sweeps.

The holder renews it well inside its lifetime; if the holder dies, the lease expires and the
next instance to ask takes it over (within ``ttl`` plus one renewal period). Taking and
renewing are one compare-and-set UPDATE (``WHERE holder = :me OR expires_at <= :now``), so two
instances never hold it at once, on SQLite or PostgreSQL.

Expiry compares times from the instances' clocks: keep them in sync (NTP) and the ttl well
above the skew.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import case, delete, or_, select, update

from harvestman.store import dialect
from harvestman.store.jobs.tables import scheduler_leases

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from harvestman.store.jobs.database import JobDatabase

MAINTENANCE = "maintenance"


class LeaderLease:
    """The lease ``name`` held by ``holder`` for ``ttl`` seconds at a time.

    ``await acquire()`` both takes a free or expired lease and renews one already held;
    ``is_leader`` is true only while the lease this instance last took is unexpired, so an
    instance cut off from the store stops acting as leader by itself.
    """

    def __init__(
        self, store: JobDatabase, holder: str, *, name: str = MAINTENANCE, ttl: float = 30.0
    ) -> None:
        self._store = store
        self.holder = holder
        self.name = name
        self.ttl = ttl
        self._expires_at = 0.0

    @property
    def is_leader(self) -> bool:
        return self._store.clock() < self._expires_at

    async def acquire(self) -> bool:
        """Take or renew the lease; True when this instance holds it now."""
        now = self._store.clock()
        expires = now + self.ttl
        table = scheduler_leases

        def _acquire() -> bool:
            with self._store.begin() as conn:
                taken = conn.execute(
                    update(table)
                    .where(
                        table.c.name == self.name,
                        or_(table.c.holder == self.holder, table.c.expires_at <= now),
                    )
                    .values(
                        acquired_at=case(
                            (table.c.holder == self.holder, table.c.acquired_at), else_=now
                        ),
                        holder=self.holder,
                        expires_at=expires,
                    )
                ).rowcount
                if not taken:
                    taken = self._insert(conn, now, expires)
            return bool(taken)

        held = await self._store.run(_acquire)
        self._expires_at = expires if held else 0.0
        return held

    def _insert(self, conn: Connection, now: float, expires: float) -> bool:
        """Create the lease row held by this instance; False when another created it first."""
        # RETURNING, not rowcount: psycopg reports -1 for INSERT ... ON CONFLICT.
        inserted = conn.execute(
            dialect.insert_ignore(self._store.engine, scheduler_leases, "name")
            .values(name=self.name, holder=self.holder, acquired_at=now, expires_at=expires)
            .returning(scheduler_leases.c.name)
        ).first()
        return inserted is not None

    renew = acquire

    async def take_expired(self) -> bool:
        """Take the lease only once it has expired, whoever held it (even this instance): a
        turn that comes once per ``ttl`` across all instances, e.g. a daily job."""
        now = self._store.clock()
        expires = now + self.ttl
        table = scheduler_leases

        def _take() -> bool:
            with self._store.begin() as conn:
                taken = conn.execute(
                    update(table)
                    .where(table.c.name == self.name, table.c.expires_at <= now)
                    .values(holder=self.holder, acquired_at=now, expires_at=expires)
                ).rowcount
                if not taken:
                    taken = self._insert(conn, now, expires)
            return bool(taken)

        held = await self._store.run(_take)
        if held:
            self._expires_at = expires
        return held

    async def release(self) -> None:
        """Give the lease up (a clean shutdown): another instance may take it at once."""
        self._expires_at = 0.0
        table = scheduler_leases

        def _release() -> None:
            with self._store.begin() as conn:
                conn.execute(
                    delete(table).where(table.c.name == self.name, table.c.holder == self.holder)
                )

        await self._store.run(_release)

    async def current(self) -> tuple[str, float] | None:
        """Who holds the lease and until when (None: nobody ever took it)."""
        table = scheduler_leases

        def _read() -> tuple[str, float] | None:
            with self._store.read() as conn:
                row = conn.execute(
                    select(table.c.holder, table.c.expires_at).where(table.c.name == self.name)
                ).first()
            return None if row is None else (row.holder, float(row.expires_at))

        return await self._store.run(_read)
