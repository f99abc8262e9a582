"""Site parser rollouts in the store: one row per (parser, domain), set by an admin through
the API (promote: share 1.0, roll back: 0.0) and read by crawls every
``parser_rollout_refresh`` seconds (``crawl.steps.ParsersStep``)."""

from __future__ import annotations

from sqlalchemy import select

from harvestman.records import ParserRollout
from harvestman.store import dialect
from harvestman.store.connection import StoreConnection
from harvestman.store.schema import parser_rollouts

_FIELDS = ("parser", "version", "share", "domain", "updated_at", "updated_by")


class RolloutRepository(StoreConnection):
    """The ``parser_rollouts`` table."""

    async def parser_rollouts(self, parser: str | None = None) -> list[ParserRollout]:
        """Every rollout (of one parser if named), by parser and domain."""

        def _read() -> list[ParserRollout]:
            query = select(*(parser_rollouts.c[name] for name in _FIELDS)).order_by(
                parser_rollouts.c.parser, parser_rollouts.c.domain
            )
            if parser is not None:
                query = query.where(parser_rollouts.c.parser == parser)
            with self.engine.connect() as conn:
                return [ParserRollout(**row) for row in conn.execute(query).mappings()]

        return await self._run(_read)

    async def set_parser_rollout(self, rollout: ParserRollout) -> None:
        """Create or replace the rollout of ``rollout.parser`` on ``rollout.domain``."""
        values = {name: getattr(rollout, name) for name in _FIELDS}

        def _write() -> None:
            stmt = dialect.insert(self.engine, parser_rollouts)
            stmt = stmt.on_conflict_do_update(
                index_elements=["parser", "domain"],
                set_={name: stmt.excluded[name] for name in _FIELDS if name != "parser"},
            )
            with self._begin() as conn:
                conn.execute(stmt, [values])

        await self._run(_write)
