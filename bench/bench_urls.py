"""Time ``normalize`` on the common cases and print µs per call, then link resolution per page.

Per page: the hrefs of the crawl benchmark's synthetic site (``bench/synthsite.py``), resolved
against their page as ``parse_html`` does, in crawl order with one normalizer (its memo warm, as
in a crawl), and with a fresh normalizer per page (every link a miss: the worst case).

Run: ``.venv/bin/python bench/bench_urls.py``
"""

from __future__ import annotations

import statistics
import sys
import time
import timeit
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from harvestman.errors import UrlError
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


def site_hrefs(count: int) -> list[tuple[str, list[str]]]:
    """(page URL, hrefs) of ``count`` synthetic site pages (empty if the generator is missing)."""
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        import random

        from synthsite import Writer, plan_host  # type: ignore[import-not-found]
    except ImportError:
        return []
    rng = random.Random(1)
    plan = plan_host(count, rng)
    writer = Writer(rng, 20_000)
    pages = []
    for n in range(count):
        tree = LexborHTMLParser(writer.page(n, plan))
        hrefs = [node.attributes.get("href") or "" for node in tree.css("a[href], link[href]")]
        url = "http://127.0.0.1:8000/" if n == 0 else f"http://127.0.0.1:8000/p/{n}.html"
        pages.append((url, hrefs))
    return pages


def per_page(pages: list[tuple[str, list[str]]], *, warm: bool) -> float:
    """CPU µs per page to resolve every href of every page (best of 5 rounds)."""
    rounds = []
    for _ in range(5):
        normalizer = UrlNormalizer()
        start = time.process_time()
        for url, hrefs in pages:
            if not warm:
                normalizer = UrlNormalizer()
            normalize = normalizer.normalize
            for href in hrefs:
                try:  # noqa: SIM105 (contextlib.suppress costs as much as a remembered link)
                    normalize(href, url)
                except UrlError:
                    pass
        rounds.append((time.process_time() - start) / len(pages) * 1e6)
    return min(rounds)


def main_pages() -> None:
    pages = site_hrefs(2_000)
    if not pages:
        return
    links = statistics.mean(len(hrefs) for _, hrefs in pages)
    print(f"link resolution, synthetic site: {len(pages)} pages, {links:.0f} hrefs per page")
    print(f"  one normalizer, in crawl order (warm)   {per_page(pages, warm=True):7.1f} µs/page")
    print(f"  a fresh normalizer per page (cold)      {per_page(pages, warm=False):7.1f} µs/page")


if __name__ == "__main__":
    main()
    main_pages()
