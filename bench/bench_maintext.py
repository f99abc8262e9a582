"""Time ``extract_main_text`` per page, beside ``parse_html`` on the same page for scale.

Pages: the four fixtures of ``tests/fixtures/maintext`` (a news article with nav, sidebar,
newsletter box, comments and footer; a WordPress blog post; a product page; a sign-in page with
no article), ``bench_parse.realistic_page()`` (~20 KB), and a *heavy news page* (~150 KB: the
news fixture with a 600-link mega menu, 80 KB of inline scripts and JSON state, long sidebars
and a 1,500-word article), as real news pages weigh. Then the options: the default (precision,
no fallback), balanced, and with trafilatura's fallback extractors.

When ``resiliparse`` or ``readability`` (readability-lxml) is importable, the same pages go
through them for comparison (they are not dependencies: install them in a scratch environment).

Run: ``.venv/bin/python bench/bench_maintext.py`` (about 20 s). Figures are CPU time per page,
the best of five runs.
"""

from __future__ import annotations

import random
import sys
import time
import timeit
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_parse import PAGE_URL, WORDS, realistic_page
from harvestman.extract.maintext import MainTextExtractor, extract_main_text
from harvestman.parse import parse_html

FIXTURES = Path(__file__).parent.parent / "tests" / "fixtures" / "maintext"


def heavy_news_page(seed: int = 7) -> bytes:
    """The news fixture grown to the size of a real news page (~150 KB)."""
    rng = random.Random(seed)

    def sentence(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."

    html = (FIXTURES / "news_article.html").read_text("utf-8")
    menu = "".join(
        f'<li><a href="/section/{i}/{rng.choice(WORDS)}">{sentence(2)}</a></li>' for i in range(600)
    )
    script = "<script>window.__STATE__=" + repr([sentence(12) for _ in range(1200)]) + "</script>"
    body = "".join(f"<p>{sentence(rng.randint(15, 35))}</p>\n" for _ in range(60))
    sidebar = "".join(f'<li><a href="/news/{i}">{sentence(8)}</a></li>' for i in range(200))
    html = html.replace("</ul>\n  </nav>", menu + "</ul>\n  </nav>", 1)
    html = html.replace("</head>", script + "</head>", 1)
    html = html.replace("<p>Residents of riverside", body + "<p>Residents of riverside", 1)
    html = html.replace(
        '</ol>\n  </section>\n  <div class="advert">',
        sidebar + '</ol>\n  </section>\n  <div class="advert">',
        1,
    )
    return html.encode("utf-8")


def pages() -> dict[str, bytes]:
    found = {path.stem: path.read_bytes() for path in sorted(FIXTURES.glob("*.html"))}
    found["realistic_page (bench_parse)"] = realistic_page()[0]
    found["heavy news page"] = heavy_news_page()
    return found


def per_call_us(fn: Callable[[], object], budget: float = 0.6) -> float:
    """CPU µs per call, the best of 5 runs of about ``budget`` seconds in all.

    CPU time of this process, not wall time: the machine is shared, and time spent waiting
    for a core is not the extractor's cost.
    """
    fn()
    once = timeit.timeit(fn, number=1, timer=time.process_time)
    number = max(1, int(budget / 5 / max(once, 1e-4)))
    runs = timeit.repeat(fn, number=number, repeat=5, timer=time.process_time)
    return min(runs) / number * 1e6


def main() -> None:
    found = pages()
    balanced = MainTextExtractor(focus="balanced")
    fallback = MainTextExtractor(fallback=True)
    comparisons: dict[str, Callable[[bytes], object]] = {}
    try:
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree

        def resiliparse(body: bytes) -> object:
            return extract_plain_text(HTMLTree.parse_from_bytes(body), main_content=True)

        comparisons["resiliparse"] = resiliparse
    except ImportError:
        pass
    try:
        from readability import Document

        comparisons["readability"] = lambda body: Document(body).summary()
    except ImportError:
        pass

    columns = ["parse_html", "maintext", "balanced", "fallback", *comparisons]
    print(f"{'page (µs per page)':30} {'KB':>5}" + "".join(f" {name:>11}" for name in columns))
    for name, body in found.items():
        url = PAGE_URL if "realistic" in name else f"https://www.example.com/{name}"
        extractors = [parse_html, extract_main_text, balanced.extract, fallback.extract]
        row = [per_call_us(partial(extract, body, url)) for extract in extractors]
        row += [per_call_us(partial(compare, body)) for compare in comparisons.values()]
        print(f"{name:30} {len(body) / 1024:5.0f}" + "".join(f" {value:>11.0f}" for value in row))
    text = extract_main_text(found["heavy news page"], "https://www.example.com/heavy").text
    print(f"\nheavy news page: {len(text)} characters of main text, first line: {text[:60]!r}")


if __name__ == "__main__":
    main()
