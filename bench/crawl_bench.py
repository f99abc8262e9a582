"""End-to-end crawl benchmark: a synthetic site on nginx, crawled by ``harvestman crawl``.

Two runs, both on 127.0.0.1 only:

- **throughput** (default): one host of 20,000 pages of ~20 KB, politeness off
  (``--delay 0 --per-host-concurrency 64 --concurrency 64``). Bar: >= 1,000 pages/s, exactly the
  expected pages completed and URLs blocked, a line in ``--output`` for each expected page and
  nothing else (not the guessed /sitemap.xml), peak RSS of the crawler < 250 MB.
- **politeness** (``--hosts 200``, delay 1 s unless ``--delay``): 200 hosts seeded at once, one
  request at a time per host, bounded by ``--max-pages``. Bar: steady-state pages/s after the
  last robots.txt is served >= 90 % of hosts / delay, and no two requests to one host closer
  than the delay (from nginx's ``$msec`` access log).

``--hosts K --throughput`` is the throughput run over K hosts (delay 0, same checks);
``--frontier N`` seeds N more URLs (404s) from a file and reports the crawler's peak RSS after
``--max-pages`` fetches.

``--sitemaps`` gives every host a ``/sitemap.xml``: an index of four sitemaps listing all its
pages (~570 KB each on the 200,000-page site), written once the server's ports are known and
removed after the run; ``--sitemap-urls N`` lists N URLs over all hosts instead (the pages, then
404s; at most 50,000 a sitemap), a frontier filled from sitemaps, reported like ``--frontier``
after ``--max-pages`` (default 20,000) fetches. The bar for both: peak RSS of the tree < 200 MB.

The site is generated once per parameter set and cached under ``bench/out/``; each run starts
from a fresh database in ``bench/out/runs/<mode>/``. The crawler runs as a child process and is
measured with ``os.wait4`` (wall time, user + system CPU of the crawler and the children it
waited for) and sampled from /proc (peak RSS of its whole process tree, CPU by thread).

    python bench/crawl_bench.py
    python bench/crawl_bench.py --hosts 200 --delay 1
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import os
import pstats
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from proctree import TreeSampler, TreeUsage
from serve import StaticServer, start_server
from synthsite import SiteParams, describe, load_or_generate, remove_sitemaps, write_sitemaps

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
MIN_PAGES_PER_SECOND = 1000
MAX_RSS_MB = 250
MAX_RSS_SITEMAPS_MB = 200
POLITENESS_SHARE = 0.9


@dataclass
class Measured:
    """What ``os.wait4`` says about the finished crawler, and its process tree's usage.

    ``user`` and ``system`` include the children the crawler waited for (its page processes);
    ``max_rss_mb`` is the peak of the tree's summed RSS (``bench/proctree.py``), or the
    crawler's own ``ru_maxrss`` if that is larger (a peak between two samples).
    """

    returncode: int
    wall: float
    user: float
    system: float
    max_rss_mb: float
    tree: TreeUsage = field(default_factory=TreeUsage)

    def cpu_breakdown(self) -> str:
        """The CPU by thread of the crawler's process and of its child processes."""
        parts = [f"{name} {cpu:.1f}" for name, cpu in sorted(
            self.tree.threads.items(), key=lambda item: -item[1]) if cpu >= 0.05]  # fmt: skip
        children = sorted(self.tree.descendants.values(), key=lambda item: -item[1])
        parts += [f"child {name} {cpu:.1f}" for name, cpu in children if cpu >= 0.05]
        return ", ".join(parts)

    @property
    def cpu(self) -> float:
        return self.user + self.system


def check_server(server: StaticServer, site: Path, hosts: list[dict[str, object]]) -> int:
    """GET a few files from the first hosts and compare them with the disk; returns requests."""
    requests = 0
    for port, host in list(zip(server.ports, hosts, strict=True))[:3]:
        root = site / str(host["dir"])
        for path, file in (
            ("/", "index.html"),
            ("/robots.txt", "robots.txt"),
            ("/p/1.html", "p/1.html"),
            ("/private/0.html", "private/0.html"),
        ):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
                body = response.read()
            requests += 1
            if response.status != 200 or body != (root / file).read_bytes():
                raise RuntimeError(f"127.0.0.1:{port}{path} does not serve {root / file}")
    return requests


def default_harvestman() -> str:
    """The crawler's command: the repository's ``.venv/bin/harvestman``, else this Python's
    ``-m harvestman.cli`` (a worktree, with ``PYTHONPATH`` pointing at its ``src``)."""
    binary = REPO / ".venv" / "bin" / "harvestman"
    return str(binary) if binary.exists() else f"{sys.executable} -m harvestman.cli"


def harvestman_argv(harvestman: Path | str) -> list[str]:
    """``--harvestman`` as argv: a path is one word, a string a shell-like command."""
    return [str(harvestman)] if isinstance(harvestman, Path) else shlex.split(harvestman)


def frontier_urls(ports: list[int], count: int) -> Iterator[str]:
    """``count`` URLs spread over the hosts that no page links to (each a cheap 404)."""
    for n in range(count):
        yield f"http://127.0.0.1:{ports[n % len(ports)]}/frontier/{n}.html"


def crawler_command(args: argparse.Namespace, ports: list[int], db: Path, run: Path) -> list[str]:
    seeds = [f"http://127.0.0.1:{port}/" for port in ports]
    command = [*harvestman_argv(args.harvestman), "crawl"]
    extra = getattr(args, "frontier", 0)
    if args.seeds_file or extra:
        seeds_file = run / "seeds.txt"
        with seeds_file.open("w") as out:
            out.writelines(f"{seed}\n" for seed in seeds)
            out.writelines(f"{url}\n" for url in frontier_urls(ports, extra))
        command += ["--seeds-file", str(seeds_file)]
    else:
        command += seeds
    command += [
        "--db",
        str(db),
        "--delay",
        f"{args.delay:g}",
        "--per-host-concurrency",
        str(args.per_host_concurrency),
        "--concurrency",
        str(args.concurrency),
        "--max-depth",
        str(args.max_depth),
        "--no-progress",
    ]
    if args.max_pages:
        command += ["--max-pages", str(args.max_pages)]
    return command


def as_throughput_run(args: argparse.Namespace) -> argparse.Namespace:
    """Fill what ``crawler_command`` reads as this benchmark's throughput run does (one host,
    politeness off), for the scripts that crawl the same site to compare settings."""
    args.delay, args.per_host_concurrency, args.concurrency = 0.0, 64, 64
    args.max_depth, args.max_pages, args.seeds_file = 20, 0, False
    return args


def cpu_per_page(args: argparse.Namespace, ports: list[int], name: str) -> float | None:
    """Crawl once from a fresh store in ``runs/<name>`` and print the crawler's CPU per page
    (µs); None when the crawler failed. For the scripts that compare settings on this site."""
    run = OUT / "runs" / name
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    command = crawler_command(args, ports, run / "harvestman.db", run)
    measured = run_measured(command, run / "crawler.log", args.timeout)
    if measured.returncode != 0:
        print(f"crawler exited with {measured.returncode}: see {run / 'crawler.log'}")
        return None
    per_page = measured.cpu / args.pages * 1e6
    print(
        f"{name:22} CPU {measured.cpu:5.1f} s = {per_page:6.0f} µs/page, "
        f"wall {measured.wall:5.1f} s, load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    return per_page


def run_measured(
    command: list[str], log: Path, timeout: float, env: dict[str, str] | None = None
) -> Measured:
    """Run the crawler to its end (SIGINT after ``timeout``, SIGKILL 15 s later)."""
    with log.open("wb") as output:
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=env,
        )

        def stop() -> None:
            print(f"timeout after {timeout:g} s: interrupting the crawler", flush=True)
            process.send_signal(signal.SIGINT)
            time.sleep(15)
            if process.returncode is None:
                process.kill()

        timer = threading.Timer(timeout, stop)
        timer.daemon = True
        timer.start()
        sampler = TreeSampler(process.pid).start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
            tree = sampler.stop()
        wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    max_rss = max(usage.ru_maxrss / 1024, tree.peak_rss_mb)
    return Measured(process.returncode, wall, usage.ru_utime, usage.ru_stime, max_rss, tree)


def read_store(db: Path) -> tuple[dict[str, int], int, list[str]]:
    """(URL count per status, crawled_pages rows, completed URLs) from the crawler's SQLite."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        statuses = dict(
            connection.execute(
                "SELECT status, COUNT(*) FROM urls WHERE kind = 'page' GROUP BY status"
            )
        )
        (pages,) = connection.execute(
            "SELECT COUNT(*) FROM crawled_pages JOIN urls USING (crawl_id, url_hash)"
            " WHERE urls.kind = 'page'"
        ).fetchone()
        completed = [
            url
            for (url,) in connection.execute(
                "SELECT url FROM urls WHERE status = 'completed' AND kind = 'page'"
            )
        ]
    return statuses, pages, completed


@dataclass
class Politeness:
    """Figures from the server's access log (see ``politeness_figures``)."""

    rate: float  # page requests per second after the last robots.txt was served
    counted: int  # page requests in that window
    window: float  # seconds from the last robots.txt to the last request
    gaps: list[float]  # sorted spacings between consecutive page requests to one host
    per_port: dict[int, int]  # page requests per host

    def gap_percentile(self, share: float) -> float:
        if not self.gaps:
            return float("inf")
        return self.gaps[min(len(self.gaps) - 1, int(share * len(self.gaps)))]


def politeness_figures(access_log: Path, since: float) -> Politeness:
    """Read the ``$msec $server_port $status $request_uri`` log, ignoring lines before ``since``.

    robots.txt requests only set the start of the steady window; the gaps are between page
    requests (robots.txt excluded) to one port.
    """
    robots: list[float] = []
    per_port: dict[int, list[float]] = defaultdict(list)
    for line in access_log.read_text().splitlines():
        stamp, port, _status, uri = line.split(" ", 3)
        moment = float(stamp)
        if moment < since:
            continue
        if uri == "/robots.txt":
            robots.append(moment)
        else:
            per_port[int(port)].append(moment)
    start = max(robots, default=since)
    steady = sorted(m for times in per_port.values() for m in times if m > start)
    window = steady[-1] - start if steady else 0.0
    gaps = sorted(
        b - a for times in per_port.values() for a, b in itertools.pairwise(sorted(times))
    )
    return Politeness(
        rate=len(steady) / window if window > 0 else 0.0,
        counted=len(steady),
        window=window,
        gaps=gaps,
        per_port={port: len(times) for port, times in per_port.items()},
    )


def diff_paths(completed: list[str], expected: set[str], limit: int = 5) -> str:
    found = {urlsplit(url)._replace(scheme="", netloc="").geturl() or "/" for url in completed}
    missing = sorted(expected - found)[:limit]
    unexpected = sorted(found - expected)[:limit]
    return f"missing {missing} unexpected {unexpected}"


def verdict(checks: dict[str, bool]) -> bool:
    passed = all(checks.values())
    details = "; ".join(f"{name}: {'yes' if ok else 'NO'}" for name, ok in checks.items())
    print(f"{'PASS' if passed else 'FAIL'}  {details}")
    return passed


def output_urls(output: Path) -> list[str]:
    """The URLs of the lines ``crawl --output`` wrote (none when it wrote no file)."""
    if not output.exists():
        return []
    return [json.loads(line)["url"] for line in output.read_bytes().splitlines()]


def report_throughput(
    measured: Measured,
    server_cpu: float,
    db: Path,
    manifest: dict[str, object],
    output: Path,
    rss_bar: float = MAX_RSS_MB,
) -> bool:
    statuses, page_rows, completed = read_store(db)
    written = output_urls(output)
    expected_allowed = int(manifest["expected_allowed"])  # type: ignore[call-overload]
    expected_denied = int(manifest["expected_denied"])  # type: ignore[call-overload]
    done = statuses.get("completed", 0)
    blocked = statuses.get("blocked", 0)
    others = {k: v for k, v in statuses.items() if k not in ("completed", "blocked") and v}
    rate = done / measured.wall if measured.wall else 0.0
    print(f"pages            {done}  (crawled_pages rows: {page_rows})")
    print(f"wall             {measured.wall:.1f} s")
    print(f"pages/s          {rate:.0f}")
    print(
        f"crawler CPU      {measured.cpu:.1f} s (user {measured.user:.1f} + sys "
        f"{measured.system:.1f}), {measured.cpu / measured.wall:.0%} of a core"
    )
    print(f"CPU by thread    {measured.cpu_breakdown()}")
    print(f"server CPU       {server_cpu:.1f} s")
    print(
        f"peak RSS         {measured.max_rss_mb:.0f} MB"
        f" (process tree, {measured.tree.max_processes} process(es) at most)"
    )
    print(f"completed        {done} / expected {expected_allowed}")
    print(f"blocked          {blocked} / expected {expected_denied}")
    print(f"other statuses   {others or 'none'}")
    print(f"--output lines   {len(written)} / expected {expected_allowed}")
    exact = done == expected_allowed and blocked == expected_denied and not others
    hosts = manifest["hosts"]
    allowed = {p for host in hosts for p in host["allowed_paths"]}  # type: ignore[attr-defined]
    if done != expected_allowed:
        print(f"difference       {diff_paths(completed, allowed)}")
    output_exact = len(written) == len(set(written)) == expected_allowed
    if not output_exact:
        print(f"--output differs {diff_paths(written, allowed)}")
    return verdict(
        {
            f"pages/s >= {MIN_PAGES_PER_SECOND}": rate >= MIN_PAGES_PER_SECOND,
            "exact counts": exact,
            "--output holds the pages": output_exact,
            f"RSS < {rss_bar:g} MB": measured.max_rss_mb < rss_bar,
            "crawler exit 0": measured.returncode == 0,
        }
    )


def report_politeness(
    measured: Measured,
    server_cpu: float,
    db: Path,
    access_log: Path,
    since: float,
    hosts: int,
    delay: float,
) -> bool:
    statuses, page_rows, _ = read_store(db)
    figures = politeness_figures(access_log, since)
    bound = hosts / delay
    # nginx stamps at millisecond resolution when the response is logged
    too_close = sum(gap < delay - 0.002 for gap in figures.gaps)
    print(f"URLs by status   {statuses}  (crawled_pages rows: {page_rows})")
    print(f"wall             {measured.wall:.1f} s")
    print(f"crawler CPU      {measured.cpu:.1f} s, server CPU {server_cpu:.1f} s")
    print(f"peak RSS         {measured.max_rss_mb:.0f} MB")
    print(f"hosts crawled    {len(figures.per_port)} / {hosts}")
    print(
        f"steady pages/s   {figures.rate:.1f} ({figures.counted} pages in {figures.window:.1f} s "
        f"after the last robots.txt) vs bound {bound:.0f} = {figures.rate / bound:.0%}"
    )
    print(
        f"per-host spacing min {figures.gap_percentile(0):.3f} s, "
        f"p1 {figures.gap_percentile(0.01):.3f} s, median {figures.gap_percentile(0.5):.3f} s; "
        f"{too_close} of {len(figures.gaps)} gaps under {delay:g} s"
    )
    return verdict(
        {
            f">= {POLITENESS_SHARE:.0%} of bound": figures.rate >= POLITENESS_SHARE * bound,
            f"spacing >= {delay:g} s": too_close == 0,
            f"RSS < {MAX_RSS_MB} MB": measured.max_rss_mb < MAX_RSS_MB,
            "crawler exit 0": measured.returncode == 0,
        }
    )


def report_frontier(measured: Measured, db: Path, args: argparse.Namespace) -> bool:
    """The frontier run: how big the frontier was and the crawler's peak RSS."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        statuses = dict(connection.execute("SELECT status, COUNT(*) FROM urls GROUP BY status"))
        kinds = dict(connection.execute("SELECT kind, COUNT(*) FROM urls GROUP BY kind"))
    print(f"URLs by status   {statuses}  (frontier: {sum(statuses.values())} URLs)")
    print(f"URLs by kind     {kinds}")
    if args.sitemap_urls:
        print(f"listed           {args.sitemap_urls} URLs in the hosts' sitemaps")
    else:
        print(f"seeded           {args.frontier + args.hosts} URLs from --seeds-file")
    completed = statuses.get("completed", 0)
    print(f"wall             {measured.wall:.1f} s (seeding included)")
    print(f"pages/s          {completed / measured.wall if measured.wall else 0:.0f}")
    print(f"crawler CPU      {measured.cpu:.1f} s")
    print(f"peak RSS         {measured.max_rss_mb:.0f} MB")
    bar = MAX_RSS_SITEMAPS_MB if args.sitemap_urls else MAX_RSS_MB
    return verdict(
        {
            f"RSS < {bar} MB": measured.max_rss_mb < bar,
            "crawler exit 0": measured.returncode == 0,
        }
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1, help="1: throughput run; >1: politeness")
    parser.add_argument("--pages", type=int, default=20_000, help="pages in all hosts together")
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-depth", type=int, default=20)
    parser.add_argument("--delay", type=float, default=None, help="default 0, or 1 with --hosts")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--per-host-concurrency", type=int, default=None, help="64, or 1")
    parser.add_argument("--max-pages", type=int, default=None, help="politeness default 8000")
    parser.add_argument("--timeout", type=float, default=600.0, help="interrupt the crawl after")
    parser.add_argument("--server", choices=["auto", "nginx", "python"], default="auto")
    parser.add_argument("--seeds-file", action="store_true", help="pass seeds via --seeds-file")
    parser.add_argument(
        "--harvestman",
        default=default_harvestman(),
        help="the crawler's command (default .venv/bin/harvestman, else python -m harvestman.cli)",
    )
    parser.add_argument(
        "--throughput",
        action="store_true",
        help="with --hosts > 1: the throughput run over all hosts (delay 0), not politeness",
    )
    parser.add_argument(
        "--frontier",
        type=int,
        default=0,
        metavar="N",
        help="seed N more URLs (404s on the hosts) from a file; stops at --max-pages (5000)",
    )
    parser.add_argument(
        "--sitemaps", action="store_true", help="each host lists its pages in a sitemap index"
    )
    parser.add_argument(
        "--sitemap-urls",
        type=int,
        default=0,
        metavar="N",
        help="the hosts' sitemaps list N URLs in all (pages, then 404s); --max-pages 20000",
    )
    parser.add_argument("--serve-only", action="store_true", help="serve until Ctrl-C, no crawl")
    parser.add_argument(
        "--profile", action="store_true", help="run the crawler under cProfile (slower)"
    )
    args = parser.parse_args()
    args.sitemaps = args.sitemaps or bool(args.sitemap_urls)
    polite = is_polite(args)
    if args.frontier and args.max_pages is None:
        args.max_pages = 5000
    if args.sitemap_urls and args.max_pages is None:
        args.max_pages = 20_000
    if args.delay is None:
        args.delay = 1.0 if polite else 0.0
    if args.per_host_concurrency is None:
        args.per_host_concurrency = 1 if polite else 64
    if args.max_pages is None:
        args.max_pages = 8000 if polite else 0
    return args


def is_polite(args: argparse.Namespace) -> bool:
    return args.hosts > 1 and not args.throughput and not args.frontier and not args.sitemaps


def run_name(args: argparse.Namespace) -> str:
    if args.frontier:
        return "frontier"
    if args.sitemap_urls:
        return "sitemap-frontier"
    if args.sitemaps:
        return f"sitemaps-{args.hosts}h"
    if is_polite(args):
        return "politeness"
    return "throughput" if args.hosts == 1 else f"throughput-{args.hosts}h"


def main() -> int:
    args = parse_args()
    polite = is_polite(args)
    params = SiteParams(args.pages, args.hosts, args.seed, args.page_bytes, args.max_depth)
    site, manifest = load_or_generate(params, OUT)
    print(f"site             {describe(manifest)}")
    print(f"                 {site.relative_to(REPO)}")
    hosts: list[dict[str, object]] = manifest["hosts"]  # type: ignore[assignment]
    roots = [site / str(host["dir"]) for host in hosts]
    with start_server(roots, access_log=polite, prefer=args.server) as server:
        first, last = server.ports[0], server.ports[-1]
        where = f"127.0.0.1:{first}" if len(roots) == 1 else f"127.0.0.1:{first}..{last}"
        print(f"server           {server.name} on {where}")
        print(f"server check     ok ({check_server(server, site, hosts)} requests)")
        for port, root, host in zip(server.ports, roots, hosts, strict=True):
            if args.sitemaps:
                listed = -(-args.sitemap_urls // len(roots))
                paths: list[str] = host["allowed_paths"]  # type: ignore[assignment]
                count = write_sitemaps(root, f"http://127.0.0.1:{port}", paths, listed)
            else:
                remove_sitemaps(root)
        if args.sitemaps:
            print(f"sitemaps         an index of {count} sitemaps on each host")
        if args.serve_only:
            print("serving until Ctrl-C")
            with contextlib.suppress(KeyboardInterrupt):
                server.process.wait()
            return 0
        probe = subprocess.run(
            [*harvestman_argv(args.harvestman), "crawl", "--help"],
            capture_output=True,
            check=False,
        )
        if probe.returncode != 0:
            print(f"crawler          {args.harvestman} crawl is not available yet:")
            print(probe.stderr.decode(errors="replace").strip().splitlines()[-1:])
            return 2
        run = OUT / "runs" / run_name(args)
        shutil.rmtree(run, ignore_errors=True)
        run.mkdir(parents=True)
        db = run / "harvestman.db"
        command = crawler_command(args, server.ports, db, run)
        output = run / "pages.jsonl"
        # What a user keeps of the crawl: its pages, one line each.
        if not polite and not args.frontier and not args.sitemap_urls:
            command += ["--output", str(output)]
        if args.profile:
            profile = ["-m", "cProfile", "-o", str(run / "crawler.prof")]
            argv = harvestman_argv(args.harvestman)
            if len(argv) == 1:  # a console script: its virtualenv's Python runs it
                command = [str(Path(argv[0]).parent / "python"), *profile, *command]
            else:  # PYTHON -m harvestman.cli
                command = [argv[0], *profile, *command[1:]]
        shown = command if len(server.ports) == 1 else [*command[:3], "...", *command[-12:]]
        print(f"crawler          {' '.join(shown)}")
        since = time.time()
        cpu_before = server.cpu_seconds()
        measured = run_measured(command, run / "crawler.log", args.timeout)
        server_cpu = server.cpu_seconds() - cpu_before
        print("-" * 72)
        if measured.returncode != 0:
            tail = (run / "crawler.log").read_text(errors="replace").splitlines()[-20:]
            print(f"crawler exited with {measured.returncode}; last lines of its log:")
            print("\n".join(f"  {line}" for line in tail))
        if not db.exists():
            print("FAIL  the crawler left no database")
            return 1
        for root in roots:
            remove_sitemaps(root)
        if args.frontier or args.sitemap_urls:
            passed = report_frontier(measured, db, args)
        elif polite:
            assert server.access_log is not None
            access_log = shutil.copy(server.access_log, run / "access.log")
            passed = report_politeness(
                measured, server_cpu, db, Path(access_log), since, args.hosts, args.delay
            )
        else:
            bar = MAX_RSS_SITEMAPS_MB if args.sitemaps else MAX_RSS_MB
            passed = report_throughput(measured, server_cpu, db, manifest, output, bar)
        if args.profile:
            print_profile(run / "crawler.prof", run / "profile.txt")
    return 0 if passed else 1


def print_profile(profile: Path, text: Path, top: int = 25) -> None:
    """Print the functions with the most own time; the full listing goes to ``text``."""
    with text.open("w") as out:
        pstats.Stats(str(profile), stream=out).sort_stats("tottime").print_stats(80)
    buffer = io.StringIO()
    pstats.Stats(str(profile), stream=buffer).sort_stats("tottime").print_stats(top)
    lines = buffer.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    print(f"profile (own time; all of it in {text.relative_to(REPO)}):")
    print("\n".join(lines[start:]))


if __name__ == "__main__":
    # A plain SIGTERM would skip the finally blocks that stop nginx.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
