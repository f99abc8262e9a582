"""Site-specific parser plugins: loading (settings, entry points), running, failures, stats."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import astuple
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from harvestman.extract.plugins import (
    LoadFailure,
    ParserRegistry,
    ParserRun,
    ParseStats,
    Record,
    StatsKey,
)
from harvestman.parse import Page, parse_html
from siteparsers import (
    CourierParser,
    RaisingParser,
    SetDataParser,
    ShopPriceParser,
    write_distribution,
)

FIXTURES = Path(__file__).parent / "fixtures" / "maintext"
ARTICLE_URL = "https://www.riversidecourier.example/environment/2024/nov/18/thames-barrier"
NEWS_HTML = (FIXTURES / "news_article.html").read_text("utf-8")


@pytest.fixture
def fresh_modules() -> Iterator[None]:
    """Modules a test imports from its tmp_path are forgotten afterwards."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if not name.startswith(("harvestman", "siteparsers")):
            del sys.modules[name]


def page_of(html: str, url: str) -> Page:
    return parse_html(html, url)


def test_a_parser_registered_through_settings_parses_its_site() -> None:
    registry = ParserRegistry.load(["siteparsers:CourierParser"], entry_points=False)

    result = registry.parse(NEWS_HTML.encode(), ARTICLE_URL, page_of(NEWS_HTML, ARTICLE_URL))

    assert [type(parser) for parser in registry.parsers] == [CourierParser]
    assert registry.failures == []
    assert result.failures == []
    assert result.records == [
        Record(
            "article",
            {
                "headline": "River Thames barrier to close 40 times this winter, agency warns",
                "author": "Hannah Okafor",
                "paragraphs": 7,
                "first": "The Thames Barrier is expected to close around 40 times this winter, "
                "more than in any season since it opened in 1982, the Environment Agency has "
                "said.",
                "title": "River Thames barrier to close 40 times this winter, agency warns | "
                "The Riverside Courier",
            },
            parser="courier-article",
            parser_version="1.2.0",
        )
    ]
    assert [(run.parser, run.version, run.outcome, run.records) for run in result.runs] == [
        ("courier-article", "1.2.0", "ok", 1)
    ]


def test_a_parser_registered_through_an_entry_point_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_modules: None
) -> None:
    write_distribution(
        tmp_path,
        "acme_parsers",
        """\
        [harvestman.parsers]
        acme = acme_shop:AcmeParser
        [console_scripts]
        acme-tool = acme_shop:main
        """,
        {
            "acme_shop": """\
            from harvestman.extract.plugins import Record

            class AcmeParser:
                name = "acme-shop"
                version = "2024.1"
                hosts = ["acme.example"]

                def parse(self, page_html, url, page):
                    return [Record("page", {"title": page.title, "chars": len(page_html)})]
            """
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    registry = ParserRegistry.load()
    html = "<title>Anvils</title><p>Heavy.</p>"
    result = registry.parse(
        html, "https://acme.example/anvils", page_of(html, "https://acme.example/anvils")
    )

    assert [parser.name for parser in registry.parsers] == ["acme-shop"]
    assert registry.failures == []
    assert result.records == [
        Record("page", {"title": "Anvils", "chars": 34}, "acme-shop", "2024.1")
    ]


def test_the_same_parser_named_by_a_setting_and_an_entry_point_is_loaded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_distribution(
        tmp_path, "courier", "[harvestman.parsers]\ncourier = siteparsers:CourierParser\n", {}
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    registry = ParserRegistry.load(["siteparsers:CourierParser"])

    assert [parser.name for parser in registry.parsers] == ["courier-article"]
    assert registry.failures == []


def test_plugins_that_cannot_be_loaded_are_reported_with_their_reason_and_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_modules: None
) -> None:
    (tmp_path / "exploding_parsers.py").write_text('raise RuntimeError("boom at import")\n')
    write_distribution(
        tmp_path,
        "broken_parsers",
        """\
        [harvestman.parsers]
        gone = vanished_module:Parser
        """,
        {},
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    registry = ParserRegistry.load(
        [
            "exploding_parsers:Parser",
            "siteparsers:NoSuchParser",
            "siteparsers:NoVersionParser",
            "siteparsers:NeedsArgumentsParser",
            "siteparsers:CourierParser",
            "siteparsers:OtherCourierParser",
            "not a dotted path",
        ]
    )

    assert [parser.name for parser in registry.parsers] == ["courier-article"]
    assert registry.failures == [
        LoadFailure("setting exploding_parsers:Parser", "RuntimeError: boom at import"),
        LoadFailure(
            "setting siteparsers:NoSuchParser",
            "AttributeError: module 'siteparsers' has no attribute 'NoSuchParser'",
        ),
        LoadFailure(
            "setting siteparsers:NoVersionParser",
            "no-version: no version: a parser needs a non-empty str version",
        ),
        LoadFailure(
            "setting siteparsers:NeedsArgumentsParser",
            "TypeError: NeedsArgumentsParser.__init__() missing 1 required positional "
            "argument: 'api_key'",
        ),
        LoadFailure(
            "setting siteparsers:OtherCourierParser",
            "the name 'courier-article' is taken by CourierParser",
        ),
        LoadFailure("setting not a dotted path", "ValueError: invalid format: 'not a dotted path'"),
        LoadFailure(
            "entry point gone = vanished_module:Parser",
            "ModuleNotFoundError: No module named 'vanished_module'",
        ),
    ]


def test_a_parser_that_raises_is_recorded_and_the_others_still_run() -> None:
    registry = ParserRegistry([RaisingParser(), SetDataParser(), ShopPriceParser()])
    html = '<p data-price="19.90">Mug</p>'
    url = "https://shop.example/mug"

    result = registry.parse(html, url, page_of(html, url))

    assert result.records == [
        Record("price", {"price": Decimal("19.90"), "seen": date(2024, 5, 1)}, "shop-price", "3")
    ]
    assert result.records[0].data_json() == '{"price":"19.90","seen":"2024-05-01"}'
    assert [(f.parser, f.version, f.url, f.error_class, f.message) for f in result.failures] == [
        ("raising", "0.1", url, "ParserFailed", "KeyError: 'missing'"),
        (
            "set-data",
            "1",
            url,
            "ParserFailed",
            "InvalidRecord: record 0: data is not JSON-serializable (Type is not JSON "
            "serializable: set)",
        ),
    ]
    assert 'in parse\n    return [Record("x", {"value": {"a": 1}["missing"]})]' in (
        result.failures[0].traceback
    )
    assert [run.outcome for run in result.runs] == ["error", "error", "ok"]


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ({"kind": "x"}, "InvalidRecord: parse returned dict, not a list of Record"),
        ([Record("x", {}), "y"], "InvalidRecord: record 1 is a str, not a Record"),
        ([Record("", {})], "InvalidRecord: record 0: kind must be a str of 1 to 50 chars"),
        ([Record("k" * 51, {})], "InvalidRecord: record 0: kind must be a str of 1 to 50 chars"),
        (
            [Record("x", {}, key="k" * 201)],
            "InvalidRecord: record 0: key must be a str of at most 200 chars",
        ),
        (
            [Record("x", {}, key="sku-1"), Record("x", {}), Record("x", {}, key="sku-1")],
            "InvalidRecord: record 2: key 'sku-1' repeats record 0",
        ),
        (
            [Record("x", {}), Record("x", {}, key="#0")],
            "InvalidRecord: record 1: key '#0' repeats record 0",
        ),
        ([Record("x", [1])], "InvalidRecord: record 0: data is not a dict"),  # type: ignore[arg-type]
        (
            [Record("x", {1: "a"})],  # type: ignore[dict-item]
            "InvalidRecord: record 0: data is not JSON-serializable (Dict key must be str)",
        ),
    ],
)
def test_what_is_not_a_list_of_valid_records_is_a_failure(returned: object, message: str) -> None:
    class Returns:
        name, version, hosts = "returns", "1", ["*"]

        def parse(self, page_html: str, url: str, page: Page) -> object:
            return returned

    registry = ParserRegistry([Returns()])
    result = registry.parse(
        "<p>x</p>", "https://a.example/", page_of("<p>x</p>", "https://a.example/")
    )

    assert result.records == []
    assert [failure.message for failure in result.failures] == [message]


@pytest.mark.parametrize(
    ("url", "names"),
    [
        ("https://riversidecourier.example/a", ["courier-article"]),
        ("https://WWW.RiversideCourier.example:8443/a", ["courier-article"]),
        ("https://news.riversidecourier.example/a", ["courier-article"]),
        ("https://riversidecourier.example.evil.test/a", []),
        ("https://evilriversidecourier.example/a", []),
        ("https://shop.example/p", ["shop-price"]),
        ("https://www.shop.example/p", ["shop-price"]),
        ("https://eu.shop.example/p", []),
        ("https://shop.example.org/p", []),
        ("not a url", []),
    ],
)
def test_parsers_are_picked_by_host_pattern(url: str, names: list[str]) -> None:
    registry = ParserRegistry([CourierParser(), ShopPriceParser()])

    assert [parser.name for parser in registry.parsers_for(url)] == names


def test_success_rates_per_host_show_a_layout_change_as_a_drop() -> None:
    ticks = iter(range(100))
    registry = ParserRegistry([CourierParser()], clock=lambda: next(ticks) * 0.25)
    redesigned = NEWS_HTML.replace('<article class="story">', '<article class="story-v2">')
    pages = [
        (NEWS_HTML, ARTICLE_URL),
        (NEWS_HTML, ARTICLE_URL.replace("18/", "19/")),
        (NEWS_HTML, "https://www.riversidecourier.example/environment"),  # declined: not counted
        (NEWS_HTML, "https://riversidecourier.example/news/2024/nov/20/fox"),
        (redesigned, "https://www.riversidecourier.example/news/2024/nov/21/bus"),
        (redesigned, "https://www.riversidecourier.example/news/2024/nov/22/rail"),
    ]
    for html, url in pages[:3]:
        registry.parse(html, url, page_of(html, url))
    first = registry.take_pending_stats()
    for html, url in pages[3:]:
        registry.parse(html, url, page_of(html, url))

    www = StatsKey("www.riversidecourier.example", "courier-article", "1.2.0")
    bare = StatsKey("riversidecourier.example", "courier-article", "1.2.0")
    assert registry.stats() == {
        www: ParseStats(attempts=4, successes=2, empty=2, errors=0, records=2, seconds=1.0),
        bare: ParseStats(attempts=1, successes=1, empty=0, errors=0, records=1, seconds=0.25),
    }
    assert registry.stats()[www].success_rate == 0.5
    assert {type(value) for value in astuple(registry.stats()[www])[:5]} == {int}
    assert first == {www: ParseStats(2, 2, 0, 0, 2, 0.5)}
    assert registry.take_pending_stats() == {
        www: ParseStats(2, 0, 2, 0, 0, 0.5),
        bare: ParseStats(1, 1, 0, 0, 1, 0.25),
    }
    assert registry.take_pending_stats() == {}


def test_errors_count_against_the_success_rate() -> None:
    registry = ParserRegistry([RaisingParser()])
    for n in range(3):
        url = f"https://a.example/{n}"
        registry.parse("<p>x</p>", url, page_of("<p>x</p>", url))

    stats = registry.stats()[StatsKey("a.example", "raising", "0.1")]
    assert (stats.attempts, stats.successes, stats.errors, stats.success_rate) == (3, 0, 3, 0.0)


def test_a_bytes_page_is_decoded_with_the_http_charset_only_when_a_parser_matches() -> None:
    seen: list[str] = []

    class Recorder:
        name, version, hosts = "recorder", "1", ["cafe.example"]

        def parse(self, page_html: str, url: str, page: Page) -> list[Record]:
            seen.append(page_html)
            return [Record("text", {"html": page_html})]

    registry = ParserRegistry([Recorder()])
    body = "<p>Café crème</p>".encode("cp1252")

    other = registry.parse(
        body, "https://other.example/", page_of("<p></p>", "https://other.example/")
    )
    result = registry.parse(
        body,
        "https://cafe.example/",
        page_of("<p></p>", "https://cafe.example/"),
        charset="latin-1",
    )

    assert other.records == other.runs == other.failures == []
    assert seen == ["<p>Café crème</p>"]
    assert result.runs == [ParserRun("recorder", "1", "ok", 1, result.runs[0].seconds)]


def test_a_record_hash_changes_with_its_data_only() -> None:
    one = Record("price", {"b": 1, "a": Decimal("2.50")}, "p", "1")
    same = Record("price", {"a": Decimal("2.50"), "b": 1}, "p", "1")
    other = Record("price", {"a": Decimal("2.60"), "b": 1}, "p", "1")

    assert one.data_json() == '{"a":"2.50","b":1}'
    assert one.content_hash() == same.content_hash() != other.content_hash()
    assert len(one.content_hash()) == 64


def test_a_directly_built_registry_reports_objects_that_are_not_parsers() -> None:
    class NoHosts:
        name, version, hosts = "no-hosts", "1", "example.com"

        def parse(self, page_html: str, url: str, page: Page) -> list[Record]:
            return []

    registry = ParserRegistry([NoHosts(), object(), CourierParser()])

    assert [parser.name for parser in registry.parsers] == ["courier-article"]
    assert registry.failures == [
        LoadFailure(
            "object NoHosts",
            "no-hosts: hosts must be a non-empty list of patterns, not 'example.com'",
        ),
        LoadFailure("object object", "no name: a parser needs a non-empty str name"),
    ]
    assert len(registry) == 1
