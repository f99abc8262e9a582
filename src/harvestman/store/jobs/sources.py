"""Sources: what to crawl and how (CRUD), and each source's adaptive-scheduling state."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import asdict, fields, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select, update
from sqlalchemy.engine import RowMapping
from sqlalchemy.exc import IntegrityError

from harvestman.jobs.adaptive import AdaptiveState
from harvestman.jobs.errors import InvalidSpec, JobStateError, NameTaken, NotFound
from harvestman.jobs.records import (
    ResultPage,
    ScopeRules,
    Source,
    SourceOptions,
    SourceSpec,
    crawl_name,
)
from harvestman.jobs.states import JobStatus, allowed_actions
from harvestman.store import dialect, keyset
from harvestman.store.jobs.tables import jobs, source_adaptive_state, sources
from harvestman.store.keyset import Keyset

if TYPE_CHECKING:
    from harvestman.store.jobs.database import JobDatabase

SPEC_FIELDS = frozenset(f.name for f in fields(SourceSpec))
_KEYSET = Keyset(sources.c.id)


def source_from_row(row: RowMapping) -> Source:
    scope = json.loads(row["scope"])
    return Source(
        id=int(row["id"]),
        name=row["name"],
        start_urls=json.loads(row["start_urls"]),
        max_depth=int(row["max_depth"]),
        scope=ScopeRules(**scope),
        crawl_delay=row["crawl_delay"],
        max_pages=int(row["max_pages"]),
        enabled=bool(row["enabled"]),
        options=SourceOptions.of(json.loads(row["options"] or "{}")),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        crawl=row["crawl"] or "",
    )


def scope_rules(value: Mapping[str, Any]) -> ScopeRules:
    """Scope rules from a mapping (``allow_domains``, ``include``, ``exclude``)."""
    unknown = set(value) - {"allow_domains", "include", "exclude"}
    if unknown:
        raise InvalidSpec(f"scope.{sorted(unknown)[0]}", "is not a scope rule")
    return ScopeRules(**{name: list(items) for name, items in value.items()})


def _values(spec: SourceSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "start_urls": json.dumps(spec.start_urls),
        "max_depth": spec.max_depth,
        "scope": json.dumps(asdict(spec.scope)),
        "crawl_delay": spec.crawl_delay,
        "max_pages": spec.max_pages,
        "enabled": spec.enabled,
        "options": json.dumps(spec.options.given(), sort_keys=True),
    }


class SourceRepository:
    """Source CRUD. Names are unique; deleting a source deletes its jobs and their history."""

    def __init__(self, store: JobDatabase) -> None:
        self._store = store

    async def create(self, spec: SourceSpec) -> Source:
        spec.validate()
        now = self._store.clock()

        def _create() -> Source:
            try:
                with self._store.begin() as conn:
                    new_id = conn.execute(
                        sources.insert().values(**_values(spec), created_at=now, updated_at=now)
                    ).inserted_primary_key
                    assert new_id is not None
                    source_id = int(new_id[0])
                    conn.execute(
                        update(sources)
                        .where(sources.c.id == source_id)
                        .values(crawl=crawl_name(spec.name, source_id))
                    )
                    return self._get(conn, source_id)
            except IntegrityError:
                raise NameTaken(spec.name) from None

        return await self._store.run(_create)

    async def get(self, source_id: int) -> Source:
        def _fetch() -> Source:
            with self._store.read() as conn:
                return self._get(conn, source_id)

        return await self._store.run(_fetch)

    @staticmethod
    def _get(conn: Connection, source_id: int) -> Source:
        row = conn.execute(select(sources).where(sources.c.id == source_id)).mappings().first()
        if row is None:
            raise NotFound("source", source_id)
        return source_from_row(row)

    async def crawls(self, source_ids: Collection[int]) -> dict[int, str]:
        """The crawl namespace of each source of ``source_ids`` that exists."""
        ids = sorted(set(source_ids))
        if not ids:
            return {}

        def _load() -> dict[int, str]:
            with self._store.read() as conn:
                rows = conn.execute(
                    select(sources.c.id, sources.c.crawl).where(sources.c.id.in_(ids))
                )
                return {int(sid): crawl or f"source-{sid}" for sid, crawl in rows}

        return await self._store.run(_load)

    async def by_crawl(self) -> dict[str, tuple[int, str]]:
        """Every source's crawl namespace -> (its id, its name): sources are few."""

        def _load() -> dict[str, tuple[int, str]]:
            with self._store.read() as conn:
                rows = conn.execute(select(sources.c.id, sources.c.name, sources.c.crawl))
                return {crawl or f"source-{sid}": (int(sid), name) for sid, name, crawl in rows}

        return await self._store.run(_load)

    async def job_ids(self, source_ids: Collection[int]) -> dict[int, list[int]]:
        """The ids of each source's jobs, in id order (``ix_jobs_source_id``)."""
        ids = sorted(set(source_ids))
        if not ids:
            return {}

        def _load() -> dict[int, list[int]]:
            found: dict[int, list[int]] = {}
            with self._store.read() as conn:
                rows = conn.execute(
                    select(jobs.c.source_id, jobs.c.id)
                    .where(jobs.c.source_id.in_(ids))
                    .order_by(jobs.c.source_id, jobs.c.id)
                )
                for source, job in rows:
                    found.setdefault(int(source), []).append(int(job))
            return found

        return await self._store.run(_load)

    async def list(
        self,
        *,
        enabled: bool | None = None,
        name_contains: str | None = None,
        after: int | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> ResultPage[Source]:
        """Sources in id order (after id ``after``), optionally filtered, with the total
        before paging."""
        conditions = []
        if enabled is not None:
            conditions.append(sources.c.enabled == enabled)
        if name_contains:
            conditions.append(sources.c.name.icontains(name_contains, autoescape=True))

        def _list() -> ResultPage[Source]:
            with self._store.read() as conn:
                total = keyset.count(conn, sources, conditions)
                rows, next_after = _KEYSET.page(
                    conn,
                    select(sources).where(*conditions),
                    after=after,
                    limit=limit,
                    offset=offset,
                )
                items = [source_from_row(r) for r in rows]
                return ResultPage(items, total, limit, offset, next_after)

        return await self._store.run(_list)

    async def update(self, source_id: int, changes: Mapping[str, Any]) -> Source:
        """Change some fields (a partial update; PUT sends them all); the result is validated
        as a whole."""
        unknown = set(changes) - SPEC_FIELDS
        if unknown:
            raise InvalidSpec(sorted(unknown)[0], "is not a source field")
        now = self._store.clock()

        def _update() -> Source:
            try:
                with self._store.begin() as conn:
                    current = self._get(conn, source_id)
                    spec = SourceSpec(**{name: getattr(current, name) for name in SPEC_FIELDS})
                    for name, value in changes.items():
                        if name == "scope" and isinstance(value, Mapping):
                            value = scope_rules(value)
                        elif name == "options" and isinstance(value, Mapping):
                            value = SourceOptions.of(value)  # replaces the options as a whole
                        setattr(spec, name, value)
                    spec.validate()
                    conn.execute(
                        update(sources)
                        .where(sources.c.id == source_id)
                        .values(**_values(spec), updated_at=now)
                    )
                    kept = {name: getattr(spec, name) for name in SPEC_FIELDS}
                    return replace(current, **kept, updated_at=now)
            except IntegrityError:
                raise NameTaken(str(changes.get("name"))) from None

        return await self._store.run(_update)

    async def delete(self, source_id: int) -> None:
        """Delete a source with its jobs, their executions and logs, and its adaptive state;
        JobStateError while one of its jobs runs (as deleting that job: cancel it first)."""

        def _delete() -> None:
            with self._store.begin() as conn:
                running = conn.execute(
                    select(jobs.c.id).where(
                        jobs.c.source_id == source_id, jobs.c.status == JobStatus.RUNNING.value
                    )
                ).first()
                if running is not None:
                    raise JobStateError(
                        int(running.id),
                        JobStatus.RUNNING.value,
                        "delete",
                        allowed_actions(JobStatus.RUNNING),
                    )
                if not conn.execute(sources.delete().where(sources.c.id == source_id)).rowcount:
                    raise NotFound("source", source_id)

        await self._store.run(_delete)

    # -- adaptive scheduling state ------------------------------------------------------------

    async def adapted_intervals(self, source_ids: Collection[int]) -> dict[int, float]:
        """The interval adaptive scheduling settled on, in seconds, per source that has one."""
        ids = sorted(set(source_ids))
        if not ids:
            return {}
        state = source_adaptive_state

        def _load() -> dict[int, float]:
            with self._store.read() as conn:
                rows = conn.execute(
                    select(state.c.source_id, state.c.current_interval).where(
                        state.c.source_id.in_(ids), state.c.current_interval.is_not(None)
                    )
                )
                return {int(source): float(interval) for source, interval in rows}

        return await self._store.run(_load)

    async def adaptive_state(self, source_id: int) -> AdaptiveState:
        """The source's adaptive state (a blank one before its first observed run)."""

        def _load() -> AdaptiveState:
            with self._store.read() as conn:
                row = (
                    conn.execute(
                        select(source_adaptive_state).where(
                            source_adaptive_state.c.source_id == source_id
                        )
                    )
                    .mappings()
                    .first()
                )
            if row is None:
                return AdaptiveState(source_id=source_id)
            return AdaptiveState(
                source_id=source_id,
                url_hashes=json.loads(row["url_hashes"]),
                last_hash=row["last_hash"],
                last_change_at=row["last_change_at"],
                unchanged_count=int(row["unchanged_count"]),
                current_interval=row["current_interval"],
            )

        return await self._store.run(_load)

    async def save_adaptive_state(self, state: AdaptiveState) -> None:
        values = {
            "last_hash": state.last_hash,
            "url_hashes": json.dumps(dict(state.url_hashes), sort_keys=True),
            "last_change_at": state.last_change_at,
            "unchanged_count": state.unchanged_count,
            "current_interval": state.current_interval,
            "updated_at": self._store.clock(),
        }

        def _save() -> None:
            stmt = dialect.insert(self._store.engine, source_adaptive_state).values(
                source_id=state.source_id, **values
            )
            stmt = stmt.on_conflict_do_update(index_elements=["source_id"], set_=values)
            with self._store.begin() as conn:
                conn.execute(stmt)

        await self._store.run(_save)
