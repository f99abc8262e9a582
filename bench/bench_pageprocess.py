"""A page process's CPU per page, offline: the crawl benchmark's pages through its pipe.

Starts ``python -m harvestman.crawl.pageprocess`` as the crawler does (its spec: the default
settings, the text not kept), writes it the site's first ``--pages`` pages as the crawler
frames them (``page_frames``, a thread on its stdin) and reads its answers, for ``--pages``
and for ``--pages // 10``, alternately ``--rounds`` times. The difference of the two runs'
CPU (user + system, ``os.wait4``) over the pages between them is a page's cost without the
process's start-up. Analysis, channel and all: what the page process costs in a crawl that
sends it every page.

    .venv/bin/python bench/bench_pageprocess.py [--pages 5000] [--rounds 2]

Needs the site of ``crawl_bench.py`` (generated on its first run) under bench/out.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from multidict import CIMultiDict

from harvestman.config import Settings
from harvestman.crawl.analysis import AnalysisSpec
from harvestman.crawl.pageprocess import Frames, frame, page_frames

OUT = Path(__file__).resolve().parent / "out"


def pages_of_the_site(count: int) -> list[bytes]:
    sites = sorted(OUT.glob("synth-*p-1h-*"))
    if not sites:
        sys.exit("no site under bench/out: run bench/crawl_bench.py once")
    pages = sites[0] / "host-000" / "p"
    return [(pages / f"{number}.html").read_bytes() for number in range(1, count + 1)]


def cpu_of_a_run(bodies: list[bytes]) -> float:
    """CPU seconds of a page process that analyzed ``bodies`` (start-up included)."""
    spec = dataclasses.replace(AnalysisSpec.from_settings(Settings()), keep_text=False)
    process = subprocess.Popen(
        [sys.executable, "-m", "harvestman.crawl.pageprocess"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    requests, replies = process.stdin, process.stdout

    def write() -> None:
        requests.write(frame(spec))
        headers = CIMultiDict({"Server": "nginx", "Content-Type": "text/html"})
        for number, body in enumerate(bodies, 1):
            url = f"http://127.0.0.1:8080/p/{number}.html"
            sent = time.monotonic()
            requests.writelines(page_frames(number, sent, url, 200, headers, body, None))
        requests.close()

    writing = threading.Thread(target=write)
    writing.start()
    frames, answers = Frames(), 0
    while chunk := replies.read1(1 << 16):
        frames.feed(chunk)
        while frames.pop() is not None:
            answers += 1
    writing.join()
    _, status, usage = os.wait4(process.pid, 0)
    assert status == 0, status
    assert answers == len(bodies), answers
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    bodies = pages_of_the_site(args.pages)
    few = args.pages // 10
    per_page = []
    for _ in range(args.rounds):
        small, large = cpu_of_a_run(bodies[:few]), cpu_of_a_run(bodies)
        per_page.append((large - small) / (args.pages - few) * 1e6)
        print(f"{few} pages {small:.2f} s, {args.pages} pages {large:.2f} s:", end=" ")
        print(f"{per_page[-1]:.0f} µs a page")
    print(f"median {statistics.median(per_page):.0f} µs a page (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
