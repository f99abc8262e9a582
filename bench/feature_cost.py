"""What the tenacious-crawler features cost per page: crawls of the synthetic site, off vs on.

Issue 6's bar: validation, SimHash and the discovery hooks together add at most 15% CPU per page
to the crawl benchmark. This crawls the crawl benchmark's site (20,000 pages of ~20 KB on nginx,
politeness off) with those features off and on, alternating ``--rounds`` times so that a change
in the machine's load hits both alike, and prints the crawler's CPU per page (user + system,
from ``os.wait4``) for each run, the medians, and the difference.

- off: ``validate_pages``, ``near_duplicates`` and every discovery hook disabled;
- on:  validation, SimHash near-duplicates, sitemaps, feeds, pagination and archives enabled
  (the last three are off by default: they cost requests, and their per-page hooks are timed).

Everything else (products, search triggers, breakers) stays at its default in both.

    .venv/bin/python bench/feature_cost.py [--rounds 3] [--pages 20000]
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

BUDGET = 0.15
FEATURES = (
    "VALIDATE_PAGES", "NEAR_DUPLICATES", "DISCOVERY_SITEMAPS", "DISCOVERY_FEEDS",
    "DISCOVERY_PAGINATION", "DISCOVERY_ARCHIVES",
)  # fmt: skip


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--harvestman", type=Path, default=REPO / ".venv" / "bin" / "harvestman")
    return as_throughput_run(parser.parse_args())


def main() -> int:
    args = parse_args()
    params = SiteParams(args.pages, 1, 1, args.page_bytes, 20)
    site, manifest = load_or_generate(params, OUT)
    print(f"site      {describe(manifest)}")
    hosts: list[dict[str, object]] = manifest["hosts"]  # type: ignore[assignment]
    figures: dict[str, list[float]] = {"off": [], "on": []}
    with start_server([site / str(hosts[0]["dir"])], access_log=False) as server:
        for round_ in range(args.rounds):
            for mode in ("off", "on"):
                value = "true" if mode == "on" else "false"
                for name in FEATURES:
                    os.environ[f"HARVESTMAN_{name}"] = value
                per_page = cpu_per_page(args, server.ports, f"feature-cost-{mode}-{round_ + 1}")
                if per_page is None:
                    return 1
                figures[mode].append(per_page)
    off, on = statistics.median(figures["off"]), statistics.median(figures["on"])
    extra = on / off - 1
    print(f"median    off {off:.0f} µs/page, on {on:.0f} µs/page: {extra:+.1%} CPU per page")
    passed = extra <= BUDGET
    print(f"{'PASS' if passed else 'FAIL'}  features add <= {BUDGET:.0%} CPU per page")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
