"""Attacks from outside, against a running ``harvestman serve`` (a subprocess) on SQLite and
PostgreSQL: oversized bodies, forged X-Forwarded-For, NUL bytes; and what serve refuses to
start with."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from apiclient import SECRET, bearer
from harvestman.api.auth import Role

SERVE = "import typer; from harvestman.api.commands import serve; typer.run(serve)"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(database_url: str, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTMAN_")}
    env["HARVESTMAN_DATABASE_URL"] = database_url
    env["HARVESTMAN_API_JWT_SECRET"] = SECRET
    env.update({f"HARVESTMAN_{name.upper()}": value for name, value in settings.items()})
    return env


@contextlib.contextmanager
def _serving(env: dict[str, str], cwd: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, "--port", str(port), "--no-scheduler"],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 100  # a bound for a loaded machine, not a speed check
        while True:
            try:
                httpx.get(f"{base}/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
                assert time.monotonic() < deadline
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'serve.db'}"
    url: str = request.getfixturevalue("pg_schema_url")
    from harvestman.store import dialect, migrate

    engine = dialect.make_engine(url)
    migrate.upgrade(engine)  # serve checks a PostgreSQL schema, it does not migrate it
    engine.dispose()
    return url


def _raw_post(base: str, path: str, head: bytes, body_chunks: Iterator[bytes]) -> tuple[int, int]:
    """POST over a plain socket, sending ``body_chunks`` until the server answers or closes;
    the status and the bytes of body sent."""
    host, port = base.removeprefix("http://").split(":")
    sent = 0
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n")
        sock.settimeout(0.05)
        answer = b""
        for chunk in body_chunks:
            try:
                sock.sendall(chunk)
                sent += len(chunk)
                answer += sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            if answer:
                break
        sock.settimeout(10)
        while b"\r\n" not in answer:
            more = sock.recv(4096)
            if not more:
                break
            answer += more
    return int(answer.split(b" ", 2)[1]), sent


def test_an_oversized_body_is_refused_before_it_is_read(database_url: str, tmp_path: Path) -> None:
    with _serving(_env(database_url, api_max_body_bytes="65536"), tmp_path) as base:
        declared = httpx.post(
            f"{base}/api/v1/sources",
            content=b"[" + b"0," * 200_000 + b"0]",
            headers={"Content-Type": "application/json"},
            timeout=10,
        )
        assert declared.status_code == 413
        assert declared.json()["error"]["code"] == "body_too_large"
        # Chunked, no length: counted as it streams, refused once past the limit.
        chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"
        status, sent = _raw_post(
            base,
            "/api/v1/sources",
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n",
            iter([chunk] * 400),  # 26 MB offered
        )
        assert status == 413
        assert sent < 8 * 1024 * 1024
        deep = httpx.post(
            f"{base}/api/v1/jobs",
            json={"source_id": 1, "url": "http://127.0.0.1:9/", "metadata": _deep(300)},
            headers=bearer(Role.ADMIN),
        )
        assert deep.status_code == 422
        assert deep.json()["error"]["code"] == "json_too_deep"
        assert httpx.get(f"{base}/api/v1/jobs", headers=bearer(Role.USER)).status_code == 200


def _deep(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(("trusted", "expected"), [("", 429), ("127.0.0.1", 200)])
def test_forwarded_for_counts_only_from_a_trusted_proxy(
    trusted: str, expected: int, tmp_path: Path
) -> None:
    env = _env(
        f"sqlite:///{tmp_path / 'serve.db'}", api_rate_anonymous="3", api_trusted_proxies=trusted
    )
    with _serving(env, tmp_path) as base:
        answers = [
            httpx.get(f"{base}/api/stats", headers={"X-Forwarded-For": f"203.0.113.{n}"})
            for n in range(4)
        ]
    assert [a.status_code for a in answers[:3]] == [200, 200, 200]
    assert answers[3].status_code == expected


def test_a_nul_byte_is_a_422_not_a_store_outage(database_url: str, tmp_path: Path) -> None:
    with _serving(_env(database_url), tmp_path) as base:
        stats = httpx.get(f"{base}/api/stats?crawl=%00")
        jobs = httpx.get(f"{base}/api/v1/sources?name=%00", headers=bearer(Role.USER))
    # Refused at the door on both stores, before SQLite could look for it or PostgreSQL refuse it.
    assert (stats.status_code, stats.json()["error"]["code"]) == (422, "invalid_text")
    assert (jobs.status_code, jobs.json()["error"]["code"]) == (422, "invalid_text")


def _refusal(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, bytes]:
    proc = subprocess.run(
        [sys.executable, "-c", SERVE, "--port", str(_free_port()), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=60,
    )
    return proc.returncode, proc.stderr


def test_serve_refuses_a_guessable_secret(tmp_path: Path) -> None:
    env = _env(f"sqlite:///{tmp_path / 'serve.db'}", api_jwt_secret=" " * 32)
    code, err = _refusal([], env, tmp_path)
    assert code == 2
    assert b"only 1 different characters" in err


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "::"])
def test_dev_mode_refuses_to_listen_beyond_loopback(host: str, tmp_path: Path) -> None:
    code, err = _refusal(
        ["--dev", "--host", host], _env(f"sqlite:///{tmp_path / 's.db'}"), tmp_path
    )
    assert code == 2
    assert b"loopback only" in err


PASSWORD = "correct horse battery"


def _add_user(database_url: str, name: str) -> None:
    from typer.testing import CliRunner

    from harvestman.cli.app import app

    result = CliRunner().invoke(
        app,
        ["user", "create", name, "--password-stdin", "--database-url", database_url],
        input=f"{PASSWORD}\n",
    )
    assert result.exit_code == 0, result.output


async def _sign_in(base: str, address: str, name: str, password: str) -> int:
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(transport=transport, timeout=60) as client:
        answer = await client.post(
            f"{base}/api/auth/login", json={"name": name, "password": password}
        )
    return answer.status_code


def test_sign_ins_are_counted_before_they_are_checked_across_instances(
    database_url: str, tmp_path: Path
) -> None:
    """Concurrent guesses from 21 client addresses (127.0.0.x) at two `serve` instances sharing
    one store, the right password mixed in: no more than the limit are ever checked. (Before,
    the limit was read before the awaits and counted after them, in each process: 9 guesses
    from each of 8 addresses were 72 checked passwords against a limit of 5.)"""
    import asyncio

    _add_user(database_url, "ada")
    env = _env(database_url, api_login_failures="5", api_rate_anonymous="10000")
    with _serving(env, tmp_path) as one, _serving(env, tmp_path) as two:

        async def flood() -> tuple[list[int], list[int], list[int]]:
            guesses = [
                _sign_in((one, two)[n % 2], f"127.0.0.{2 + n % 21}", "ada", f"guess {n}")
                for n in range(42)
            ]
            right = [_sign_in(two, f"127.0.0.{40 + n}", "ada", PASSWORD) for n in range(3)]
            # One client, many names: its own limit holds as well.
            names = [_sign_in(one, "127.0.0.50", f"user{n}", "guess") for n in range(8)]
            statuses = await asyncio.gather(*guesses, *right, *names)
            return statuses[:42], statuses[42:45], statuses[45:]

        guesses, right, names = asyncio.run(flood())
        after = asyncio.run(_sign_in(one, "127.0.0.60", "ada", "one more guess"))

    assert set(guesses) <= {401, 429}
    assert set(right) <= {200, 429}
    assert set(names) <= {401, 429}
    assert names.count(401) <= 5, names
    # Never more than the limit of wrong passwords checked, the one after the flood included.
    # A right password reserves a place while it is checked and gives it back: a guess refused
    # meanwhile leaves the window short of the limit, and the one after may still be checked.
    checked = guesses.count(401) + right.count(401) + (after == 401)
    assert checked <= 5, (guesses, right, after)
    assert after in (401, 429)
    if guesses.count(401) == 5:
        assert after == 429
