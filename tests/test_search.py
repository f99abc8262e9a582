"""Full-text search on real SQLite and PostgreSQL: ranking, filters, pages, hostile queries,
re-indexing by the database, products, and the migration."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Column, Engine, MetaData, Text, event, inspect, text

import harvestman.store.jobs.tables  # noqa: F401  (its tables join the metadata)
from harvestman.search.hits import RANK_WINDOW
from harvestman.search.query import MARK_END, MARK_START, Query, parse_query, snippet
from harvestman.store import dialect, migrate
from harvestman.store.schema import metadata
from harvestman.store.search import fts5, tsvector
from harvestman.store.search.index import include_name
from harvestman.store.search.targets import PAGES, search_pages, search_products

FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A migrated store with crawls 1 and 2 and twenty pages that match none of the tests'
    words (bm25 gives nothing to a word that half the pages hold)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'search.db'}"
    else:
        url = request.getfixturevalue("pg_schema_url")
    opened = dialect.make_engine(url)
    migrate.upgrade(opened)
    with opened.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO crawls (name, created_at, seeds) "
                "VALUES ('one', 0, '[]'), ('two', 0, '[]')"
            )
        )
    write(opened, *(page(f"filler-{i}", text=FILLER) for i in range(20)))
    yield opened
    opened.dispose()


def page(name: str, *, title: str = "", description: str = "", text: str = "",
         host: str = "a.test", crawl: int = 1, at: float = 1000.0) -> dict[str, Any]:  # fmt: skip
    return {"crawl_id": crawl, "url_hash": name, "url": f"https://{host}/{name}", "host": host,
            "fetched_at": at, "title": title or None, "description": description or None,
            "text": text or None}  # fmt: skip


def write(engine: Engine, *pages: dict[str, Any]) -> None:
    """Write pages as the crawler's batch writer does: an upsert on (crawl_id, url_hash)."""
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO crawled_pages (crawl_id, url_hash, url, final_url, host, fetched_at, "
                "links_count, title, description, text) VALUES (:crawl_id, :url_hash, :url, :url, "
                ":host, :fetched_at, 0, :title, :description, :text) "
                "ON CONFLICT (crawl_id, url_hash) DO UPDATE SET url = excluded.url, "
                "final_url = excluded.final_url, host = excluded.host, "
                "fetched_at = excluded.fetched_at, title = excluded.title, "
                "description = excluded.description, text = excluded.text"
            ),
            list(pages),
        )


def names(engine: Engine, q: str, crawl: int | None = 1, **kw: Any) -> list[str]:
    hits = search_pages(engine, crawl, q, **kw).hits
    return [hit.requested_url.rsplit("/", 1)[1] for hit in hits]


def analyze(engine: Engine) -> None:
    """PostgreSQL: what autovacuum does after many writes (search reads the vector's statistics
    to know the common words)."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            # This schema's tables only: a bare ANALYZE waits for every schema's index builds.
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(
                text("ANALYZE crawled_pages, products")
            )


def check_index(engine: Engine) -> None:
    """SQLite: FTS5's own check that the index and the rows agree."""
    if engine.dialect.name == "sqlite":
        with engine.begin() as conn:
            for fts in ("crawled_pages_fts", "products_fts"):
                conn.execute(text(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)"))


# -- ranking ----------------------------------------------------------------------------------


def test_title_outranks_description_outranks_text_and_more_mentions_outrank_fewer(
    engine: Engine,
) -> None:
    write(
        engine,
        page("text-once", text=f"zephyr {FILLER}"),
        page("title", title="Zephyr", text=FILLER),
        page("text-thrice", text=f"zephyr {FILLER} zephyr zephyr"),
        page("description", description="zephyr", text=FILLER),
    )

    result = search_pages(engine, 1, "zephyr")

    assert [h.requested_url.rsplit("/", 1)[1] for h in result.hits] == [
        "title", "description", "text-thrice", "text-once"
    ]  # fmt: skip
    assert (result.total, result.total_is_exact) == (4, True)
    assert [h.rank > 0 for h in result.hits] == [True] * 4
    assert result.hits[0].rank > result.hits[1].rank > result.hits[2].rank > result.hits[3].rank


def test_a_hit_carries_the_page_and_a_snippet_around_the_match(engine: Engine) -> None:
    words = " ".join(f"w{i}" for i in range(60))
    write(engine, page("p", title="A title", text=f"{words} the zephyr blows {words}", at=123.5))

    (hit,) = search_pages(engine, 1, "zephyr").hits

    assert (hit.url, hit.requested_url, hit.title, hit.fetched_at, hit.host) == (
        "https://a.test/p", "https://a.test/p", "A title", 123.5, "a.test"
    )  # fmt: skip
    assert hit.snippet == (
        f"… w59 the {MARK_START}zephyr{MARK_END} blows "
        + " ".join(f"w{i}" for i in range(20))
        + " …"
    )


def test_equal_ranks_list_the_newer_page_first(engine: Engine) -> None:
    write(engine, page("older", text=f"zephyr {FILLER}"))
    write(engine, page("newer", text=f"zephyr {FILLER}"))

    assert names(engine, "zephyr") == ["newer", "older"]


# -- filters ----------------------------------------------------------------------------------


def test_crawl_filter(engine: Engine) -> None:
    write(engine, page("mine", text="zephyr", crawl=1), page("theirs", text="zephyr", crawl=2))

    assert names(engine, "zephyr", 1) == ["mine"]
    assert names(engine, "zephyr", 2) == ["theirs"]
    assert sorted(names(engine, "zephyr", None)) == ["mine", "theirs"]


def test_crawl_filter_in_a_big_store_with_a_small_crawl(engine: Engine) -> None:
    # Past 1,000 pages a crawl holding few of the newest pages is looked up in the index
    # (SQLite's scope tokens), a big one is checked row by row: the same pages either way.
    write(engine, *(page(f"big-{i}", text=f"{'zephyr' * (i < 300)} {FILLER}") for i in range(1200)))
    write(engine, page("small-a", text="zephyr", crawl=2), page("small-b", text="other", crawl=2))
    analyze(engine)

    assert names(engine, "zephyr", 2) == ["small-a"]
    assert search_pages(engine, 1, "zephyr").total == 300


def test_domain_filter_takes_the_host_and_its_www_form_only(engine: Engine) -> None:
    write(
        engine,
        *(page(h, text="zephyr", host=h)
          for h in ("example.com", "www.example.com", "shop.example.com", "example.com.evil.test",
                    "www.other.test")),
    )  # fmt: skip

    assert sorted(names(engine, "zephyr", domain="example.com")) == [
        "example.com", "www.example.com"
    ]  # fmt: skip
    assert names(engine, "zephyr", domain="www.example.com") == ["www.example.com"]
    assert sorted(names(engine, "zephyr", domain=" EXAMPLE.com. ")) == [
        "example.com", "www.example.com"
    ]  # fmt: skip
    assert names(engine, "zephyr", domain="other.test") == ["www.other.test"]
    assert names(engine, "zephyr", domain="nowhere.test") == []


def test_a_host_and_its_www_form_give_their_newest_matches_together(engine: Engine) -> None:
    # 1,200 pages of another host, then 30 of the site alternating between its two forms.
    # PostgreSQL walks such a host newest first, in each form's part of the crawl's host index,
    # and merges the two (checking 30 rows beats listing the word's 1,230 from the GIN index).
    write(engine, *(page(f"bulk-{i}", text=f"zephyr {FILLER}", host="b.test") for i in range(1200)))
    write(engine, *(page(f"site-{i}", text=f"zephyr {FILLER}",
                         host="www.c.test" if i % 2 else "c.test") for i in range(30)))  # fmt: skip
    analyze(engine)
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))

    newest = search_pages(engine, 1, "zephyr", domain="c.test", window=10, limit=10)
    every = names(engine, "zephyr", domain="c.test", limit=100)

    # zephyr is in nearly every page (a stop word alone): the newest matches, unranked.
    assert [h.requested_url.rsplit("/", 1)[1] for h in newest.hits] == [
        f"site-{i}" for i in range(29, 19, -1)
    ]
    assert (newest.total, newest.total_is_exact) == (10, False)
    assert every == [f"site-{i}" for i in range(29, -1, -1)]
    if engine.dialect.name == "postgresql":
        assert any("UNION ALL" in s and "host = " in s for s in statements)


def test_a_scan_reads_every_match_when_that_costs_less_than_bounding_it() -> None:
    top = 500_000
    # A common word: the newest rows that should hold twice the matches needed.
    assert tsvector._span(0.3, 1001, top) == int(2 * 1001 / 0.3)
    # A rare one: its ~1,000 matches, wherever they are, rather than list 500,000 ids.
    assert tsvector._span(0.002, 1001, top) == top
    assert tsvector._span(0.0, 1001, top) == top


def test_date_filter_is_since_inclusive_until_exclusive(engine: Engine) -> None:
    write(engine, *(page(f"at-{t}", text="zephyr", at=float(t)) for t in (100, 200, 300)))

    assert sorted(names(engine, "zephyr", since=200.0)) == ["at-200", "at-300"]
    assert sorted(names(engine, "zephyr", until=300.0)) == ["at-100", "at-200"]
    assert names(engine, "zephyr", since=150.0, until=250.0) == ["at-200"]


def test_filters_combine(engine: Engine) -> None:
    write(
        engine,
        page("hit", text="zephyr", host="b.test", at=500.0),
        page("early", text="zephyr", host="b.test", at=100.0),
        page("elsewhere", text="zephyr", host="c.test", at=500.0),
        page("other-crawl", text="zephyr", host="b.test", at=500.0, crawl=2),
    )

    assert names(engine, "zephyr", 1, domain="b.test", since=400.0) == ["hit"]


# -- pagination and the rank window ------------------------------------------------------------


def ranked_five(engine: Engine) -> None:
    """best..worst inserted first to last: page pN mentions the word N times."""
    write(engine, *(page(f"p{n}", text=f"{'zephyr ' * n}{FILLER}") for n in (5, 4, 3, 2, 1)))


def test_pages_of_results(engine: Engine) -> None:
    ranked_five(engine)

    pages = [search_pages(engine, 1, "zephyr", limit=2, offset=o) for o in (0, 2, 4, 10)]

    assert [[h.requested_url[-2:] for h in r.hits] for r in pages] == [
        ["p5", "p4"], ["p3", "p2"], ["p1"], []
    ]  # fmt: skip
    assert {(r.total, r.total_is_exact) for r in pages} == {(5, True)}


def test_beyond_the_window_the_newest_matches_are_ranked_and_the_total_is_a_bound(
    engine: Engine,
) -> None:
    ranked_five(engine)

    first = search_pages(engine, 1, "zephyr", window=3)
    tail = search_pages(engine, 1, "zephyr", window=3, offset=2, limit=10)
    past = search_pages(engine, 1, "zephyr", window=3, offset=3)

    assert [h.requested_url[-2:] for h in first.hits] == ["p3", "p2", "p1"]
    assert (first.total, first.total_is_exact) == (3, False)
    assert [h.requested_url[-2:] for h in tail.hits] == ["p1"]
    assert (past.hits, past.total, past.total_is_exact) == ([], 3, False)


@pytest.mark.parametrize(("limit", "offset"), [(0, 0), (101, 0), (20, -1)])
def test_limits_outside_the_contract_are_refused(engine: Engine, limit: int, offset: int) -> None:
    with pytest.raises(ValueError, match=r"limit|offset"):
        search_pages(engine, 1, "zephyr", limit=limit, offset=offset)


def test_a_word_in_most_pages_is_a_stop_word_left_out_of_a_query_that_has_others(
    engine: Engine,
) -> None:
    # 1,200 pages (a store needs 1,000 before it has stop words): "common" in 700 of them.
    write(
        engine,
        *(page(f"bulk-{i}", text=f"{'common ' if i < 700 else ''}{FILLER}") for i in range(1180)),
    )
    write(engine, page("rare-only", text="zephyr"), page("both", text="zephyr common common"))
    analyze(engine)

    result = search_pages(engine, 1, "common zephyr")

    # Without the stop word the page lacking it matches too; bm25 gave "common" no weight.
    assert {h.requested_url.rsplit("/", 1)[1]: h.snippet for h in result.hits} == {
        "rare-only": f"{MARK_START}zephyr{MARK_END}",
        "both": f"{MARK_START}zephyr{MARK_END} common common",  # the stop word is not marked
    }
    assert result.ignored == ("common",)
    assert names(engine, "zephyr OR common") == names(engine, "zephyr")  # from an OR too


def test_a_word_the_statistics_do_not_list_is_estimated_rarer_than_those_they_do(
    pg_schema_url: str,
) -> None:
    # PostgreSQL picks its scan from these shares: a share of 0 left the scan unbounded, and a
    # word just short of the statistics' list then listed all its rows from the GIN index.
    engine = dialect.make_engine(pg_schema_url)
    migrate.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO crawls (name, created_at, seeds) VALUES ('one', 0, '[]')"))
    write(engine, *(page(f"bulk-{i}", text=f"{'common ' if i < 700 else ''}{FILLER}")
                    for i in range(1200)))  # fmt: skip
    analyze(engine)

    with engine.connect() as conn:
        found = tsvector.estimate(conn, PAGES, ("common", "unlisted"), 0, 1000)

    assert found is not None
    assert 0.5 < found.words["common"] < 0.7
    assert 0 < found.words["unlisted"] < found.words["common"]
    assert found.shares["unlisted"] == found.words["unlisted"]
    engine.dispose()


def test_a_query_of_stop_words_alone_lists_the_newest_matches_unranked(engine: Engine) -> None:
    write(
        engine,
        *(page(f"bulk-{i:04}", text=f"{'common ' * (1 + i % 3) if i < 700 else ''}{FILLER}")
          for i in range(1200)),
    )  # fmt: skip
    analyze(engine)

    result = search_pages(engine, 1, "common", limit=3)

    assert [h.requested_url.rsplit("/", 1)[1] for h in result.hits] == [
        "bulk-0699", "bulk-0698", "bulk-0697"
    ]  # fmt: skip
    assert [h.rank for h in result.hits] == [0.0, 0.0, 0.0]
    assert (result.total, result.total_is_exact, result.ignored) == (700, True, ())


# -- the query language and hostile input -----------------------------------------------------


def test_phrases_or_and_exclusion(engine: Engine) -> None:
    write(
        engine,
        page("pump", text="a heat pump for the house"),
        page("apart", text="heat the water, then pump it"),
        page("solar", text="solar panels on the roof"),
        page("diesel", text="solar backup with diesel"),
    )

    assert names(engine, '"heat pump"') == ["pump"]
    assert sorted(names(engine, "heat pump")) == ["apart", "pump"]
    assert sorted(names(engine, "roof OR diesel")) == ["diesel", "solar"]
    assert names(engine, "solar -diesel") == ["solar"]
    assert names(engine, 'solar -"with diesel"') == ["solar"]
    assert names(engine, "-solar") == []  # nothing required: nothing found


HOSTILE = [
    page("and", text="salt and pepper"),
    page("near", text="near the sea"),
    page("quote", title='He said "hello"'),
    page("unicode", text="Die Größe des Gebäudes. Ελληνικά κείμενα. 東京"),
    page("email", text="send an e-mail to us; don't wait"),
    page("star", text="five * stars"),
]


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ('"', []),
        ('""', []),
        ("*", []),
        ("   ", []),
        ("!!! ??? ---", []),
        ("AND", ["and"]),
        ("and OR", ["and"]),
        ("OR", []),
        ("NOT", []),
        ("NEAR(", ["near"]),
        ("near(sea, 2)", []),
        ("sea*", ["near"]),
        ('hello"', ["quote"]),
        ('"hello', ["quote"]),
        ("hello^", ["quote"]),
        ("title:hello", []),  # not a column filter
        ("{title}: hello", []),
        ("größe", ["unicode"]),
        ("GRÖSSE", []),
        ("ΕΛΛΗΝΙΚΆ", ["unicode"]),
        ("東京", ["unicode"]),
        ("e-mail", ["email"]),
        ("don't", ["email"]),
        ("five * stars", ["star"]),
        ("'; DROP TABLE crawled_pages; --", []),
        ("x" * 10_000, []),
        ("salt\x00pepper", ["and"]),  # a control character separates words
        ("pepper \ud800", ["and"]),
    ],
)
def test_hostile_queries_match_words_and_never_fail(
    engine: Engine, q: str, expected: list[str]
) -> None:
    write(engine, *HOSTILE)

    assert names(engine, q) == expected
    assert names(engine, "pepper") == ["and"]  # the store is intact


@pytest.mark.parametrize(
    ("q", "parsed"),
    [
        ("solar wind", Query((("solar",), ("wind",)))),
        ('"heat pump" OR boiler -"gas tank" -oil',
         Query((("heat pump", "boiler"),), ("gas tank", "oil"))),
        ("OR solar OR", Query((("solar",),))),
        ("a OR -b", Query((("a",),), ("b",))),
        ('AND NEAR( * "x', Query((("AND",), ("NEAR",), ("x",)))),
        ("!!! -- \"\" ''", Query(())),
        ("-", Query(())),
        ("tab\tand\nnewline", Query((("tab",), ("and",), ("newline",)))),
        ("a\x00b", Query((("a",), ("b",)))),
        (" ".join(f"w{i}" for i in range(40)), Query(tuple((f"w{i}",) for i in range(16)))),
    ],
)  # fmt: skip
def test_parse_query(q: str, parsed: Query) -> None:
    assert parse_query(q) == parsed


@pytest.mark.parametrize(
    ("text_", "words", "expected"),
    [
        (None, ("a",), ""),
        ("short text", (), "short text"),
        ("one two three four five six seven", ("four",), "… two three \x02four\x03 five six …"),
        ("one two", ("zzz",), "one two"),
        ("Alpha beta ALPHA", ("alpha",), "\x02Alpha\x03 beta \x02ALPHA\x03"),
        ("x alphabet alpha", ("alpha",), "x alphabet \x02alpha\x03"),
        # The densest cluster wins over the first mention.
        ("a " + "pad " * 40 + "b c a", ("a", "b", "c"), "… pad pad \x02b\x03 \x02c\x03 \x02a\x03"),
    ],
)
def test_snippet(text_: str | None, words: tuple[str, ...], expected: str) -> None:
    assert snippet(text_, words, max_words=5) == expected


# -- the index follows the rows ----------------------------------------------------------------


def test_a_recrawl_reindexes_and_a_delete_unindexes(engine: Engine) -> None:
    write(engine, page("p", title="First", text="alpha words", host="old.test"))
    assert names(engine, "alpha") == ["p"]

    write(engine, page("p", title="Second", text="beta words", host="new.test"))
    assert names(engine, "alpha") == []
    assert names(engine, "first") == []
    assert names(engine, "beta") == ["p"]
    assert names(engine, "beta", domain="new.test") == ["p"]
    assert names(engine, "beta", domain="old.test") == []

    write(engine, page("p", title="Second", text="beta words", host="new.test"))  # unchanged
    assert names(engine, "beta") == ["p"]
    check_index(engine)

    with engine.begin() as conn:
        conn.execute(text("DELETE FROM crawled_pages WHERE url_hash = 'p'"))
    assert names(engine, "beta") == []
    check_index(engine)


def test_deleting_a_crawl_unindexes_its_pages(engine: Engine) -> None:
    write(engine, page("gone", text="zephyr", crawl=2), page("kept", text="zephyr", crawl=1))

    with engine.begin() as conn:
        conn.execute(text("DELETE FROM crawls WHERE id = 2"))

    assert names(engine, "zephyr", None) == ["kept"]
    check_index(engine)


# -- products ---------------------------------------------------------------------------------


def product(name: str, *, price: str | None = None, currency: str | None = "EUR",
            availability: str | None = "in_stock", brand: str | None = None,
            description: str | None = None, host: str = "shop.test", crawl: int = 1,
            position: int = 0) -> dict[str, Any]:  # fmt: skip
    return {"crawl_id": crawl, "url_hash": name, "position": position,
            "page_url": f"https://{host}/{name}", "product_url": None, "name": name,
            "description": description, "price": None if price is None else Decimal(price),
            "currency": currency, "availability": availability, "brand": brand,
            "category": None, "source": "json-ld", "parser": "builtin@1",
            "content_hash": name + (price or ""), "created_at": 5.0, "updated_at": 6.0}  # fmt: skip


def write_products(engine: Engine, *rows: dict[str, Any]) -> None:
    columns = list(rows[0])
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns[3:])
    with engine.begin() as conn:
        if engine.dialect.name == "sqlite":
            for row in rows:
                row["price"] = None if row["price"] is None else float(row["price"])
        conn.execute(
            text(
                f"INSERT INTO products ({', '.join(columns)}) "
                f"VALUES ({', '.join(':' + c for c in columns)}) "
                f"ON CONFLICT (crawl_id, url_hash, position) DO UPDATE SET {updates}"
            ),
            list(rows),
        )


def product_names(engine: Engine, q: str, crawl: int | None = 1, **kw: Any) -> list[str]:
    return [hit.name or "" for hit in search_products(engine, crawl, q, **kw).hits]


def test_products_filter_by_price_availability_currency_and_domain(engine: Engine) -> None:
    write_products(
        engine,
        product("kettle cheap", price="9.99"),
        product("kettle mid", price="25.00", availability="out_of_stock"),
        product("kettle dear", price="120.50", availability="preorder"),
        product("kettle dollars", price="20.00", currency="USD", host="www.us.test"),
        product("kettle unpriced", availability=None, currency=None),
        product("kettle elsewhere", price="15.00", crawl=2),
    )

    assert sorted(product_names(engine, "kettle", min_price=Decimal("10"),
                                max_price=Decimal("120.50"))) == [
        "kettle dear", "kettle dollars", "kettle mid"
    ]  # fmt: skip
    assert sorted(product_names(engine, "kettle", currency="eur", max_price=Decimal("25"))) == [
        "kettle cheap", "kettle mid"
    ]  # fmt: skip
    assert product_names(engine, "kettle", availability="preorder") == ["kettle dear"]
    assert sorted(product_names(engine, "kettle", availability=["in_stock", "preorder"])) == [
        "kettle cheap", "kettle dear", "kettle dollars"
    ]  # fmt: skip
    assert product_names(engine, "kettle", domain="us.test") == ["kettle dollars"]
    assert product_names(engine, "kettle", crawl=2) == ["kettle elsewhere"]
    (hit,) = search_products(engine, 1, "dear").hits
    assert (hit.price, hit.currency, hit.availability, hit.url, hit.host, hit.updated_at) == (
        Decimal("120.5"), "EUR", "preorder", "https://shop.test/kettle dear", "shop.test", 6.0
    )  # fmt: skip


def test_products_rank_name_over_brand_over_description_and_reindex(engine: Engine) -> None:
    write_products(
        engine,
        *(product(f"filler {i}", description=FILLER, position=i) for i in range(20)),
        product("plain", description="made by zephyr works"),
        product("zephyr kettle"),
        product("branded", brand="Zephyr"),
    )
    assert product_names(engine, "zephyr") == ["zephyr kettle", "branded", "plain"]

    write_products(engine, product("plain", description="made elsewhere"))

    assert product_names(engine, "zephyr") == ["zephyr kettle", "branded"]
    check_index(engine)


# -- the migration ----------------------------------------------------------------------------


def test_the_migrated_schema_matches_the_models_but_for_the_search_index(engine: Engine) -> None:
    expected = MetaData(naming_convention=metadata.naming_convention)
    for table in metadata.sorted_tables:
        copied = table.to_metadata(expected)
        if table.name == "crawled_pages" and "text" not in table.c:
            copied.append_column(Column("text", Text))  # the lead adds it to schema.py

    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_name": include_name})
        assert compare_metadata(context, expected) == []


def test_downgrade_removes_the_index_and_upgrade_indexes_existing_pages(engine: Engine) -> None:
    migrate.downgrade(engine, "0005")
    tables = set(inspect(engine).get_table_names())
    assert not {t for t in tables if "_fts" in t}
    assert {c["name"] for c in inspect(engine).get_columns("crawled_pages")} >= {"title"}
    assert not {"text", "search_vector"} & {
        c["name"] for c in inspect(engine).get_columns("crawled_pages")
    }
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO crawled_pages (crawl_id, url_hash, url, final_url, host, fetched_at, "
                "links_count, title) VALUES (1, 'old', 'https://a.test/old', 'https://a.test/old', "
                "'a.test', 1.0, 0, 'Zephyr before search')"
            )
        )

    migrate.upgrade(engine)

    assert names(engine, "zephyr") == ["old"]
    check_index(engine)


def _vector_storage(engine: Engine) -> list[tuple[str, str, list[str] | None]]:
    """PostgreSQL: each search_vector's compression and its GIN index's options."""
    with engine.connect() as conn:
        return [
            tuple(row)
            for row in conn.execute(
                text(
                    "SELECT c.relname, a.attcompression::text, i.reloptions FROM pg_attribute AS a "
                    "JOIN pg_class AS c ON c.oid = a.attrelid "
                    "JOIN pg_class AS i ON i.relname = 'ix_' || c.relname || '_search_vector' "
                    "AND i.relnamespace = c.relnamespace "
                    "WHERE a.attname = 'search_vector' AND c.relnamespace = "
                    "(SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
                    "ORDER BY c.relname"
                )
            )
        ]


def test_migration_0008_compresses_vectors_with_lz4_and_bounds_the_pending_list(
    engine: Engine,
) -> None:
    if engine.dialect.name == "sqlite":
        migrate.downgrade(engine, "0007")
        migrate.upgrade(engine)
        assert names(engine, "zephyr") == []  # nothing to change there; the index still answers
        check_index(engine)
        return
    assert _vector_storage(engine) == [
        ("crawled_pages", "l", ["gin_pending_list_limit=1024"]),
        ("products", "l", ["gin_pending_list_limit=1024"]),
    ]
    write(engine, page("lz4", text="zephyr " * 500))

    migrate.downgrade(engine, "0007")
    assert _vector_storage(engine) == [("crawled_pages", "", None), ("products", "", None)]
    assert "rank_vector" not in {c["name"] for c in inspect(engine).get_columns("crawled_pages")}
    with engine.connect() as conn:  # a vector compressed either way still reads
        found = "SELECT url_hash FROM crawled_pages WHERE search_vector @@ 'zephyr'::tsquery"
        assert conn.execute(text(found)).scalars().all() == ["lz4"]

    migrate.upgrade(engine)
    assert [row[1] for row in _vector_storage(engine)] == ["l", "l"]
    with engine.connect() as conn:
        # The existing page got its short vector to rank by: title, description, text's start.
        ranked = conn.execute(
            text("SELECT rank_vector::text FROM crawled_pages WHERE url_hash = 'lz4'")
        )
        assert ranked.scalar_one().startswith("'zephyr':1,2,3,")
    assert names(engine, "zephyr") == ["lz4"]


# The generated column of migration 0008, which migration 0028 made the trigger's to set.
_RANK_VECTOR_0008 = " || ".join(
    f"setweight(to_tsvector('simple'::regconfig, left(coalesce({name}, ''), 1000)), '{weight}')"
    for name, weight in (("title", "A"), ("description", "B"), ("text", "D"))
)


def _rank_vectors(engine: Engine) -> dict[str, tuple[str, bool]]:
    """PostgreSQL: each page's rank vector, and whether it is the one 0008's column computed."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                f"SELECT url_hash, rank_vector::text, rank_vector = ({_RANK_VECTOR_0008}) "
                "FROM crawled_pages ORDER BY url_hash"
            )
        )
        return {str(name): (str(vector), bool(same)) for name, vector, same in rows}


def _rank_vector_generated(engine: Engine) -> bool:
    with engine.connect() as conn:
        generated = conn.execute(
            text(
                "SELECT is_generated FROM information_schema.columns WHERE table_schema = "
                "current_schema() AND table_name = 'crawled_pages' AND column_name = 'rank_vector'"
            )
        )
        return generated.scalar_one() == "ALWAYS"


def test_the_rank_vector_is_the_search_vector_cut_to_its_first_1000_characters(
    engine: Engine,
) -> None:
    if engine.dialect.name == "sqlite":
        pytest.skip("FTS5 ranks from its own index")
    # The trigger sets it (from the tokens it already has), the table no longer computes it.
    assert _rank_vector_generated(engine) is False
    write(
        engine,
        page("short", title="Zephyr kettle", description="steel, 1.7 l"),
        page("long", title="Zephyr", text="kettle " * 150 + "zephyr " * 150),  # 2,100 chars
    )
    ranks = _rank_vectors(engine)
    assert ranks["short"] == ("'1.7':4B 'kettle':2A 'l':5B 'steel':3B 'zephyr':1A", True)
    vector, same = ranks["long"]
    assert same
    assert "'zephyr':1A" in vector
    assert "'kettle':2,3," in vector
    assert ":151" not in vector  # the text's first 1,000 characters: 142 words and a half
    assert names(engine, "zephyr") == ["short", "long"]

    # A re-crawl that changes a field moves the vector; one that changes none keeps it.
    write(engine, page("short", title="Zephyr teapot", description="steel, 1.7 l"))
    with engine.begin() as conn:
        conn.execute(text("UPDATE crawled_pages SET status_code = 200 WHERE url_hash = 'long'"))
    after = _rank_vectors(engine)
    assert after["short"] == ("'1.7':4B 'l':5B 'steel':3B 'teapot':2A 'zephyr':1A", True)
    assert after["long"] == ranks["long"]

    # Down to the generated column and back up: the same vectors.
    migrate.downgrade(engine, "0027")
    assert _rank_vector_generated(engine) is True
    assert _rank_vectors(engine) == after
    migrate.upgrade(engine)
    assert _rank_vector_generated(engine) is False
    write(engine, page("new", title="Zephyr", text="word " * 400))
    assert _rank_vectors(engine) == after | {"new": (_rank_vectors(engine)["new"][0], True)}


def test_a_phrase_with_too_many_rows_to_check_is_searched_among_the_newest(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every page holds the three words and their two pairs; only the ten oldest and the ten
    # newest hold the phrase.
    write(
        engine,
        *(page(f"p{i}", text="alpha beta gamma" if i < 10 or i >= 1190
               else "alpha beta delta beta gamma")
          for i in range(1200)),
    )  # fmt: skip
    analyze(engine)

    everything = search_pages(engine, 1, '"alpha beta gamma"')
    assert (everything.total, everything.total_is_exact) == (20, True)

    # Each store checks the positions in each row holding the phrase's words (PostgreSQL: its
    # pairs); a budget of 100 rows reaches the newest.
    monkeypatch.setattr(tsvector, "MAX_PHRASE_CHECKS", 100)
    monkeypatch.setattr(fts5, "MAX_PHRASE_CHECKS", 100)
    newest = search_pages(engine, 1, '"alpha beta gamma"', limit=100)
    assert (newest.total, newest.total_is_exact) == (10, False)
    assert sorted(h.requested_url.rsplit("/", 1)[1] for h in newest.hits) == sorted(
        f"p{i}" for i in range(1190, 1200)
    )
    assert search_pages(engine, 1, '"alpha beta gamma" OR zzz', limit=100).total == 10

    if engine.dialect.name == "postgresql":
        # A phrase of two words is its pair: one index lookup, no row to check.
        pair = search_pages(engine, 1, '"alpha beta"', limit=100)
        assert (pair.total, pair.total_is_exact) == (RANK_WINDOW, False)
        gamma = search_pages(engine, 1, '"beta gamma" -delta', limit=100)
        assert (gamma.total, gamma.total_is_exact) == (20, True)


def test_phrases_match_as_the_parser_splits_their_words(engine: Engine) -> None:
    write(
        engine,
        page("joined", title="Solar heat pump", description="Send e-mail now", text="don't stop"),
        page("apart", title="heat solar pump", description="mail e now", text="stop don t"),
    )

    assert names(engine, '"heat pump"') == ["joined"]
    assert names(engine, '"e-mail"') == ["joined"]
    assert names(engine, '"send e-mail now"') == ["joined"]
    assert sorted(names(engine, '"don\'t stop" OR "solar pump"')) == ["apart", "joined"]
    assert names(engine, '"mail e"') == ["apart"]
    assert names(engine, '"heat solar" -"e now"') == []
    assert sorted(names(engine, '"stop" "heat"')) == ["apart", "joined"]


def test_migration_0011_gives_existing_pages_their_pairs_and_keeps_unchanged_ones(
    engine: Engine,
) -> None:
    migrate.downgrade(engine, "0010")
    write(engine, page("old", title="heat pump"))
    migrate.upgrade(engine)
    assert names(engine, '"heat pump"') == ["old"]
    if engine.dialect.name != "postgresql":
        return
    with engine.begin() as conn:
        vectors = (
            "SELECT search_vector::text, pair_vector::text FROM crawled_pages "
            "WHERE url_hash = 'old'"
        )
        assert conn.execute(text(vectors)).one() == ("'heat':1A 'pump':2A", "'heat pump'")
        # A writer that sets other columns leaves the vectors as they were, and one that
        # changes the text has them recomputed.
        conn.execute(text("UPDATE crawled_pages SET links_count = 5 WHERE url_hash = 'old'"))
        assert conn.execute(text(vectors)).one() == ("'heat':1A 'pump':2A", "'heat pump'")
        conn.execute(text("UPDATE crawled_pages SET title = 'pump heat' WHERE url_hash = 'old'"))
        assert conn.execute(text(vectors)).one() == ("'heat':2A 'pump':1A", "'pump heat'")
