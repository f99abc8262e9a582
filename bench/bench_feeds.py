"""Time reading a feed: Harvestman's streaming reader against feedparser, on our feed sizes.

Atom and RSS feeds of 20 and 100 entries (each with a ~1 KB summary, as blogs and news sites
write them: 25-170 KB) are read by ``parse_sitemap`` (what ``read_listing`` runs) and, when it
is installed (``pip install feedparser``; it is not a dependency), by ``feedparser.parse``.

Run: ``.venv/bin/python bench/bench_feeds.py``
"""

from __future__ import annotations

import time

from harvestman.discovery.sitemaps import parse_sitemap


def atom(entries: int) -> bytes:
    body = "".join(
        f'<entry><title>Post {i}</title><link rel="alternate" href="/posts/{i}.html"/>'
        f'<link rel="enclosure" href="/media/{i}.mp3" length="1" type="audio/mpeg"/>'
        f"<id>tag:example.com,2024:{i}</id><updated>2024-05-{i % 28 + 1:02d}T10:00:00Z</updated>"
        f'<content type="html">{"&lt;p&gt;Lorem ipsum dolor sit amet. " * 40}</content></entry>'
        for i in range(entries)
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom" '
        f'xml:base="https://example.com/blog/"><title>x</title>{body}</feed>'
    ).encode()


def rss(entries: int) -> bytes:
    body = "".join(
        f"<item><title>Post {i}</title><link>https://example.com/posts/{i}.html</link>"
        "<pubDate>Mon, 06 May 2024 10:00:00 +0200</pubDate>"
        f"<description>{'Lorem ipsum dolor sit amet. ' * 40}</description></item>"
        for i in range(entries)
    )
    head = '<?xml version="1.0"?><rss version="2.0"><channel><title>x</title>'
    return f"{head}{body}</channel></rss>".encode()


def ms_per_read(read: object, body: bytes, rounds: int) -> float:
    assert callable(read)
    start = time.process_time()
    for _ in range(rounds):
        read(body)
    return (time.process_time() - start) / rounds * 1e3


def main() -> None:
    readers = {
        "harvestman": lambda body: parse_sitemap(
            body, "https://example.com/feed.xml", max_urls=50_000, max_bytes=50 << 20
        )
    }
    try:
        import feedparser  # type: ignore[import-not-found]

        readers["feedparser"] = feedparser.parse
    except ImportError:
        print("(feedparser not installed: only Harvestman's reader is timed)")
    for label, body in (
        ("atom, 20 entries", atom(20)),
        ("atom, 100 entries", atom(100)),
        ("rss, 20 items", rss(20)),
        ("rss, 100 items", rss(100)),
    ):
        for name, read in readers.items():
            rounds = 200 if name == "harvestman" else 20
            ms = ms_per_read(read, body, rounds)
            print(f"{label:<18} {len(body) / 1024:5.0f} KB  {name:<10} {ms:8.2f} ms/feed CPU")


if __name__ == "__main__":
    main()
