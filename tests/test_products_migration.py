"""Migration 0015 on SQLite and PostgreSQL: products stored before it get their page's domain
(the domain filter's column), and it goes down and up again to the models' schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import insert, inspect, select, text

from harvestman.store import SqlStore, migrate
from harvestman.store.schema import crawls
from storerows import store_url
from test_store import _schema_differences


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    opened = SqlStore(store_url(request, tmp_path))
    yield opened
    opened.dispose()


def test_older_products_get_their_domain_and_the_migration_goes_down_and_up(
    store: SqlStore,
) -> None:
    migrate.upgrade(store.engine, "0014")
    pages = [
        "https://www.Shop.Example/p/1", "http://user@127.0.0.1:8089/p/2", "not a url",
    ]  # fmt: skip
    with store.engine.begin() as conn:
        conn.execute(insert(crawls).values(name="old", created_at=0.0, seeds="[]"))
        for n, page in enumerate(pages):
            conn.execute(
                text(
                    "INSERT INTO products (crawl_id, url_hash, position, page_url, source, parser,"
                    " content_hash, created_at, updated_at) VALUES (1, :h, 0, :page, 'json-ld',"
                    " 'harvestman.products@2', :h, 0, 0)"
                ),
                {"h": f"{n:064x}", "page": page},
            )

    migrate.upgrade(store.engine)

    with store.engine.connect() as conn:
        domains = conn.execute(text("SELECT page_url, domain FROM products ORDER BY id")).all()
    assert [tuple(row) for row in domains] == [
        ("https://www.Shop.Example/p/1", "shop.example"),
        ("http://user@127.0.0.1:8089/p/2", "127.0.0.1:8089"),
        ("not a url", None),
    ]
    migrate.downgrade(store.engine, "0014")
    with store.engine.connect() as conn:
        assert "product_history" not in inspect(conn).get_table_names()
        assert "domain" not in {c["name"] for c in inspect(conn).get_columns("products")}
        assert "recrawl_unchanged" not in {c["name"] for c in inspect(conn).get_columns("urls")}
        assert conn.execute(select(crawls.c.name)).scalars().all() == ["old"]
        assert conn.execute(text("SELECT count(*) FROM products")).scalar_one() == 3
    migrate.upgrade(store.engine)
    assert _schema_differences(store.engine) == []
