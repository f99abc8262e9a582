"""What site parsers and main text cost per page in a crawl: the crawl benchmark's site, by mode.

Crawls the synthetic site of ``crawl_bench.py`` (one host on nginx, politeness off) with
``harvestman crawl`` in each mode, alternating ``--rounds`` times so that a change in the
machine's load hits all alike, and prints the crawler's CPU per page (user + system, from
``os.wait4``), the medians and the difference to ``none``:

- ``none``: no site parsers (``parsers_enabled`` off: no registry is built);
- ``unmatched``: a parser loaded (the tests' ``CourierParser``) whose host pattern matches no
  page of the site: the cost every page pays once parsers are loaded. Bar: ~0 (within noise);
- ``main_text``: ``extract_main_text`` on (trafilatura on every page, in a thread).

    .venv/bin/python bench/parser_cost.py [--rounds 3] [--pages 5000] [--modes none,unmatched]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from crawl_bench import OUT, REPO, as_throughput_run, cpu_per_page
from serve import start_server
from synthsite import SiteParams, describe, load_or_generate

MODES: dict[str, dict[str, str]] = {
    "none": {"HARVESTMAN_PARSERS_ENABLED": "false", "HARVESTMAN_EXTRACT_MAIN_TEXT": "false"},
    "unmatched": {
        "HARVESTMAN_PARSERS_ENABLED": "true",
        "HARVESTMAN_PARSERS": "siteparsers:CourierParser",
        "HARVESTMAN_EXTRACT_MAIN_TEXT": "false",
    },
    "main_text": {"HARVESTMAN_PARSERS_ENABLED": "false", "HARVESTMAN_EXTRACT_MAIN_TEXT": "true"},
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pages", type=int, default=5_000)
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument(
        "--modes", default=",".join(MODES), help="comma-separated, of " + ", ".join(MODES)
    )
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--harvestman", type=Path, default=REPO / ".venv" / "bin" / "harvestman")
    return as_throughput_run(parser.parse_args())


def main() -> int:
    args = parse_args()
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    unknown = set(modes) - set(MODES)
    if unknown:
        print(f"unknown modes: {', '.join(sorted(unknown))}")
        return 2
    params = SiteParams(args.pages, 1, 1, args.page_bytes, 20)
    site, manifest = load_or_generate(params, OUT)
    print(f"site      {describe(manifest)}")
    hosts: list[dict[str, object]] = manifest["hosts"]  # type: ignore[assignment]
    # The tests' parsers (siteparsers.py) are importable by the crawler.
    tests = str(REPO / "tests")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")]))
    figures: dict[str, list[float]] = {mode: [] for mode in modes}
    with start_server([site / str(hosts[0]["dir"])], access_log=False) as server:
        for round_ in range(args.rounds):
            for mode in modes:
                os.environ.pop("HARVESTMAN_PARSERS", None)
                os.environ.update(MODES[mode])
                per_page = cpu_per_page(args, server.ports, f"parser-cost-{mode}-{round_ + 1}")
                if per_page is None:
                    return 1
                figures[mode].append(per_page)
    base = statistics.median(figures[modes[0]])
    for mode in modes:
        median = statistics.median(figures[mode])
        print(f"median    {mode:9} {median:6.0f} µs/page ({median / base - 1:+.1%} vs {modes[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
