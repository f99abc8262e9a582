"""Time ``normalize`` on the common cases and print µs per call.

Run: ``.venv/bin/python bench/bench_urls.py``
"""

from __future__ import annotations

import timeit

from harvestman.urls import Scope, UrlNormalizer, host_key, url_hash

BASE = "https://www.example.com/blog/2024/05/some-article-title"
CASES = {
    "normalized absolute URL": ("https://www.example.com/products/widget-42", None),
    "relative link with a base": ("../2023/older-post", BASE),
    "absolute-path link with a base": ("/category/news?page=2", BASE),
    "4-parameter query with utm_": (
        "https://www.example.com/search?q=shoes&utm_source=mail&color=red&page=3",
        None,
    ),
    "IDN host, escapes, dot segments": (
        "HTTP://Bücher.example/a/./b/../c%7e/%c3%a9 x?b=2&a=1#frag",
        None,
    ),
}


def per_call_us(statement: str, namespace: dict[str, object], number: int) -> float:
    timer = timeit.Timer(statement, globals=namespace)
    return min(timer.repeat(repeat=7, number=number)) / number * 1e6


def main() -> None:
    number = 10_000
    normalizer = UrlNormalizer()
    for label, (url, base) in CASES.items():
        namespace = {"normalize": normalizer.normalize, "url": url, "base": base}
        us = per_call_us("normalize(url, base)", namespace, number)
        print(f"normalize, {label:<34} {us:6.2f} µs/call")
    url = normalizer.normalize(*CASES["4-parameter query with utm_"])
    scope = Scope(["https://example.com/"], exclude=[r"/private/"])
    for label, statement in (
        ("url_hash", "url_hash(url)"),
        ("host_key", "host_key(url)"),
        ("Scope.check (one exclude regex)", "check(url)"),
    ):
        namespace = {"url_hash": url_hash, "host_key": host_key, "check": scope.check, "url": url}
        print(f"{label:<45} {per_call_us(statement, namespace, number):6.2f} µs/call")


if __name__ == "__main__":
    main()
