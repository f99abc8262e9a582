"""Harvestman against a minimal crawler, Scrapy and Crawlee on the crawl benchmark's site.

One sitting on 127.0.0.1: the synthetic site of ``bench/crawl_bench.py`` (20,000 pages of
~20 KB, 20-40 links each, a robots.txt; generated once and cached under ``bench/out``) served by
nginx, crawled by

- **harvestman**: ``harvestman crawl`` exactly as ``crawl_bench.py`` runs it (default feature
  settings, ``--delay 0 --per-host-concurrency 64 --concurrency 64 --max-depth 20``, everything
  stored in SQLite, ``--output``);
- **minimal**: ``bench/peers/minimal.py`` (aiohttp + selectolax + Protego, a seen set, nothing
  stored), in the project's virtualenv;
- **scrapy**: ``bench/peers/scrapy_spider.py``, Scrapy 2.x in ``bench/out/venvs/scrapy``;
- **crawlee**: ``bench/peers/crawlee_crawler.py``, Crawlee for Python 1.x (ParselCrawler, memory
  storage) in ``bench/out/venvs/crawlee``.

The peers' virtualenvs are made and filled from PyPI on first use. Each crawler is a child
process measured with ``os.wait4`` (user + system CPU, its waited children's included) and
wall time, its process tree's peak RSS sampled from /proc (``bench/proctree.py``); the crawlers
run interleaved, ``--rounds`` times, the order turning by one each round. Every run must find
exactly the manifest's pages (and blocked URLs); the table gives medians, then each round's
figures and Harvestman's ratios to each peer.

    python bench/compare.py                     # 3 rounds of the four crawlers
    python bench/compare.py --large --frontier  # also the 200,000-page and frontier runs

With ``--large`` each round ends with Harvestman on the 200,000-page site (10 hosts), so that
its median and the 20,000-page one come from the same stretch of the sitting.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from crawl_bench import (
    OUT,
    REPO,
    Measured,
    default_harvestman,
    harvestman_argv,
    output_urls,
    read_store,
    run_measured,
)
from serve import start_server
from synthsite import SiteParams, describe, load_or_generate

PEERS = REPO / "bench" / "peers"
VENVS = OUT / "venvs"
CRAWLERS = ("harvestman", "minimal", "scrapy", "crawlee", "harvestman-inline")
DEFAULT_CRAWLERS = CRAWLERS[:4]
# What each peer's virtualenv holds (pip requirement) and the distribution named in the table.
PEER_PACKAGES = {
    "scrapy": ("scrapy>=2,<3", "scrapy"),
    "crawlee": ("crawlee[parsel]>=1,<2", "crawlee"),
}


@dataclass
class Run:
    """One crawler's run: what ``os.wait4`` said and what it found against the manifest."""

    crawler: str
    measured: Measured
    pages: int
    blocked: int
    exact: bool
    note: str

    @property
    def rate(self) -> float:
        return self.pages / self.measured.wall if self.measured.wall else 0.0


def peer_python(name: str) -> Path:
    return VENVS / name / "bin" / "python"


def ensure_venv(name: str) -> str:
    """The peer's virtualenv, made and filled from PyPI if missing; returns its version."""
    requirement, distribution = PEER_PACKAGES[name]
    python = peer_python(name)
    probe = [
        str(python),
        "-c",
        f"import importlib.metadata as m; print(m.version({distribution!r}))",
    ]
    if python.exists():
        found = subprocess.run(probe, capture_output=True, text=True, check=False)
        if found.returncode == 0:
            return found.stdout.strip()
    print(f"installing {requirement} into {python.parents[1].relative_to(REPO)} ...", flush=True)
    shutil.rmtree(VENVS / name, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENVS / name)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", requirement], check=True)
    return subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("aiohttp", "selectolax", "protego")}


def harvestman_env() -> dict[str, str]:
    """The environment of the Harvestman child: this checkout's ``src`` first on the path."""
    path = os.environ.get("PYTHONPATH")
    src = str(REPO / "src")
    return {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{path}" if path else src}


def command_for(
    crawler: str, args: argparse.Namespace, seeds: list[str], run: Path
) -> tuple[list[str], dict[str, str] | None]:
    common = ["--concurrency", "64", "--max-depth", str(args.max_depth)]
    if crawler.startswith("harvestman"):
        command = [
            *harvestman_argv(args.harvestman),
            "crawl",
            *seeds,
            "--db",
            str(run / "harvestman.db"),
            "--delay",
            "0",
            "--per-host-concurrency",
            "64",
            *common,
            "--no-progress",
            "--output",
            str(run / "pages.jsonl"),
        ]
        env = harvestman_env()
        if crawler == "harvestman-inline":  # without page processes, for a before/after
            env["HARVESTMAN_PARSE_PROCESSES"] = "0"
        return command, env
    script = {
        "minimal": "minimal.py",
        "scrapy": "scrapy_spider.py",
        "crawlee": "crawlee_crawler.py",
    }
    python = sys.executable if crawler == "minimal" else str(peer_python(crawler))
    report = ["--report", str(run / "report.json")]
    return [python, str(PEERS / script[crawler]), *seeds, *common, *report], None


def page_path(url: str) -> str:
    """The path of ``url`` as the manifest names pages (fragment and ``utm_*`` dropped)."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = urlencode([(k, v) for k, v in pairs if not k.startswith("utm_")])
    return urlunsplit(("", "", parts.path or "/", query, ""))


def check(crawler: str, run: Path, manifest: dict[str, object]) -> tuple[int, int, bool, str]:
    """(pages found, URLs blocked, exactly the manifest's, a note on any difference)."""
    hosts: list[dict[str, list[str]]] = manifest["hosts"]  # type: ignore[assignment]
    allowed = {path for host in hosts for path in host["allowed_paths"]}
    denied = {path for host in hosts for path in host["denied_paths"]}
    if crawler.startswith("harvestman"):
        statuses, _, completed = read_store(run / "harvestman.db")
        written = output_urls(run / "pages.jsonl")
        blocked = statuses.get("blocked", 0)
        others = {k: v for k, v in statuses.items() if k not in ("completed", "blocked") and v}
        found = [page_path(url) for url in completed]
        exact_output = sorted(page_path(url) for url in written) == sorted(allowed)
        note = "" if exact_output else f"--output holds {len(written)} lines"
        note += f" other statuses {others}" if others else ""
        blocked_ok = blocked == len(denied)
    else:
        report = json.loads((run / "report.json").read_text())
        found = [page_path(url) for url in report["pages"]]
        blocked_urls = report["blocked"]
        blocked = blocked_urls if isinstance(blocked_urls, int) else len(blocked_urls)
        note, others = "", {}
        exact_output = True
        if isinstance(blocked_urls, int):  # Scrapy's statistics give a count only
            blocked_ok = blocked == len(denied)
        else:
            blocked_ok = {page_path(url) for url in blocked_urls} == denied
    duplicates = len(found) - len(set(found))
    missing, unexpected = allowed - set(found), set(found) - allowed
    if duplicates or missing or unexpected:
        note += (
            f" {duplicates} fetched twice, missing {sorted(missing)[:3]} ({len(missing)}),"
            f" unexpected {sorted(unexpected)[:3]} ({len(unexpected)})"
        )
    if not blocked_ok:
        note += f" blocked {blocked} / expected {len(denied)}"
    exact = not (duplicates or missing or unexpected or others) and blocked_ok and exact_output
    return len(set(found) & allowed), blocked, exact, note.strip()


def phases(access_log: Path | None, started: float, wall: float) -> str:
    """Where a run's wall time went, from the server's access log: before its first request
    (start-up, robots.txt), from the first request to the last, and from the last to its exit."""
    if access_log is None or not access_log.exists():
        return "no access log"
    stamps = []
    for line in access_log.read_text().splitlines():
        stamp = float(line.split(" ", 1)[0])
        if stamp >= started:
            stamps.append(stamp)
    if len(stamps) < 2:
        return f"{len(stamps)} request(s) logged"
    first, last = min(stamps), max(stamps)
    return (
        f"start-up {first - started:.2f} s, requests {last - first:.2f} s "
        f"({len(stamps) / (last - first):,.0f}/s), end {started + wall - last:.2f} s"
    )


def crawl_once(
    crawler: str,
    args: argparse.Namespace,
    seeds: list[str],
    manifest: dict[str, object],
    tag: str,
    access_log: Path | None,
) -> Run:
    run = OUT / "runs" / "compare" / f"{crawler}-{tag}"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    command, env = command_for(crawler, args, seeds, run)
    started = time.time()
    measured = run_measured(command, run / "crawler.log", args.timeout, env=env)
    if measured.returncode != 0:
        tail = (run / "crawler.log").read_text(errors="replace").splitlines()[-5:]
        print(f"  {crawler} exited with {measured.returncode}: {' | '.join(tail)}")
    try:
        pages, blocked, exact, note = check(crawler, run, manifest)
    except (OSError, ValueError, KeyError) as exc:
        pages, blocked, exact, note = 0, 0, False, f"no result: {exc}"
    result = Run(crawler, measured, pages, blocked, exact and measured.returncode == 0, note)
    print(
        f"  {tag:8} {crawler:11} {result.rate:7.0f} pages/s  wall {measured.wall:6.1f} s  "
        f"CPU {measured.cpu:6.1f} s  RSS {measured.max_rss_mb:4.0f} MB  "
        f"pages {pages}  blocked {blocked}  {'exact' if result.exact else 'NOT EXACT'}  "
        f"load {os.getloadavg()[0]:.1f}  {note}",
        flush=True,
    )
    print(f"           CPU by thread: {measured.cpu_breakdown()}", flush=True)
    print(f"           phases: {phases(access_log, started, measured.wall)}", flush=True)
    return result


def print_table(runs: dict[str, list[Run]], labels: dict[str, str]) -> None:
    if not runs:
        return
    print()
    print("| crawler | pages/s | CPU s | peak RSS | exact |")
    print("|---|---:|---:|---:|---|")
    medians: dict[str, tuple[float, float, float]] = {}
    for crawler, done in runs.items():
        rate = statistics.median(run.rate for run in done)
        cpu = statistics.median(run.measured.cpu for run in done)
        rss = statistics.median(run.measured.max_rss_mb for run in done)
        medians[crawler] = (rate, cpu, rss)
        exact = f"{sum(run.exact for run in done)} / {len(done)} runs"
        print(f"| {labels[crawler]} | {rate:,.0f} | {cpu:.1f} | {rss:.0f} MB | {exact} |")
    if "harvestman" not in medians:
        return
    rate, cpu, rss = medians["harvestman"]
    print("\nratios, Harvestman's median over the peer's:")
    for crawler, (peer_rate, peer_cpu, peer_rss) in medians.items():
        if crawler != "harvestman":
            print(
                f"harvestman vs {crawler:8} pages/s x{rate / peer_rate:.2f}, "
                f"CPU x{cpu / peer_cpu:.2f}, peak RSS x{rss / peer_rss:.2f}"
            )


def run_crawl_bench(args: argparse.Namespace, *extra: str) -> dict[str, str]:
    """``crawl_bench.py`` with ``extra`` arguments and this run's ``--harvestman``; its
    output is printed as it comes, and its ``name   value`` lines are returned by name."""
    command = [sys.executable, str(REPO / "bench" / "crawl_bench.py"), *extra]
    command += ["--harvestman", args.harvestman, "--timeout", str(args.timeout)]
    print(f"\n$ {shlex.join(command)}", flush=True)
    figures: dict[str, str] = {}
    with subprocess.Popen(
        command, env=harvestman_env(), stdout=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            print(line, end="", flush=True)
            name, _, value = line.partition("  ")
            if value:
                figures.setdefault(name.strip(), value.strip())
    return figures


@dataclass
class LargeRun:
    """One 200,000-page run of Harvestman, as ``crawl_bench.py`` printed it."""

    rate: float
    rss_mb: float
    exact: bool

    @classmethod
    def of(cls, figures: dict[str, str]) -> LargeRun:
        def number(name: str) -> float:
            try:
                return float(figures.get(name, "0").split()[0].replace(",", ""))
            except ValueError:
                return 0.0

        exact = any("exact counts: yes" in value for value in figures.values())
        return cls(number("pages/s"), number("peak RSS"), exact)


def large_run(args: argparse.Namespace) -> LargeRun:
    run = LargeRun.of(run_crawl_bench(args, "--hosts", "10", "--pages", "200000", "--throughput"))
    print(
        f"  200,000 pages  {run.rate:7.0f} pages/s  RSS {run.rss_mb:4.0f} MB  "
        f"{'exact' if run.exact else 'NOT EXACT'}  load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    return run


def print_large(large: list[LargeRun], runs: dict[str, list[Run]]) -> None:
    """The 200,000-page runs' median against Harvestman's 20,000-page median."""
    rate = statistics.median(run.rate for run in large)
    rss = max(run.rss_mb for run in large)
    line = (
        f"200,000 pages over 10 hosts: {', '.join(f'{run.rate:,.0f}' for run in large)} "
        f"pages/s, median {rate:,.0f}; peak RSS at most {rss:.0f} MB; "
        f"{sum(run.exact for run in large)} / {len(large)} runs exact"
    )
    if runs.get("harvestman"):
        small = statistics.median(run.rate for run in runs["harvestman"])
        line += f"; x{rate / small:.2f} Harvestman's 20,000-page median ({small:,.0f})"
    print(line, flush=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument("--max-depth", type=int, default=20)
    parser.add_argument(
        "--only",
        default=",".join(DEFAULT_CRAWLERS),
        help=f"comma-separated, of {','.join(CRAWLERS)}",
    )
    parser.add_argument(
        "--harvestman",
        default=default_harvestman(),
        help="Harvestman's command (PYTHONPATH gets this checkout's src)",
    )
    parser.add_argument("--timeout", type=float, default=1200.0, help="interrupt a crawl after")
    parser.add_argument("--server", choices=["auto", "nginx", "python"], default="auto")
    parser.add_argument(
        "--large",
        action="store_true",
        help="each round also runs Harvestman on 200,000 pages over 10 hosts",
    )
    parser.add_argument(
        "--frontier",
        type=int,
        nargs="?",
        const=2_000_000,
        default=0,
        metavar="N",
        help="then Harvestman seeded with N URLs (2,000,000) and with none, --max-pages 5000",
    )
    parser.add_argument("--no-table", action="store_true", help="skip the four-crawler rounds")
    args = parser.parse_args()
    args.crawlers = [name for name in args.only.split(",") if name]
    unknown = set(args.crawlers) - set(CRAWLERS)
    if unknown:
        parser.error(f"--only: unknown {sorted(unknown)}")
    if args.no_table:  # the rounds run the 200,000-page crawl (--large) only
        args.crawlers = []
    return args


def main() -> int:
    args = parse_args()
    print(f"started          {time.strftime('%Y-%m-%d %H:%M:%S')}, load {os.getloadavg()}")
    if not args.no_table or args.large:
        compare(args)
    if args.frontier:
        for extra in (0, args.frontier):
            run_crawl_bench(
                args, "--hosts", "10", "--pages", "200000", "--frontier", str(extra or 1)
            )
    print(f"finished         {time.strftime('%Y-%m-%d %H:%M:%S')}, load {os.getloadavg()}")
    return 0


def compare(args: argparse.Namespace) -> bool:
    labels = {
        "harvestman": "Harvestman (default settings, everything stored)",
        "harvestman-inline": "Harvestman, parse_processes 0 (pages analyzed inline)",
    }
    found = versions()
    labels["minimal"] = (
        f"minimal (aiohttp {found['aiohttp']} + selectolax {found['selectolax']}"
        f" + Protego {found['protego']}, stores nothing)"
    )
    for name in ("scrapy", "crawlee"):
        if name in args.crawlers:
            version = ensure_venv(name)
            labels[name] = (
                f"Scrapy {version}"
                if name == "scrapy"
                else f"Crawlee {version} (ParselCrawler, memory storage)"
            )
    params = SiteParams(args.pages, 1, args.seed, args.page_bytes, args.max_depth)
    site, manifest = load_or_generate(params, OUT)
    print(f"site             {describe(manifest)}")
    hosts: list[dict[str, object]] = manifest["hosts"]  # type: ignore[assignment]
    with start_server(
        [site / str(host["dir"]) for host in hosts], access_log=True, prefer=args.server
    ) as server:
        seeds = [f"http://127.0.0.1:{port}/" for port in server.ports]
        print(f"server           {server.name} on {', '.join(seeds)}")
        print(f"harvestman       {args.harvestman} (PYTHONPATH {REPO / 'src'})")
        runs: dict[str, list[Run]] = {name: [] for name in args.crawlers}
        large: list[LargeRun] = []
        for round_ in range(args.rounds):
            turn = round_ % max(1, len(args.crawlers))
            order = args.crawlers[turn:] + args.crawlers[:turn]
            print(f"round {round_ + 1} of {args.rounds}: {', '.join(order)}", flush=True)
            for crawler in order:
                runs[crawler].append(
                    crawl_once(
                        crawler, args, seeds, manifest, f"round-{round_ + 1}", server.access_log
                    )
                )
            if args.large:
                large.append(large_run(args))
            if round_ + 1 < args.rounds:  # so that a sitting cut short still has its medians
                print(f"medians after {round_ + 1} round(s):", end="")
                print_table(runs, labels)
                if large:
                    print_large(large, runs)
    print(f"medians of {args.rounds} round(s):", end="")
    print_table(runs, labels)
    if large:
        print_large(large, runs)
    return all(run.exact for done in runs.values() for run in done) and all(
        run.exact for run in large
    )


if __name__ == "__main__":
    # A plain SIGTERM would skip the finally blocks that stop nginx.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
