"""The crawl's bounded cache of seen URLs (crawl/seen.py) and Discovery on top of it."""

from __future__ import annotations

import doctest

from harvestman.crawl import seen
from harvestman.crawl.discovery import Discovery
from harvestman.crawl.seen import SeenCache
from harvestman.stats import Stats
from harvestman.urls import Scope, url_hash


def test_docstring_examples_hold() -> None:
    assert doctest.testmod(seen).failed == 0


def test_fresh_urls_come_once_in_order() -> None:
    cache = SeenCache(100)
    assert cache.fresh(["b", "a", "b", "c"]) == ["b", "a", "c"]
    assert cache.fresh(["c", "d", "a"]) == ["d"]
    assert "d" in cache
    assert "e" not in cache


def test_the_cache_never_holds_more_than_its_capacity() -> None:
    cache = SeenCache(10)
    for i in range(1000):
        cache.fresh([f"u{i}"])
        cache.add(f"v{i}")
        assert len(cache) <= 10


def test_a_url_met_again_stays_while_others_age_out() -> None:
    cache = SeenCache(10)
    cache.fresh(["kept"])
    for i in range(100):
        assert cache.fresh(["kept", f"u{i}"]) == [f"u{i}"]
    assert "kept" in cache
    assert "u0" not in cache  # long gone: it would go to the store again
    assert cache.fresh(["u0"]) == ["u0"]


def test_capacity_zero_keeps_nothing() -> None:
    cache = SeenCache(0)
    cache.add("a")
    assert cache.fresh(["a", "a"]) == ["a"]
    assert len(cache) == 0


def test_discovery_hashes_and_scopes_only_new_links() -> None:
    stats = Stats()
    discovery = Discovery(stats, max_depth=3, seen_cache_size=1000)
    discovery.scope = Scope(["http://a.example/"])
    first = discovery.links(["http://a.example/x", "http://b.example/", "http://a.example/y"], 1)
    assert [(row.url, row.url_hash, row.depth) for row in first] == [
        ("http://a.example/x", url_hash("http://a.example/x"), 1),
        ("http://a.example/y", url_hash("http://a.example/y"), 1),
    ]
    assert stats["frontier/out_of_scope"] == 1
    again = discovery.links(["http://a.example/y", "http://b.example/", "http://a.example/z"], 2)
    assert [row.url for row in again] == ["http://a.example/z"]
    assert stats["frontier/out_of_scope"] == 1
    assert discovery.guessed(["http://a.example/x", "http://a.example/w"], 2, "pagination")[
        0
    ].url == ("http://a.example/w")
