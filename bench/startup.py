"""Start-up of ``harvestman crawl``: from starting the process to its first request.

Serves a one-page site from a thread of this process (``/robots.txt`` and ``/``), runs
``harvestman crawl URL --max-pages 1 --no-progress`` as a child, and reports for each run

- *start-up*: from just before the child is started to the server's first request (the
  robots.txt fetch: imports, settings, the store and its migrations, the crawler's set-up);
- *wall* and *CPU* (user + system, ``os.wait4``: the crawler and the children it waited for);
- with ``--imports``, run as ``python -X importtime -m harvestman.cli``: the sum of the self
  times of its imports and the number of modules (the other figures then include importtime's
  own cost).

Each round runs every ``--command`` once, in turn (interleaved), ``fresh`` on a new SQLite file
(every migration runs) and ``at head`` on the file of the command's first run, crawling into a
new ``--name`` (the schema is current). Medians over the rounds, and the load before and after.

    python bench/startup.py --rounds 5
    python bench/startup.py --command before=/work/main/.venv/bin/harvestman \\
        --command after=.venv/bin/harvestman --rounds 7
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = b"<!doctype html><html><head><title>one page</title></head><body>hello</body></html>"


class FirstRequest:
    """The time of the first request since :meth:`reset`."""

    def __init__(self) -> None:
        self.stamp: float | None = None
        self.lock = threading.Lock()

    def reset(self) -> None:
        with self.lock:
            self.stamp = None

    def seen(self) -> None:
        now = time.time()
        with self.lock:
            if self.stamp is None:
                self.stamp = now


def serve(first: FirstRequest) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            first.seen()
            if self.path == "/":
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(PAGE)))
                self.end_headers()
                self.wfile.write(PAGE)
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|")


def run_once(
    command: list[str], url: str, db: Path, name: str, first: FirstRequest, imports: bool
) -> tuple[float, ...]:
    """One crawl of one page: its start-up, wall time and CPU seconds (and with ``imports``,
    the sum of ``-X importtime``'s self times in ms and the modules imported)."""
    first.reset()
    if imports:  # the console script's interpreter, on the same entry point
        command = [str(Path(command[0]).parent / "python"), "-X", "importtime", "-m",
                   "harvestman.cli"]  # fmt: skip
    argv = [*command, "crawl", url, "--db", str(db), "--name", name, "--max-pages", "1",
            "--delay", "0", "--no-progress"]  # fmt: skip
    started = time.time()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.time() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0 or first.stamp is None:
        raise SystemExit(f"{shlex.join(argv)} failed ({process.returncode}):\n{stderr.decode()}")
    figures = (first.stamp - started, wall, usage.ru_utime + usage.ru_stime)
    if not imports:
        return figures
    selves = [int(m[1]) for m in IMPORT_LINE.finditer(stderr.decode(errors="replace"))]
    return (*figures, sum(selves) / 1000, len(selves))


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--command",
        action="append",
        metavar="NAME=CMD",
        help="a crawler to run (default: this checkout's .venv/bin/harvestman)",
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--imports",
        action="store_true",
        help="run under -X importtime and report its self times' sum (which slows the rest)",
    )
    args = parser.parse_args()
    commands = dict(
        spec.split("=", 1) for spec in args.command or [f"this={REPO / '.venv/bin/harvestman'}"]
    )
    first = FirstRequest()
    server = serve(first)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    figures: dict[tuple[str, str], list[tuple[float, ...]]] = {}
    print(f"load before {load()}")
    with tempfile.TemporaryDirectory(prefix="harvestman-startup-") as tmp:
        for round_ in range(args.rounds):
            for label, command in commands.items():
                fresh, kept = Path(tmp, f"{label}-{round_}.db"), Path(tmp, f"{label}.db")
                argv = shlex.split(command)
                figures.setdefault((label, "fresh"), []).append(
                    run_once(argv, url, fresh, "default", first, args.imports)
                )
                if not kept.exists():
                    shutil.copyfile(fresh, kept)  # every later run crawls into it, at head
                figures.setdefault((label, "at head"), []).append(
                    run_once(argv, url, kept, f"r{round_}", first, args.imports)
                )
    server.shutdown()
    print(f"load after  {load()}")
    heads = ["start-up s", "wall s", "CPU s"] + (["imports ms", "modules"] if args.imports else [])
    print(f"{'crawler':<12} {'database':<8} " + " ".join(f"{head:>22}" for head in heads))
    for (label, case), runs in figures.items():
        columns = []
        for i in range(len(heads)):
            values = [run[i] for run in runs]
            digits = 3 if i < 3 else 0
            columns.append(
                f"{statistics.median(values):.{digits}f}"
                f" ({min(values):.{min(digits, 2)}f}-{max(values):.{min(digits, 2)}f})"
            )
        print(f"{label:<12} {case:<8} " + " ".join(f"{c:>22}" for c in columns))


if __name__ == "__main__":
    main()
