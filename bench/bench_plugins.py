"""Time what the site-parser registry adds around the parsers themselves, per page.

- a page whose host no parser handles (the cost every page pays once parsers are loaded);
- a trivial parser returning one record, on a str page and on a bytes page (decoded once by
  the registry), so the registry's own work shows: host lookup, validation and stamping of the
  records, stats;
- the test suite's ``CourierParser`` (a selectolax parse and a few queries) for scale;
- ``ParserRegistry.load()``: the scan of the installed distributions' entry points.

Run: ``.venv/bin/python bench/bench_plugins.py`` (about 5 s).
"""

from __future__ import annotations

import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from harvestman.extract.plugins import ParserRegistry, Record
from harvestman.parse import Page, parse_html
from siteparsers import CourierParser

ROOT = Path(__file__).parent.parent
URL = "https://www.riversidecourier.example/environment/2024/nov/18/thames-barrier"


class TrivialParser:
    name, version, hosts = "trivial", "1", ["*.riversidecourier.example"]

    def parse(self, page_html: str, url: str, page: Page) -> list[Record]:
        return [Record("x", {"a": 1, "b": "text", "c": [1, 2, 3]})]


def best_us(fn: Callable[[], object], number: int) -> float:
    runs = timeit.repeat(fn, number=number, repeat=5, timer=time.process_time)
    return min(runs) / number * 1e6  # CPU time: the machine is shared


def main() -> None:
    body = (ROOT / "tests" / "fixtures" / "maintext" / "news_article.html").read_bytes()
    text = body.decode()
    page = parse_html(body, URL)
    trivial = ParserRegistry([TrivialParser()])
    courier = ParserRegistry([CourierParser()])
    parser = CourierParser()
    cases = {
        "no parser for the host": (lambda: trivial.parse(body, "https://a.org/", page), 2000),
        "trivial parser, str page": (lambda: trivial.parse(text, URL, page), 2000),
        "trivial parser, bytes page": (lambda: trivial.parse(body, URL, page), 2000),
        "CourierParser alone": (lambda: parser.parse(text, URL, page), 500),
        "CourierParser via registry": (lambda: courier.parse(body, URL, page), 500),
    }
    for name, (fn, number) in cases.items():
        print(f"{name + ':':30} {best_us(fn, number):7.1f} µs")
    started = time.perf_counter()
    ParserRegistry.load()
    print(f"{'load() (entry-point scan):':30} {(time.perf_counter() - started) * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
