"""Time robots.txt parsing and ``is_allowed`` and print the figures, next to Protego's.

Run: ``.venv/bin/python bench/bench_robots.py``
"""

from __future__ import annotations

import random
import time
import timeit

from protego import Protego

from harvestman.robots import MAX_ROBOTS_BYTES, parse_robots

UA = "Harvestman/0.1 (+https://harvestman.example/bot)"
ROBOTS_URL = "https://www.example.com/robots.txt"
NEWLINE = b"\n"

# 50 rules in the shape of a large shop's robots.txt: prefixes, query wildcards, suffix anchors.
ROBOTS_50 = """\
User-agent: Googlebot
Disallow: /nogoogle/

User-agent: *
Crawl-delay: 1
Disallow: /admin/
Disallow: /cart
Disallow: /checkout/
Disallow: /account/
Disallow: /login
Disallow: /logout
Disallow: /register
Disallow: /search
Allow: /search/about
Disallow: /api/
Allow: /api/docs/
Disallow: /tmp/
Disallow: /private/
Disallow: /wishlist/
Disallow: /compare/
Disallow: /print/
Disallow: /*?sort=
Disallow: /*?order=
Disallow: /*&sort=
Disallow: /*?sessionid=
Disallow: /*&sessionid=
Disallow: /*?filter=
Disallow: /*?page=*&view=
Disallow: /*.pdf$
Disallow: /*.doc$
Disallow: /*.xls$
Disallow: /*/feed/$
Disallow: /*/trackback/
Allow: /products/
Disallow: /products/*/reviews/write
Allow: /blog/
Disallow: /blog/drafts/
Disallow: /blog/tag/*/page/
Disallow: /category/*/filter/
Allow: /category/
Disallow: /cgi-bin/
Disallow: /includes/
Disallow: /modules/
Disallow: /scripts/
Disallow: /themes/
Disallow: /xmlrpc.php
Disallow: /wp-admin/
Allow: /wp-admin/admin-ajax.php
Disallow: /wp-includes/
Disallow: /*/embed/
Disallow: /out/
Disallow: /redirect
Disallow: /ads/
Disallow: /%7Eold/

Sitemap: https://www.example.com/sitemap.xml
"""

SECTIONS = ["products", "blog", "category", "search", "about", "help", "news", "account", "api"]


def sample_urls(count: int) -> list[str]:
    rng = random.Random(7)
    urls = []
    for index in range(count):
        path = f"/{rng.choice(SECTIONS)}/{'item-' + str(index)}/{rng.choice(['', 'reviews', 'x'])}"
        query = rng.choice(["", "", "", "?page=2", "?sort=price", "?page=3&view=grid", "?q=a"])
        ext = rng.choice(["", "", "", ".html", ".pdf"])
        urls.append(f"https://www.example.com{path}{ext}{query}")
    return urls


def per_call_us(check, urls: list[str], repeat: int = 5) -> float:  # type: ignore[no-untyped-def]
    def run() -> None:
        for url in urls:
            check(url, UA)

    return min(timeit.repeat(run, number=1, repeat=repeat)) / len(urls) * 1e6


def parse_ms(parse, body, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    return min(timeit.repeat(lambda: parse(body), number=1, repeat=repeat)) * 1e3


def big_robots(wildcards: bool) -> bytes:
    rng = random.Random(3)
    lines = ["User-agent: *"]
    size = 14
    while size < MAX_ROBOTS_BYTES:
        word = "".join(rng.choices("abcdefghijklmnop", k=rng.randint(4, 20)))
        rule = f"Disallow: /*?{word}=" if wildcards else f"Disallow: /{word}/{rng.randint(0, 99)}"
        lines.append(rule)
        size += len(rule) + 1
    return "\n".join(lines).encode()


def main() -> None:
    urls = sample_urls(2_000)
    ours = parse_robots(ROBOTS_50, ROBOTS_URL)
    theirs = Protego.parse(ROBOTS_50)
    verdicts = [ours.is_allowed(url, UA) for url in urls]
    assert verdicts == [theirs.can_fetch(url, UA) for url in urls], "the two disagree here"
    print(f"{len(urls)} URLs, {sum(verdicts)} allowed")
    figures = {
        "is_allowed, 50-rule file": per_call_us(ours.is_allowed, urls),
        "Protego can_fetch, same file": per_call_us(theirs.can_fetch, urls),
    }
    for label, us in figures.items():
        print(f"{label:<50} {us:8.2f} µs/call")
    parse_ours = parse_ms(lambda body: parse_robots(body, ROBOTS_URL), ROBOTS_50)
    print(f"{'parse_robots, 50-rule file':<50} {parse_ours:8.2f} ms")
    print(f"{'Protego.parse, same file':<50} {parse_ms(Protego.parse, ROBOTS_50):8.2f} ms")
    for wildcards in (False, True):
        body = big_robots(wildcards)
        kind = "wildcard" if wildcards else "prefix"
        label = f"500 KiB, {body.count(NEWLINE)} {kind} rules"
        start = time.perf_counter()
        rules = parse_robots(body, ROBOTS_URL)
        rules.is_allowed(urls[0], UA)  # the first query builds the matcher
        built_ms = (time.perf_counter() - start) * 1e3
        us = per_call_us(rules.is_allowed, urls[:200], repeat=2)
        print(f"{label + ': parse + first query':<50} {built_ms:8.2f} ms")
        print(f"{label + ': is_allowed':<50} {us:8.2f} µs/call")


if __name__ == "__main__":
    main()
