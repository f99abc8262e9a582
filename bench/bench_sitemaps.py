"""Parse ~50 MB sitemaps in a child process each and print the time and the peak RSS.

Run: ``.venv/bin/python bench/bench_sitemaps.py``

Three documents, written to a temporary directory:

- ``rich``: 50,000 URLs (the per-sitemap cap) made ~50 MB by image, news and alternate-language
  extensions on every ``<url>``, as a large shop or news site writes them;
- ``rich.gz``: the same, gzip-compressed (the body in memory is small, inflation streams);
- ``plain``: ~50 MB of bare ``<url>`` entries (~270,000), of which the cap keeps 50,000.

The bar (issue 6): a 50 MB sitemap parses in bounded memory, under 100 MB peak RSS. The child's
peak RSS (VmHWM) includes the interpreter and the body, which the caller holds in memory.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SITEMAP_URL = "https://shop.example.com/sitemap.xml"
TARGET_BYTES = 50 * 1024 * 1024
RSS_BAR_MB = 100

HEADER = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    ' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"'
    ' xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"'
    ' xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
)
FOOTER = "</urlset>\n"
# 50,000 entries of this size make a sitemap just under the 50 MiB cap.
ENTRY_BYTES = (TARGET_BYTES - len(HEADER) - len(FOOTER)) // 50_000


def rich_entry(n: int) -> str:
    """One ``<url>`` with image and alternate-language extensions, padded to ENTRY_BYTES."""
    path = f"/catalogue/category-{n % 97}/product-{n}-with-a-fairly-long-descriptive-slug.html"
    images = "".join(
        f"<image:image><image:loc>https://cdn.example.com/img/{n}/{i}-large.jpg</image:loc>"
        f"<image:title>Product {n} view {i}</image:title>"
        f"<image:caption>{{pad{i}}}</image:caption></image:image>\n"
        for i in range(2)
    )
    alternates = "".join(
        f'<xhtml:link rel="alternate" hreflang="{lang}" href="https://shop.example.com/{lang}'
        f'{path}"/>\n'
        for lang in ("de", "fr")
    )
    text = (
        f"<url>\n  <loc>https://shop.example.com{path}?ref=sitemap&amp;variant={n % 5}</loc>\n"
        f"  <lastmod>2025-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:15:30.123+02:00"
        "</lastmod>\n"
        f"  <changefreq>weekly</changefreq>\n  <priority>0.{n % 10}</priority>\n"
        f"{images}{alternates}</url>\n"
    )
    missing = ENTRY_BYTES - (len(text) - len("{pad0}{pad1}"))
    caption = ("A caption about colour, size and material of the product. " * 20)[:missing]
    half = missing // 2
    return text.replace("{pad0}", caption[:half]).replace("{pad1}", caption[half:])


def plain_entry(n: int) -> str:
    return (
        f"<url><loc>https://shop.example.com/p/{n}.html</loc>"
        f"<lastmod>2025-06-{1 + n % 28:02d}</lastmod><changefreq>daily</changefreq>"
        f"<priority>0.5</priority></url>\n"
    )


def write_sitemap(path: Path, entry_of: Callable[[int], str], max_entries: int | None) -> int:
    """Write entries while the file stays within 50 MiB (and ``max_entries``); return the count."""
    size = len(HEADER) + len(FOOTER)
    count = 0
    with path.open("w", encoding="utf-8") as file:
        file.write(HEADER)
        while max_entries is None or count < max_entries:
            text = entry_of(count)
            if size + len(text) > TARGET_BYTES:
                break
            file.write(text)
            size += len(text)
            count += 1
        file.write(FOOTER)
    return count


def rss_mb(field: str) -> float:
    """``VmRSS`` or ``VmHWM`` (peak) of this process, in MiB.

    Not ``getrusage``: Linux carries ``ru_maxrss`` over ``exec`` from the forking parent.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} missing from /proc/self/status")


def child(path: str) -> None:
    from harvestman.discovery.sitemaps import parse_sitemap

    body = Path(path).read_bytes()
    rss_before = rss_mb("VmRSS")
    start = time.perf_counter()
    sitemap = parse_sitemap(body, SITEMAP_URL)
    seconds = time.perf_counter() - start
    peak = rss_mb("VmHWM")
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_rss_mb": peak,
                "rss_before_mb": rss_before,
                "urls": len(sitemap.urls),
                "with_lastmod": sum(1 for u in sitemap.urls if u.lastmod is not None),
                "errors": sitemap.errors,
                "kind": sitemap.kind,
            }
        )
    )


def measure(path: Path) -> dict:
    completed = subprocess.run(
        [sys.executable, __file__, "--child", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(completed.stdout)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-sitemaps-") as tmp:
        directory = Path(tmp)
        rich = directory / "rich.xml"
        plain = directory / "plain.xml"
        rich_count = write_sitemap(rich, rich_entry, 50_000)
        plain_count = write_sitemap(plain, plain_entry, None)
        rich_gz = directory / "rich.xml.gz"
        rich_gz.write_bytes(gzip.compress(rich.read_bytes(), 6))
        cases = [
            ("rich", rich, rich_count),
            ("rich.gz", rich_gz, rich_count),
            ("plain", plain, plain_count),
        ]
        passed = True
        print(f"{'case':8} {'file MB':>8} {'entries':>8} {'kept':>7} {'seconds':>8} "
              f"{'MB/s':>6} {'RSS before':>10} {'peak RSS':>9}  errors")  # fmt: skip
        for name, path, entries in cases:
            figures = measure(path)
            size_mb = path.stat().st_size / 1024 / 1024
            parsed_mb = rich.stat().st_size / 1024 / 1024 if name == "rich.gz" else size_mb
            rate = parsed_mb / figures["seconds"] if name != "plain" else float("nan")
            print(
                f"{name:8} {size_mb:8.1f} {entries:8,} {figures['urls']:7,} "
                f"{figures['seconds']:8.2f} {rate:6.1f} {figures['rss_before_mb']:9.0f}M "
                f"{figures['peak_rss_mb']:8.0f}M  {figures['errors']}"
            )
            kept_all = figures["urls"] == min(entries, 50_000)
            passed &= figures["peak_rss_mb"] < RSS_BAR_MB and kept_all
        print(f"{'PASS' if passed else 'FAIL'}  peak RSS < {RSS_BAR_MB} MB and 50,000 URLs kept")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        main()
