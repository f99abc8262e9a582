"""``harvestman products`` and ``harvestman export --format es --what products`` on a crawl of
the local shop (tests/fixtures/products), on SQLite and PostgreSQL, run as a user runs them."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from conftest import SettingsFactory
from harvestman.store import SqlStore, migrate
from harvestman.store.schema import products
from storerows import store_url
from support.cli import invoke_cli
from support.crawling import crawl
from test_products_crawl import EXPECTED, shop  # noqa: F401  (the fixture)


@pytest.fixture(params=["sqlite", "postgresql"])
async def crawled(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    shop: int,  # noqa: F811  (test_products_crawl's fixture)
    make_settings: SettingsFactory,
) -> str:
    url = store_url(request, tmp_path)
    settings = make_settings(database_url=url, discovery_sitemaps=False, crawl_max_depth=1)
    await crawl(settings, f"http://127.0.0.1:{shop}/")
    return url


def stored(database_url: str) -> dict[int, dict[str, Any]]:
    store = SqlStore(database_url)
    try:
        with store.engine.connect() as conn:
            return {row["id"]: dict(row) for row in conn.execute(select(products)).mappings()}
    finally:
        store.dispose()


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("empty") / "store.db"
    store = SqlStore(f"sqlite:///{path}")
    try:
        migrate.upgrade(store.engine)
    finally:
        store.dispose()
    return path


# What each mapping type takes (a null takes any).
TYPES: dict[str, tuple[type, ...]] = {
    "long": (int,), "integer": (int,), "float": (float, int), "scaled_float": (float, int),
    "keyword": (str,), "text": (str,), "date": (str,),
}  # fmt: skip


async def test_the_es_export_is_bulk_pairs_whose_fields_the_mapping_types(
    crawled: str,
    tmp_path: Path,
    shop: int,  # noqa: F811
) -> None:
    out = tmp_path / "products.ndjson"
    code, _, err = await invoke_cli(
        "export", "--format", "es", "--what", "products", "-o", str(out), "--database-url", crawled
    )
    assert code == 0, err
    mapping = json.loads((tmp_path / "products.mapping.json").read_text())
    assert mapping["dynamic"] == "strict"
    properties = mapping["properties"]

    lines = out.read_text().splitlines()
    assert len(lines) % 2 == 0
    pairs = [(json.loads(a), json.loads(d)) for a, d in zip(lines[::2], lines[1::2], strict=True)]
    rows = stored(crawled)
    assert len(pairs) == len(rows) == len(EXPECTED)
    ids = [action["index"]["_id"] for action, _ in pairs]
    assert len(set(ids)) == len(ids)
    for action, doc in pairs:
        assert set(action) == {"index"}
        assert action["index"]["_index"] == "harvestman-products"
        assert set(doc) == set(properties), set(doc) ^ set(properties)
        for name, value in doc.items():
            kind = properties[name]["type"]
            values = value if isinstance(value, list) else [value]
            for one in values:
                assert one is None or (
                    isinstance(one, TYPES[kind]) and not isinstance(one, bool)
                ), (name, kind, one)
                if kind == "date" and one is not None:
                    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", one)
        row = rows[doc["product_id"]]
        assert action["index"]["_id"] == f"{row['crawl_id']}-{row['url_hash']}-{row['position']}"
        assert doc["domain"] == f"127.0.0.1:{shop}"
        assert datetime.fromisoformat(doc["first_seen_at"]).timestamp() == pytest.approx(
            row["created_at"], abs=0.001
        )
        price = EXPECTED[(row["page_url"].split(str(shop))[1], row["name"])]["price"]
        assert doc["price"] == (None if price is None else float(price))
        assert doc["name"] == row["name"]


async def test_products_prints_the_query_as_json_lines_and_pages_with_after(
    crawled: str,
) -> None:
    args = ("products", "--database-url", crawled, "--json", "--sort", "price", "--order", "asc")
    code, out, err = await invoke_cli(*args, "--currency", "gbp", "--limit", "1")
    assert code == 0, err
    first = [json.loads(line) for line in out.splitlines()]
    after = re.search(r"--after '([^']+)'", err)
    assert after is not None
    code, out, err = await invoke_cli(*args, "--currency", "GBP", "--after", after.group(1))
    assert code == 0, err
    rest = [json.loads(line) for line in out.splitlines()]
    assert "--after" not in err

    assert [(p["name"], p["offers"][0]["price"]) for p in first + rest] == [
        ("Upside Down", "12.5"), ("Backwards Range", "30"),
    ]  # fmt: skip

    code, out, err = await invoke_cli("products", "--database-url", crawled, "--brand", "acme")
    assert code == 0, err
    assert "Executive Anvil" in out
    assert "Walnut" not in out


@pytest.mark.parametrize(
    "args",
    [
        ("--currency", "EURO"),
        ("--availability", "sold"),
        ("--sort", "name"),
        ("--min-price", "5", "--max-price", "4"),
        ("--brand", "b" * 201),
        ("--after", "nonsense"),
        ("--limit", "1001"),
    ],
)
async def test_bad_options_are_usage_errors(empty_store: Path, args: tuple[str, ...]) -> None:
    code, _, err = await invoke_cli("products", "--db", str(empty_store), *args)

    assert code == 2, err
