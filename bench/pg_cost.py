"""What a crawl costs PostgreSQL, per page: statements, round trips, backend CPU and WAL.

The synthetic site of ``crawl_bench.py`` (one host of 20,000 pages by default) on nginx, crawled
from a fresh schema of a PostgreSQL database (``--database-url``, default ``hm_bench`` on
127.0.0.1; ``harvestman db upgrade`` first), by one of:

- ``crawl`` (default): ``harvestman crawl`` with crawl_bench's throughput command, ``--db``
  replaced by ``--database-url``;
- ``workers``: ``--workers N`` ``harvestman worker --exit-when-done`` processes on PostgreSQL +
  Redis (``workers_bench.py``'s run, seeded by ``harvestman seed``).

The crawler's connections go through a counting proxy (in this process, on 127.0.0.1), which
reads the protocol the client sends and counts, for the connections of this run only (found by
their ``application_name``):

- *statements*: Execute and simple Query messages (an ``executemany`` of 200 rows is 200);
- *round trips*: the times the client spoke again after the server had answered (a batch sent
  in one pipeline is one);
- bytes each way.

Beside them, from the server: the CPU of the run's own backends (``/proc``, found by
``application_name``; the server's background processes are not counted), WAL written
(``pg_current_wal_lsn()`` before and after: the whole cluster's, so other clients of a shared
server add to it; and the run's statements' own ``wal_bytes`` in ``pg_stat_statements``, when
the extension is loaded), and the statements that cost most (``pg_stat_statements``: calls,
rows, time, WAL), reset for this database before the run. The crawler's CPU comes from
``os.wait4``. None of these depends on how loaded the machine is, unlike pages/s.

``--sqlite`` also crawls the same site with the same command on SQLite (no proxy, which adds a
hop to every round trip), and ``--direct`` crawls PostgreSQL without the proxy too, for pages/s
and crawler CPU side by side; ``--rounds`` repeats it all, interleaved.

    createdb -h 127.0.0.1 -U postgres hm_bench
    psql -h 127.0.0.1 -U postgres hm_bench -c 'CREATE EXTENSION pg_stat_statements'
    .venv/bin/python bench/pg_cost.py                       # one crawl on PostgreSQL
    .venv/bin/python bench/pg_cost.py --sqlite --direct     # and the same on SQLite, direct
    .venv/bin/python bench/pg_cost.py --workers 2           # two workers on PostgreSQL + Redis
"""

from __future__ import annotations

import argparse
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import contextlib

from crawl_bench import as_throughput_run, crawler_command, run_measured
from pg_frontier import bench_schema
from pg_load import BackendCpu, with_application_name
from serve import start_server
from synthsite import SiteParams, describe, load_or_generate, remove_sitemaps

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
HARVESTMAN = REPO / ".venv" / "bin" / "harvestman"
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/hm_bench"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


# -- the counting proxy ----------------------------------------------------------------------


@dataclass
class Wire:
    """What the counted connections sent: protocol messages by type, round trips, bytes."""

    messages: Counter[str] = field(default_factory=Counter)
    round_trips: int = 0
    sent: int = 0
    received: int = 0
    connections: int = 0

    @property
    def statements(self) -> int:
        return self.messages["E"] + self.messages["Q"]


class _Link:
    """One client connection through the proxy: parses what the client sends."""

    def __init__(self, proxy: CountingProxy, client: socket.socket, server: socket.socket) -> None:
        self.proxy = proxy
        self.client, self.server = client, server
        self.buffer = b""
        self.started = False  # the startup message has been read
        self.counted = False  # its application_name is the run's
        self.answered = True  # the server spoke since the client last did

    def from_client(self, data: bytes) -> None:
        wire = self.proxy.wire
        self.buffer += data
        while True:
            if not self.started:
                if len(self.buffer) < 8:
                    return
                (length,) = struct.unpack("!I", self.buffer[:4])
                if len(self.buffer) < length:
                    return
                message, self.buffer = self.buffer[:length], self.buffer[length:]
                (code,) = struct.unpack("!I", message[4:8])
                if code in (80877103, 80877104):  # SSL / GSS request: refused by the server
                    continue
                self.started = True
                words = message[8:].split(b"\0")
                params = dict(zip(words[::2], words[1::2], strict=False))
                name = params.get(b"application_name", b"")
                self.counted = bool(self.proxy.application) and name.startswith(
                    self.proxy.application.encode()
                )
                if self.counted:
                    with self.proxy.lock:
                        wire.connections += 1
                continue
            if len(self.buffer) < 5:
                return
            (length,) = struct.unpack("!I", self.buffer[1:5])
            if len(self.buffer) < length + 1:
                return
            kind = chr(self.buffer[0])
            self.buffer = self.buffer[length + 1 :]
            if self.counted:
                with self.proxy.lock:
                    wire.messages[kind] += 1

    def count_send(self, size: int) -> None:
        if self.counted:
            with self.proxy.lock:
                self.proxy.wire.sent += size
                if self.answered:
                    self.proxy.wire.round_trips += 1
        self.answered = False

    def count_answer(self, size: int) -> None:
        self.answered = True
        if self.counted:
            with self.proxy.lock:
                self.proxy.wire.received += size


class CountingProxy(threading.Thread):
    """A TCP proxy to PostgreSQL on 127.0.0.1 that counts what the connections whose
    ``application_name`` starts with ``application`` send.

    Clients must not ask for TLS (``PGSSLMODE=disable``): the counts read the plain protocol."""

    def __init__(self, target_port: int, application: str) -> None:
        super().__init__(daemon=True)
        self.target_port = target_port
        self.application = application
        self.lock = threading.Lock()
        self.wire = Wire()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._stopping = False

    def reset(self, application: str) -> None:
        with self.lock:
            self.application = application
            self.wire = Wire()

    def run(self) -> None:
        self.listener.setblocking(False)
        self._selector.register(self.listener, selectors.EVENT_READ, None)
        while not self._stopping:
            for key, _ in self._selector.select(0.2):
                if key.data is None:
                    self._accept()
                    continue
                link, from_client = key.data
                source = link.client if from_client else link.server
                try:
                    data = source.recv(262144)
                except OSError:
                    data = b""
                if not data:
                    self._close(link)
                    continue
                if from_client:
                    link.from_client(data)
                    link.count_send(len(data))
                    link.server.sendall(data)
                else:
                    link.count_answer(len(data))
                    link.client.sendall(data)

    def _accept(self) -> None:
        client, _ = self.listener.accept()
        try:
            server = socket.create_connection(("127.0.0.1", self.target_port))
        except OSError:  # the server is restarting: the client sees its connection close
            client.close()
            return
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        link = _Link(self, client, server)
        self._selector.register(client, selectors.EVENT_READ, (link, True))
        self._selector.register(server, selectors.EVENT_READ, (link, False))

    def _close(self, link: _Link) -> None:
        for sock in (link.client, link.server):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(sock)
            sock.close()

    def stop(self) -> None:
        self._stopping = True
        self.join()


# -- the server's side ----------------------------------------------------------------------


@dataclass
class ServerFigures:
    wal_bytes: int  # the cluster's, from the LSN
    statement_wal: int | None  # the run's statements' own (pg_stat_statements)
    top: list[tuple[int, int, float, int, str]]  # calls, rows, ms, wal bytes, query
    functions: list[tuple[str, int, float]] = field(default_factory=list)  # name, calls, ms


def function_times(url: str) -> list[tuple[str, int, float]]:
    """The PL/pgSQL functions of the run's schema: calls and their own time (ms)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT funcname, calls, self_time FROM pg_stat_user_functions"
            " WHERE schemaname = current_schema() ORDER BY self_time DESC"
        ).fetchall()
    return [(str(name), int(calls), float(ms)) for name, calls, ms in rows]


def has_statements(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'"
    ).fetchone()
    if not row or not row[0]:
        return False
    try:
        conn.execute("SELECT 1 FROM pg_stat_statements LIMIT 1")
    except psycopg.Error:  # not in shared_preload_libraries
        return False
    return True


class ServerSide:
    """The LSN and pg_stat_statements of the admin database, before and after a run."""

    def __init__(self, admin_url: str) -> None:
        self.conn = psycopg.connect(admin_url, autocommit=True)
        self.statements = has_statements(self.conn)
        self._lsn = ""

    def start(self) -> None:
        if self.statements:
            self.conn.execute(
                "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database"
                " WHERE datname = current_database()), 0)"
            )
        row = self.conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        self._lsn = str(row[0])

    def stop(self, top: int) -> ServerFigures:
        row = self.conn.execute(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)::bigint", (self._lsn,)
        ).fetchone()
        wal = int(row[0]) if row else 0
        if not self.statements:
            return ServerFigures(wal, None, [])
        # The run's statements only: not this script's nor the progress readers' queries.
        where = (
            "dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND query NOT ILIKE '%%pg_stat%%' AND query NOT ILIKE '%%pg_current_wal%%'"
        )
        row = self.conn.execute(
            f"SELECT coalesce(sum(wal_bytes), 0)::bigint FROM pg_stat_statements WHERE {where}"
        ).fetchone()
        rows = self.conn.execute(
            "SELECT calls, rows, total_exec_time, wal_bytes::bigint, query"
            f" FROM pg_stat_statements WHERE {where} ORDER BY total_exec_time DESC LIMIT %s",
            (top,),
        ).fetchall()
        return ServerFigures(
            wal,
            int(row[0]) if row else 0,
            [
                (int(c), int(r), float(t), int(w), " ".join(str(q).split()))
                for c, r, t, w, q in rows
            ],
        )

    def close(self) -> None:
        self.conn.close()


# -- runs ------------------------------------------------------------------------------------


@dataclass
class PgRun:
    label: str
    pages: int
    wall: float
    crawler_cpu: float
    backend_cpu: float
    wire: Wire | None
    server: ServerFigures
    returncode: int
    threads: str = ""  # the crawler's CPU by thread and child (a crawl only)


def completed_pages(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM urls WHERE status = 'completed' AND kind = 'page'"
        ).fetchone()
    return int(row[0]) if row else 0


def harvestman(binary: Path, env: dict[str, str], *args: str, log: Path) -> None:
    with log.open("ab") as output:
        done = subprocess.run([str(binary), *args], env=env, stdout=output, stderr=output)
    if done.returncode != 0:
        raise RuntimeError(f"harvestman {' '.join(args)} failed: see {log}")


def explain_options(slower_than_ms: float) -> str:
    """Connection options that log the plan of each statement slower than that (auto_explain,
    loaded per session: no restart), URL-encoded, ahead of the schema's own."""
    settings = (
        "session_preload_libraries=auto_explain",
        f"auto_explain.log_min_duration={slower_than_ms:g}",
        "auto_explain.log_analyze=on",
        "auto_explain.log_buffers=on",
    )
    return "".join(f"-c{setting.replace('=', '%3D')}%20" for setting in settings)


def proxied(url: str, port: int | None) -> str:
    """``url`` through the proxy's ``port`` (None: as it is)."""
    if port is None:
        return url
    head, _, tail = url.partition("@")
    host = tail.split("/", 1)
    return f"{head}@127.0.0.1:{port}/{host[1]}"


def pg_crawl(
    args: argparse.Namespace, ports: list[int], proxy: CountingProxy | None, label: str
) -> PgRun:
    """One ``harvestman crawl`` on a fresh schema; the proxy counts it if there is one."""
    run = OUT / "runs" / f"pg-cost-{label}"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    application = f"pg-cost-{uuid.uuid4().hex[:8]}"
    with bench_schema(args.database_url) as url:
        env = {**os.environ, "HARVESTMAN_DATABASE_URL": url}
        harvestman(args.harvestman, env, "db", "upgrade", log=run / "setup.log")
        crawl_url = with_application_name(proxied(url, proxy.port if proxy else None), application)
        # Time spent in PL/pgSQL functions (the search trigger of crawled_pages) is counted.
        crawl_url = crawl_url.replace("?options=", "?options=-ctrack_functions%3Dpl%20")
        if args.explain is not None:  # the server's log gets the plans of slow statements
            crawl_url = crawl_url.replace("?options=", "?options=" + explain_options(args.explain))
        command = crawler_command(args, ports, run / "unused.db", run)
        at = command.index("--db")
        command[at : at + 2] = ["--database-url", crawl_url]
        side = ServerSide(args.database_url)
        if proxy is not None:
            proxy.reset(application)
        backends = BackendCpu(url, application)
        side.start()
        backends.start()
        measured = run_measured(command, run / "crawler.log", args.timeout)
        backend_cpu = backends.stop()
        server = side.stop(args.top)
        side.close()
        pages = completed_pages(url)
        server.functions = function_times(url)
    wire = proxy.wire if proxy is not None else None
    return PgRun(
        label, pages, measured.wall, measured.cpu, backend_cpu, wire, server, measured.returncode,
        measured.cpu_breakdown(),
    )  # fmt: skip


def pg_workers(args: argparse.Namespace, server: object, proxy: CountingProxy) -> PgRun:
    """``--workers`` workers on PostgreSQL + Redis (``workers_bench.run_workers``), counted."""
    import workers_bench

    workers_bench.HARVESTMAN = args.harvestman

    run = OUT / "runs" / f"pg-cost-workers-{args.workers}"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    # run_workers names its workers' connections "bench-workers-<its key prefix>".
    worker_args = SimpleNamespace(**vars(args))
    worker_args.database_url = proxied(args.database_url, proxy.port)
    side = ServerSide(args.database_url)
    proxy.reset("bench-workers-")
    side.start()
    figures = workers_bench.run_workers(args.workers, worker_args, server, run)  # type: ignore[arg-type]
    server_figures = side.stop(args.top)
    side.close()
    cpu = sum(w.cpu for w in figures.workers)
    code = max((w.returncode for w in figures.workers), default=0)
    return PgRun(
        f"{args.workers} worker(s)", figures.statuses.get("completed", 0), figures.wall, cpu,
        figures.postgres_cpu, proxy.wire, server_figures, code,
    )  # fmt: skip


def sqlite_crawl(args: argparse.Namespace, ports: list[int]) -> tuple[float, float, int, str]:
    run = OUT / "runs" / "pg-cost-sqlite"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    command = crawler_command(args, ports, run / "harvestman.db", run)
    measured = run_measured(command, run / "crawler.log", args.timeout)
    return measured.wall, measured.cpu, measured.returncode, measured.cpu_breakdown()


def report(result: PgRun, top: int) -> None:
    pages = max(1, result.pages)
    print(f"[{result.label}]")
    print(f"pages            {result.pages} (exit {result.returncode})")
    print(f"wall             {result.wall:.1f} s, {result.pages / result.wall:.0f} pages/s")
    per_page = result.crawler_cpu / pages * 1e6
    print(f"crawler CPU      {result.crawler_cpu:.1f} s, {per_page:.0f} µs/page")
    if result.threads:
        print(f"CPU by thread    {result.threads}")
    print(
        f"PostgreSQL CPU   {result.backend_cpu:.2f} s of its backends,"
        f" {result.backend_cpu / pages * 1e3:.3f} s per 1,000 pages"
    )
    if result.wire is not None:
        wire = result.wire
        print(
            f"statements       {wire.statements} = {wire.statements / pages:.2f} a page"
            f" (Execute {wire.messages['E']}, Query {wire.messages['Q']},"
            f" Parse {wire.messages['P']}, Sync {wire.messages['S']})"
        )
        print(f"round trips      {wire.round_trips} = {wire.round_trips / pages:.2f} a page")
        print(
            f"bytes            {wire.sent / pages:.0f} B a page to the server,"
            f" {wire.received / pages:.0f} B back; {wire.connections} connection(s)"
        )
    server = result.server
    own = (
        ""
        if server.statement_wal is None
        else f", the run's statements {server.statement_wal / pages:,.0f} B"
    )
    print(f"WAL              {server.wal_bytes / pages:,.0f} B a page (cluster){own}")
    for name, calls, ms in server.functions:
        print(f"function         {name}: {calls} calls, {ms / pages:.4f} ms a page (own time)")
    if server.top:
        print(f"top statements   (pg_stat_statements, by time; {top} shown)")
        print("    calls/page  rows/call   ms/page  WAL B/page  query")
        for calls, rows, ms, wal, query in server.top:
            print(
                f"    {calls / pages:10.3f} {rows / max(1, calls):10.1f} {ms / pages:9.4f}"
                f" {wal / pages:11.0f}  {query[:110]}"
            )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--hosts", type=int, default=1)
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--database-url", default=DEFAULT_URL, help="an admin URL, no query")
    parser.add_argument("--redis-url", default=DEFAULT_REDIS)
    parser.add_argument("--workers", type=int, default=0, help="N workers instead of a crawl")
    parser.add_argument("--sqlite", action="store_true", help="the same crawl on SQLite too")
    parser.add_argument("--direct", action="store_true", help="a PostgreSQL crawl unproxied too")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--explain",
        type=float,
        default=None,
        metavar="MS",
        help="log the plans of the crawl's statements slower than MS to the server's log",
    )
    parser.add_argument("--top", type=int, default=12, help="statements listed")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--server", choices=["auto", "nginx", "python"], default="auto")
    parser.add_argument(
        "--harvestman", type=Path, default=HARVESTMAN, help="the CLI (another checkout's, say)"
    )
    args = parser.parse_args()
    as_throughput_run(args)
    args.per_host_concurrency = args.concurrency = 64
    args.candidate_indexes = False
    return args


def main() -> int:
    args = parse_args()
    # The proxy reads the plain protocol.
    os.environ["PGSSLMODE"] = "disable"
    os.environ["PGGSSENCMODE"] = "disable"
    params = SiteParams(args.pages, args.hosts, args.seed, args.page_bytes, args.max_depth)
    site, manifest = load_or_generate(params, OUT)
    print(f"site             {describe(manifest)}")
    roots = [site / str(host["dir"]) for host in manifest["hosts"]]  # type: ignore[attr-defined]
    target = int(args.database_url.rsplit(":", 1)[1].split("/")[0])
    proxy = CountingProxy(target, "")
    proxy.start()
    failed = False
    try:
        with start_server(roots, access_log=bool(args.workers), prefer=args.server) as server:
            for root in roots:
                remove_sitemaps(root)
            for n in range(args.rounds):
                print("-" * 72 + f"\nround {n + 1}, load {os.getloadavg()[0]:.1f}")
                if args.workers:
                    result = pg_workers(args, server, proxy)
                else:
                    result = pg_crawl(args, server.ports, proxy, "counted")
                report(result, args.top)
                failed = failed or result.returncode != 0
                if args.direct and not args.workers:
                    direct = pg_crawl(args, server.ports, None, "direct")
                    report(direct, 0)
                if args.sqlite:
                    wall, cpu, code, threads = sqlite_crawl(args, server.ports)
                    print(
                        f"[sqlite]\nwall             {wall:.1f} s, {args.pages / wall:.0f} pages/s"
                        f" (exit {code})\ncrawler CPU      {cpu:.1f} s,"
                        f" {cpu / args.pages * 1e6:.0f} µs/page\nCPU by thread    {threads}"
                    )
    finally:
        proxy.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
