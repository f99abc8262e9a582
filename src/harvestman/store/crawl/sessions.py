"""Sessions: a crawl's cookies and the proxies' health, saved and loaded whole.

Proxy rows hold the URL with its password masked and the password as an opaque token
(``secret``): the caller (crawl/session.py, credentials.py) encrypts and decrypts; the store
never sees a clear password.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import bindparam, select

from harvestman.store import dialect
from harvestman.store.connection import StoreConnection
from harvestman.store.schema import cookies, proxies


class SessionRepository(StoreConnection):
    """The ``cookies`` and ``proxies`` tables."""

    async def load_cookies(self, crawl_id: int) -> list[dict[str, Any]]:
        def _load() -> list[dict[str, Any]]:
            with self.engine.connect() as conn:
                rows = conn.execute(select(cookies.c.data).where(cookies.c.crawl_id == crawl_id))
                return [json.loads(data) for (data,) in rows]

        return await self._run(_load)

    async def save_cookies(self, crawl_id: int, rows: Sequence[dict[str, Any]]) -> None:
        """Replace a crawl's cookies with ``rows`` (cookies.dump_cookies) in one transaction."""

        def _save() -> None:
            with self._begin() as conn:
                conn.execute(cookies.delete().where(cookies.c.crawl_id == crawl_id))
                if rows:
                    conn.execute(
                        cookies.insert(),
                        [
                            {
                                "crawl_id": crawl_id,
                                "domain": row["domain"],
                                "path": row["path"],
                                "name": row["name"],
                                "data": json.dumps(row),
                            }
                            for row in rows
                        ],
                    )

        await self._run(_save)

    async def load_proxies(self) -> list[dict[str, Any]]:
        def _load() -> list[dict[str, Any]]:
            with self.engine.connect() as conn:
                return [dict(row) for row in conn.execute(select(proxies)).mappings()]

        return await self._run(_load)

    def proxy_list(self) -> list[dict[str, Any]]:
        """Every proxy row without its secret, by URL (synchronous: the CLI and the API run it
        off the event loop). ``url`` is masked: safe to show."""
        columns = [c for c in proxies.columns if c.name != "secret"]
        with self.engine.connect() as conn:
            rows = conn.execute(select(*columns).order_by(proxies.c.url)).mappings()
            return [dict(row) for row in rows]

    def reencrypt_proxy_secrets(self, transform: Callable[[str], str]) -> int:
        """Replace every stored secret by ``transform(secret)`` in one transaction; returns how
        many. If ``transform`` raises, nothing changes (the transaction rolls back)."""
        with self._begin() as conn:
            rows = conn.execute(
                select(proxies.c.id, proxies.c.secret)
                .where(proxies.c.secret.is_not(None))
                .order_by(proxies.c.id)
                .with_for_update()
            ).all()
            changed = [{"row_id": row_id, "new": transform(secret)} for row_id, secret in rows]
            if changed:
                conn.execute(
                    proxies.update()
                    .where(proxies.c.id == bindparam("row_id"))
                    .values(secret=bindparam("new")),
                    changed,
                )
            return len(changed)

    async def save_proxies(self, health: Sequence[dict[str, Any]], now: float) -> None:
        """Upsert each proxy's health (fields of proxies.ProxyHealth, ``url`` masked, and
        ``secret``: the password's token or None)."""

        def _save() -> None:
            if not health:
                return
            stmt = dialect.insert(self.engine, proxies)
            columns = [c.name for c in proxies.columns if c.name not in ("id", "url")]
            stmt = stmt.on_conflict_do_update(
                index_elements=["url"], set_={name: stmt.excluded[name] for name in columns}
            )
            with self._begin() as conn:
                conn.execute(stmt, [{**row, "updated_at": now} for row in health])

        await self._run(_save)
