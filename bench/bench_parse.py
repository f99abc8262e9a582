"""Time ``parse_html`` on a realistic ~20 KB page with 30 links and print µs per page.

The page has what real pages carry around their text: a head with scripts, a style sheet and
meta tags, a nav, paragraphs with inline markup, links of every kind (relative, absolute,
``../``, fragments, tracking parameters, ``mailto:``/``javascript:``), and a footer script.
Pages of the crawl benchmark's synthetic site (``bench/synthsite.py``) are timed too, and the
cost is split into its parts, so a regression shows where it comes from.

Run: ``.venv/bin/python bench/bench_parse.py`` (about 10 s). Lexbor allocates a few hundred KB
per document; glibc serves that with fresh ``mmap`` pages, page faults included, unless told
otherwise: compare with ``MALLOC_MMAP_THRESHOLD_=4194304 MALLOC_TRIM_THRESHOLD_=67108864``.
"""

from __future__ import annotations

import hashlib
import random
import resource
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from harvestman.charset import decode_html
from harvestman.parse import _HIDDEN, _visible_text, parse_html
from harvestman.urls import normalize_url

PAGE_URL = "https://www.example.com/articles/2024/example-article"
WORDS = [
    *("the", "of", "and", "to", "in", "is", "for", "on", "that", "with", "as", "by", "this"),
    *("from", "crawler", "page", "link", "text", "data", "web", "site", "search", "index"),
    *("content", "robots", "sitemap", "feed", "article", "news", "product", "price", "review"),
    *("update", "team", "résumé", "naïve", "café"),
]


def realistic_page(seed: int = 1, n_links: int = 30) -> tuple[bytes, list[str]]:
    """A ~20 KB UTF-8 article page with ``n_links`` links of mixed kinds (plus 4 to drop)."""
    rng = random.Random(seed)

    def sentence(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."

    hrefs = []
    for i in range(n_links):
        hrefs.append(
            [
                f"/section/{i}/index.html",
                f"https://www.example.com/articles/2024/post-{i}?utm_campaign=a&b=2&a=1",
                f"../related/item-{i}.html#comments",
                f"https://other{i}.example.org/path/%7Euser/page?ref=home",
                f"tag/{rng.choice(WORDS[:30])}-{i}",
                f"/search?q={rng.choice(WORDS[:30])}&amp;page={i}",
            ][i % 6]
        )
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        "<title>Example article | Example Site</title>\n",
        '<meta name="description" content="An example article about crawling the web.">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        '<meta property="og:title" content="Example article">\n',
        f'<link rel="canonical" href="{PAGE_URL}?utm_source=x">\n',
        '<link rel="alternate" type="application/rss+xml" href="/feed.xml">\n',
        '<link rel="stylesheet" href="/static/site.css">\n<link rel="icon" href="/favicon.ico">\n',
        "<style>body{font-family:sans-serif;margin:0 auto;max-width:60em}.nav a{padding:4px}"
        ".ad{border:1px solid #ccc}</style>\n",
        "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}"
        "gtag('js',new Date());</script>\n</head>\n<body>\n",
        '<header class="site">\n  <nav class="nav">\n    <ul>\n',
    ]
    for href in hrefs[:8]:
        parts.append(f'      <li><a href="{href}" class="nav-item">{sentence(2)}</a></li>\n')
    parts.append("    </ul>\n  </nav>\n</header>\n<main>\n<article>\n<h1>Example article</h1>\n")
    rest = hrefs[8:]
    size = sum(map(len, parts))
    paragraph = 0
    while size < 18_000:
        chunk = ['<p class="para">\n  ']
        for s in range(6):
            chunk.append(sentence(rng.randint(6, 16)) + "\n  ")
            if s == 2 and rest:
                chunk.append(
                    f'<a href="{rest.pop()}">{sentence(3)}</a> <em>{rng.choice(WORDS)}</em> '
                )
        chunk.append("</p>\n")
        paragraph += 1
        if paragraph % 4 == 0:
            chunk.append(
                f'<div class="ad"><span>{sentence(4)}</span><img src="/i/{paragraph}.png"></div>\n'
            )
        text = "".join(chunk)
        size += len(text)
        parts.append(text)
    parts.append("</article>\n</main>\n<footer><p>")
    parts.extend(f'<a href="{href}">{sentence(2)}</a> | ' for href in rest)
    parts.append(
        '<a href="mailto:info@example.com">Mail</a> <a href="javascript:void(0)">Top</a> '
        '<a href="tel:+123">Call</a> <a href="#top">Back to top</a></p>\n'
        '<script>(function(){var s=document.createElement("script");s.src="/a.js";})();</script>\n'
        "</footer>\n</body>\n</html>\n"
    )
    return "".join(parts).encode(), hrefs


def synthetic_site_pages(count: int) -> list[bytes]:
    """``count`` pages as the crawl benchmark's generator writes them (empty if unavailable)."""
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from synthsite import Writer, plan_host  # type: ignore[import-not-found]
    except ImportError:
        return []
    rng = random.Random(1)
    plan = plan_host(count, rng)
    writer = Writer(rng, 20_000)
    return [writer.page(n, plan) for n in range(count)]


def us_per_call(function: Callable[[], object], number: int) -> tuple[float, float]:
    """(best, median) CPU µs per call over 7 rounds; CPU time, as the machine is shared."""
    rounds = timeit.Timer(function, timer=time.process_time).repeat(repeat=7, number=number)
    return min(rounds) / number * 1e6, statistics.median(rounds) / number * 1e6


def main() -> None:
    body, hrefs = realistic_page()
    page = parse_html(body, PAGE_URL, charset="utf-8")
    print(
        f"realistic page: {len(body):,} bytes, {len(hrefs)} links + 4 dropped, "
        f"{len(page.links)} kept (with canonical and feed), text {len(page.text):,} chars"
    )
    number = 500
    best, median = us_per_call(lambda: parse_html(body, PAGE_URL, charset="utf-8"), number)
    print(f"  parse_html, header charset utf-8   {best:7.1f} µs/page (median {median:.1f})")
    best, median = us_per_call(lambda: parse_html(body, PAGE_URL), number)
    print(f"  parse_html, <meta charset> only    {best:7.1f} µs/page (median {median:.1f})")

    def normalize_links() -> None:
        for href in hrefs:
            normalize_url(href, PAGE_URL)

    def extract_text() -> str:
        tree = LexborHTMLParser(body)
        tree.strip_tags(_HIDDEN)
        return _visible_text(tree.body.text(separator=" ", strip=True, skip_empty=True))

    visible = extract_text()
    parse_us = us_per_call(lambda: LexborHTMLParser(body), number)[0]
    parts = {
        "decode_html (utf-8 header)": lambda: decode_html(body, "utf-8"),
        "Lexbor parse": lambda: LexborHTMLParser(body),
        f"normalize {len(hrefs)} links": normalize_links,
        "visible text (minus parse)": extract_text,
        "sha256 of the text": lambda: hashlib.sha256(visible.encode()).hexdigest(),
    }
    for label, function in parts.items():
        us = us_per_call(function, number)[0]
        if label.startswith("visible text"):
            us -= parse_us
        print(f"    of which {label:<28} {us:7.1f} µs")
    before = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(number):
        parse_html(body, PAGE_URL, charset="utf-8")
    after = resource.getrusage(resource.RUSAGE_SELF)
    user = (after.ru_utime - before.ru_utime) / number * 1e6
    system = (after.ru_stime - before.ru_stime) / number * 1e6
    faults = (after.ru_minflt - before.ru_minflt) / number
    print(
        f"  CPU split: user {user:.1f} µs + system {system:.1f} µs per page, "
        f"{faults:.1f} page faults per page (Lexbor's allocations; see MALLOC_MMAP_THRESHOLD_)"
    )

    pages = synthetic_site_pages(100)
    if pages:
        timings = []
        for html in pages:
            timings.append(us_per_call(lambda html=html: parse_html(html, PAGE_URL), 20)[0])
        links = statistics.mean(len(parse_html(p, PAGE_URL).links) for p in pages)
        size = statistics.mean(map(len, pages)) / 1000
        print(
            f"synthetic site pages (bench/synthsite.py): {len(pages)} pages of ~{size:.0f} KB, "
            f"{links:.0f} links kept on average"
        )
        print(
            f"  parse_html                          {statistics.mean(timings):7.1f} µs/page "
            f"(min {min(timings):.1f}, max {max(timings):.1f})"
        )

    cp1252 = body.decode().replace("utf-8", "windows-1252").encode("cp1252", errors="replace")
    best, _ = us_per_call(lambda: parse_html(cp1252, PAGE_URL, charset="windows-1252"), 200)
    print(f"windows-1252 page with its header:     {best:7.1f} µs/page")
    unlabeled = cp1252.replace(b'<meta charset="windows-1252">', b"")
    best, _ = us_per_call(lambda: parse_html(unlabeled, PAGE_URL), 20)
    print(f"windows-1252 page, no label (detected): {best:7.1f} µs/page")


if __name__ == "__main__":
    main()
