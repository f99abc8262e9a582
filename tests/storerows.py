"""Rows of known ages written straight into a store: the arrange step of the lifecycle tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, insert, select

from harvestman.store import dialect, migrate
from harvestman.store.schema import crawled_pages, crawls, urls
from harvestman.urls import url_hash

NOW = 1_700_000_000.0
DAY = 86400.0


def open_store(url: str) -> Engine:
    engine = dialect.make_engine(url)
    migrate.upgrade(engine)
    return engine


def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """For a fixture parametrized ``sqlite`` / ``postgresql``: a SQLite file, or a PostgreSQL
    schema of its own (skipped when no server runs here)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_schema_url"))


def add_crawl(engine: Engine, name: str) -> int:
    with engine.begin() as conn:
        conn.execute(insert(crawls).values(name=name, created_at=NOW - 400 * DAY, seeds="[]"))
        return int(conn.execute(select(crawls.c.id).where(crawls.c.name == name)).scalar_one())


def add_url(
    engine: Engine, crawl_id: int, url: str, status: str, age_days: float, **values: Any
) -> None:
    """A frontier row last changed ``age_days`` before NOW."""
    changed = NOW - age_days * DAY
    row = {
        "crawl_id": crawl_id,
        "url_hash": url_hash(url),
        "url": url,
        "host": url.split("/")[2],
        "status": status,
        "priority": 2,
        "depth": 1,
        "next_crawl_at": changed + 7 * DAY,
        "attempts": 0,
        "discovered_at": changed - DAY,
        "updated_at": changed,
        "kind": "page",
    }
    row.update(values)
    with engine.begin() as conn:
        conn.execute(insert(urls).values(**row))


def add_page(engine: Engine, crawl_id: int, url: str, age_days: float, **values: Any) -> None:
    """A stored page fetched ``age_days`` before NOW."""
    row = {
        "crawl_id": crawl_id,
        "url_hash": url_hash(url),
        "url": url,
        "final_url": url,
        "host": url.split("/")[2],
        "status_code": 200,
        "content_type": "text/html",
        "title": f"title of {url}",
        "links_count": 3,
        "fetched_at": NOW - age_days * DAY,
    }
    row.update(values)
    with engine.begin() as conn:
        conn.execute(insert(crawled_pages).values(**row))


def table_rows(engine: Engine, table: Any, *columns: str) -> list[tuple[Any, ...]]:
    """Every row of ``table`` (only ``columns`` when given), in id order."""
    chosen = [table.c[name] for name in columns] if columns else list(table.c)
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(select(*chosen).order_by(table.c.id))]
