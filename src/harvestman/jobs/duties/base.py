"""``PeriodicTask``: one duty of the scheduler, run every ``interval`` by ``Scheduler.run``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol


class PeriodicTask(Protocol):
    """A duty the scheduler runs every ``interval`` seconds (read again after each run).

    ``leader_only``: it runs only while this instance holds the leader's lease. ``run`` may
    raise: the error is logged (a store error once per outage) and the next turn comes as
    usual; the other duties never see it. ``close`` is called once as the scheduler stops.
    """

    @property
    def name(self) -> str: ...

    @property
    def interval(self) -> float: ...

    @property
    def leader_only(self) -> bool: ...

    async def run(self) -> object: ...

    async def close(self) -> None: ...


class Every:
    """A duty that is one step of the scheduler's own (its log flush, its metrics)."""

    def __init__(
        self,
        name: str,
        interval: float,
        step: Callable[[], Awaitable[object]],
        *,
        leader_only: bool = False,
    ) -> None:
        self.name = name
        self.interval = interval
        self.leader_only = leader_only
        self._step = step

    async def run(self) -> object:
        return await self._step()

    async def close(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"Every({self.name!r}, {self.interval:g})"
