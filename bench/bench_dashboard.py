"""The dashboard's weight and cost, in a real Chromium against a real ``harvestman serve``.

Prints: the first view's load time (navigation to the sign-in form, then to the overview's
first live figures) and the bytes transferred for each, and the CPU the browser spends on
live updates (all Chromium processes, over ``--seconds`` with the overview open and the
stream sending an event every 2 s). Targets (issue 5): first view < 1 s locally and
< 500 KB; live updates a few percent of a core at most.

    .venv/bin/python bench/bench_dashboard.py [--seconds 30] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cpu_seconds(name: str = "chromium") -> float:
    """utime + stime of every process whose command name contains ``name``."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        if name in comm.lower():
            fields = stat[stat.rindex(")") + 2 :].split()
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def _transferred(page: object) -> int:
    return int(
        page.evaluate(  # type: ignore[attr-defined]
            """() => performance.getEntries()
                .filter(e => e.transferSize !== undefined)
                .reduce((n, e) => n + e.transferSize, 0)"""
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="live-update CPU window")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from harvestman.api.auth import create_token
    from harvestman.api.settings import DEV_SECRET

    workdir = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    harvestman = Path(sys.executable).with_name("harvestman")
    server = subprocess.Popen(
        [str(harvestman), "serve", "--dev", "--port", str(port),
         "--database-url", f"sqlite:///{workdir / 'bench.db'}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        token = create_token(DEV_SECRET, "admin")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium)
            page = browser.new_page()
            page.goto(f"{base}/")  # warm the server's first answers (imports, file cache)
            page = browser.new_context().new_page()
            start = time.perf_counter()
            page.goto(f"{base}/")
            page.get_by_label("API token").wait_for()
            signin_ms = (time.perf_counter() - start) * 1000
            signin_bytes = _transferred(page)
            page.get_by_label("API token").fill(token)
            start = time.perf_counter()
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_function(
                "() => (document.querySelector('[data-testid=stat-pages]')?.textContent"
                " ?? '—') !== '—'"
            )
            overview_ms = (time.perf_counter() - start) * 1000
            overview_bytes = _transferred(page)
            page.wait_for_timeout(3000)
            before, started = _cpu_seconds(), time.perf_counter()
            page.wait_for_timeout(args.seconds * 1000)
            spent = _cpu_seconds() - before
            elapsed = time.perf_counter() - started
            updates = page.evaluate("performance.getEntriesByType('resource').length")
            browser.close()
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(15)
    load = os.getloadavg()[0]
    print(f"sign-in view      {signin_ms:7.0f} ms  {signin_bytes / 1024:7.1f} KB transferred")
    print(f"overview (live)   {overview_ms:7.0f} ms  {overview_bytes / 1024:7.1f} KB in total")
    print(
        f"live updates      {100 * spent / elapsed:7.2f} % of a core (all Chromium processes, "
        f"{elapsed:.0f} s, {updates} resources)"
    )
    print(f"load average      {load:.2f} (the machine is shared)")


if __name__ == "__main__":
    main()
