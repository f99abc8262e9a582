"""Serve generated sites on 127.0.0.1, one port per host: nginx, else a Python fallback.

``start_server(roots, access_log=...)`` returns a running ``StaticServer`` (a context manager that
stops it). nginx runs as a child process with its own configuration in a temporary directory
(``daemon off``, one worker, keepalive and sendfile on, ``listen 127.0.0.1:PORT`` only). When
nginx is not installed it is installed with apt-get; only if that fails does a Python static
server (aiohttp, in its own process) stand in, and ``StaticServer.name`` says so.

With ``access_log=True`` each request is logged as ``<epoch seconds.millis> <port> <status>
<path>`` (nginx's ``$msec $server_port $status $request_uri``), in ``StaticServer.access_log``.

Run by hand: ``python bench/serve.py ROOT [ROOT ...]`` serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

NGINX_CANDIDATES = ("nginx-light", "nginx")


def ensure_nginx() -> str | None:
    """The nginx binary, installed with apt-get if missing; ``None`` if it cannot be had."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for refresh in (False, True):
        if refresh:
            subprocess.run(["apt-get", "update"], env=env, capture_output=True, check=False)
        for package in NGINX_CANDIDATES:
            print(f"installing {package} with apt-get ...", flush=True)
            done = subprocess.run(
                ["apt-get", "install", "-y", "--no-install-recommends", package],
                env=env,
                capture_output=True,
                check=False,
            )
            if done.returncode == 0:
                return shutil.which("nginx", path="/usr/sbin:/usr/local/sbin:/usr/bin")
    return None


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports free on 127.0.0.1 right now (closed again before returning)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def wait_until_listening(
    ports: list[int], process: subprocess.Popen[bytes], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    for port in ports:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited with status {process.returncode}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")
            time.sleep(0.02)


def process_tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live children, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        # After the command name: state ppid ... utime(12) stime(13), 0-based from state.
        if int(entry.name) == pid or int(fields[1]) == pid:
            total += int(fields[11]) + int(fields[12])
    return total / ticks


class StaticServer:
    """A running static server; ``ports[i]`` serves ``roots[i]``."""

    def __init__(
        self,
        name: str,
        process: subprocess.Popen[bytes],
        ports: list[int],
        workdir: Path,
        access_log: Path | None,
    ) -> None:
        self.name = name
        self.process = process
        self.ports = ports
        self.workdir = workdir
        self.access_log = access_log
        self._cpu_at_start = process_tree_cpu_seconds(process.pid)

    def cpu_seconds(self) -> float:
        """CPU seconds the server used since it became ready."""
        return process_tree_cpu_seconds(self.process.pid) - self._cpu_at_start

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> StaticServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def nginx_config(roots: list[Path], ports: list[int], workdir: Path, access_log: bool) -> str:
    logging = (
        "log_format stamped '$msec $server_port $status $request_uri';\n"
        f"    access_log {workdir}/access.log stamped;"
        if access_log
        else "access_log off;"
    )
    servers = "\n".join(
        f"    server {{ listen 127.0.0.1:{port} backlog=4096; root {root.resolve()}; }}"
        for root, port in zip(roots, ports, strict=True)
    )
    temp = "\n".join(
        f"    {kind}_temp_path {workdir}/{kind}_temp;"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 16384;
error_log {workdir}/error.log warn;
pid {workdir}/nginx.pid;
events {{ worker_connections 8192; }}
http {{
    {logging}
{temp}
    types {{ text/html html; text/plain txt; text/css css; }}
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 75s;
    keepalive_requests 1000000;
    index index.html;
{servers}
}}
"""


def start_nginx(binary: str, roots: list[Path], access_log: bool) -> StaticServer:
    workdir = Path(tempfile.mkdtemp(prefix="harvestman-nginx-"))
    workdir.chmod(0o755)  # the worker runs as an unprivileged user when we are root
    ports = free_ports(len(roots))
    config = workdir / "nginx.conf"
    config.write_text(nginx_config(roots, ports, workdir, access_log))
    process = subprocess.Popen(
        [binary, "-c", str(config), "-p", str(workdir), "-e", str(workdir / "error.log")],
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_until_listening(ports, process, timeout=15)
    except RuntimeError:
        process.kill()
        process.wait()
        errors = (workdir / "error.log").read_text() if (workdir / "error.log").exists() else ""
        raise RuntimeError(f"nginx did not start:\n{errors}") from None
    version = subprocess.run([binary, "-v"], capture_output=True, text=True, check=False)
    name = version.stderr.strip().removeprefix("nginx version: ") or "nginx"
    return StaticServer(
        f"{name} (1 worker)",
        process,
        ports,
        workdir,
        workdir / "access.log" if access_log else None,
    )


def start_python_server(roots: list[Path], access_log: bool) -> StaticServer:
    workdir = Path(tempfile.mkdtemp(prefix="harvestman-static-"))
    ports = free_ports(len(roots))
    log = workdir / "access.log" if access_log else None
    command = [sys.executable, __file__, "--fallback-child"]
    if log is not None:
        command += ["--log", str(log)]
    command += [f"{port}={root.resolve()}" for root, port in zip(roots, ports, strict=True)]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    wait_until_listening(ports, process, timeout=30)
    return StaticServer(
        "Python aiohttp static server (nginx unavailable)", process, ports, workdir, log
    )


def start_server(roots: list[Path], *, access_log: bool, prefer: str = "auto") -> StaticServer:
    """Serve each of ``roots`` on its own 127.0.0.1 port; ``prefer`` is auto, nginx or python."""
    if prefer != "python":
        binary = ensure_nginx()
        if binary is not None:
            return start_nginx(binary, roots, access_log)
        if prefer == "nginx":
            raise RuntimeError("nginx is not installed and could not be installed")
        print("nginx could not be had: falling back to a Python static server", flush=True)
    return start_python_server(roots, access_log)


def _run_fallback_child(log: Path | None, mappings: list[str]) -> None:
    """The fallback server's process: aiohttp serving each ``PORT=ROOT`` until SIGTERM."""
    import asyncio

    from aiohttp import web

    async def serve() -> None:
        log_file = log.open("a", buffering=1) if log is not None else None
        runners = []
        for mapping in mappings:
            port_text, root_text = mapping.split("=", 1)
            port, root = int(port_text), Path(root_text)

            async def handle(
                request: web.Request, root: Path = root, port: int = port
            ) -> web.StreamResponse:
                relative = request.path.lstrip("/") or "index.html"
                target = (root / relative).resolve()
                found = root in target.parents and target.is_file()
                if log_file is not None:
                    status = 200 if found else 404
                    log_file.write(f"{time.time():.3f} {port} {status} {request.raw_path}\n")
                if not found:
                    raise web.HTTPNotFound()
                return web.FileResponse(target)

            app = web.Application()
            app.router.add_get("/{path:.*}", handle)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port, backlog=4096).start()
            runners.append(runner)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        for runner in runners:
            await runner.cleanup()

    asyncio.run(serve())


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve directories on 127.0.0.1 ports.")
    parser.add_argument("roots", nargs="*", help="directories (or PORT=ROOT in the child)")
    parser.add_argument("--server", choices=["auto", "nginx", "python"], default="auto")
    parser.add_argument("--log", type=Path, default=None)
    parser.add_argument("--fallback-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fallback_child:
        _run_fallback_child(args.log, args.roots)
        return
    roots = [Path(root) for root in args.roots]
    with start_server(roots, access_log=False, prefer=args.server) as server:
        for root, port in zip(roots, server.ports, strict=True):
            print(f"{server.name}: http://127.0.0.1:{port}/ -> {root}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.process.wait()


if __name__ == "__main__":
    # A plain SIGTERM would skip the context manager that stops nginx.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
