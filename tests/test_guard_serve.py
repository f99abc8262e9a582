"""Attacks on a running ``harvestman serve`` from outside: what the API lets the crawler reach."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from apiclient import SECRET, bearer
from conftest import serve

SERVE = "import typer; from harvestman.api.commands import serve; typer.run(serve)"
SECRET_BODY = "the secret of the other port"
PAGE = "<html><head><title>Home</title></head><body><p>" + "words " * 200 + "</p></body></html>"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Sites:
    """The crawled site (robots.txt 302s to the other port) and the secret on the other port."""

    def __init__(self) -> None:
        self.site_hits: Counter[str] = Counter()
        self.secret_hits: Counter[str] = Counter()
        self.site_port = self.secret_port = 0

    async def site(self, request: web.Request) -> web.StreamResponse:
        self.site_hits[request.path] += 1
        if request.path == "/robots.txt":
            target = f"http://127.0.0.1:{self.secret_port}/secret"
            return web.Response(status=302, headers={"Location": target})
        return web.Response(text=PAGE, content_type="text/html")

    async def secret(self, request: web.Request) -> web.StreamResponse:
        self.secret_hits[request.path] += 1
        return web.Response(text=SECRET_BODY)


@pytest.fixture
async def sites() -> AsyncIterator[Sites]:
    found = Sites()
    async with serve(found.site) as site_port, serve(found.secret) as secret_port:
        found.site_port, found.secret_port = site_port, secret_port
        yield found


def _start_service(db: Path, allow: str | None) -> tuple[subprocess.Popen[bytes], str]:
    """``harvestman serve`` on SQLite in a subprocess, with ``allow`` as its network allow-list;
    the process and its base URL once it answers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTMAN_")}
    env.update(
        HARVESTMAN_DATABASE_URL=f"sqlite:///{db}",
        HARVESTMAN_API_JWT_SECRET=SECRET,
        HARVESTMAN_FRONTIER_DELAY="0",
        HARVESTMAN_FETCH_TIMEOUT="5",
        HARVESTMAN_DISCOVERY_SITEMAPS="false",
    )
    if allow is not None:
        env["HARVESTMAN_NETWORK_ALLOW"] = allow
    port = _free_port()
    log = db.with_suffix(".log")  # a file, not a pipe: the server outlives many requests
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, "--port", str(port)],
            env=env,
            cwd=db.parent,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(400):  # the test's own timeout bounds the wait
            try:
                httpx.get(f"{base}/health", timeout=1)
                return proc, base
            except httpx.TransportError:
                assert proc.poll() is None, log.read_text(errors="replace")
                subprocess.run(["sleep", "0.05"], check=True)
        raise AssertionError(f"serve did not answer on {base}")
    except BaseException:
        proc.terminate()
        proc.wait(timeout=20)
        raise


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str | None], str]]:
    """One ``harvestman serve`` per allow-list for the module (a start costs seconds): the
    refusal tests share it, and each names what it creates after its own case."""
    running: dict[str | None, tuple[subprocess.Popen[bytes], str]] = {}

    def service_for(allow: str | None) -> str:
        if allow not in running:
            running[allow] = _start_service(tmp_path_factory.mktemp("serve") / "serve.db", allow)
        return running[allow][1]

    try:
        yield service_for
    finally:
        for proc, _ in running.values():
            proc.terminate()
            proc.wait(timeout=20)


@pytest.fixture
def service(services: Callable[[str | None], str], request: pytest.FixtureRequest) -> str:
    """The module's ``harvestman serve`` for the test's ``network_allow`` marker."""
    allow = request.node.get_closest_marker("network_allow")
    return services(allow.args[0] if allow is not None else None)


ADMIN = bearer("admin")
USER = bearer("user")


async def _post(base: str, path: str, body: dict) -> httpx.Response:
    async with httpx.AsyncClient(base_url=base, timeout=10) as client:
        return await client.post(path, json=body, headers=ADMIN)


DECODED_TO_LOOPBACK = [
    "http://%31%32%37.0.0.1:{port}/",
    "http://127%2e0%2e0%2e1:{port}/",
    "http://127.0.0.1:{port}\\@allowed.example/",
    # IPv6 forms that carry 127.0.0.1 (NAT64, 6to4, IPv4-compatible, SIIT)
    "http://[64:ff9b::7f00:1]:{port}/",
    "http://[2002:7f00:1::1]:{port}/",
    "http://[::127.0.0.1]:{port}/",
    "http://[::ffff:0:7f00:1]:{port}/",
]


@pytest.mark.network_allow("8.8.8.0/24")
@pytest.mark.parametrize("form", DECODED_TO_LOOPBACK)
async def test_urls_the_normalizer_decodes_to_loopback_are_refused(service: str, form: str) -> None:
    url = form.format(port=_free_port())
    case = uuid.uuid4().hex[:8]  # the cases share one server: names of their own
    source = await _post(service, "/api/v1/sources", {"name": f"s{case}", "start_urls": [url]})
    assert (source.status_code, source.json()["error"]["code"]) == (422, "url_refused")
    good = await _post(
        service, "/api/v1/sources", {"name": f"g{case}", "start_urls": ["http://8.8.8.8/"]}
    )
    assert good.status_code == 201, good.text
    job = await _post(service, "/api/v1/jobs", {"source_id": good.json()["id"], "url": url})
    assert (job.status_code, job.json()["error"]["code"]) == (422, "url_refused")
    seed = await _post(service, "/api/frontier/seed", {"urls": [url]})
    assert (seed.status_code, seed.json()["error"]["code"]) == (422, "url_refused")


@pytest.mark.network_allow("10.1.0.0/16")
@pytest.mark.parametrize(
    ("scope", "code"),
    [
        ({"allow_domains": ["127.0.0.1"]}, "domain_refused"),
        ({"allow_domains": ["localhost"]}, "domain_refused"),
        ({"allow_domains": ["[::1]:8080"]}, "domain_refused"),
        ({"allow_domains": ["exa mple.org"]}, "domain_refused"),
        ({"include": ["(a)\\1"]}, "pattern_refused"),
        ({"exclude": ["x" * 1001]}, "pattern_refused"),
    ],
)
async def test_scope_rules_that_reach_private_hosts_or_backtrack_are_refused(
    service: str, scope: dict, code: str
) -> None:
    body = {"name": "s", "start_urls": ["http://8.8.8.8/"], "scope": scope}
    response = await _post(service, "/api/v1/sources", body)
    assert (response.status_code, response.json()["error"]["code"]) == (422, code)
    allowed = {"allow_domains": ["10.1.2.3", "example.org"], "include": ["(.*.*)*X"]}
    name = f"ok-{uuid.uuid4().hex[:8]}"  # the cases share one server: names of their own
    ok = await _post(service, "/api/v1/sources", {**body, "name": name, "scope": allowed})
    assert ok.status_code == 201, ok.text


async def test_a_served_crawl_does_not_follow_robots_to_another_port(
    tmp_path: Path, sites: Sites, request: pytest.FixtureRequest
) -> None:
    request.node.add_marker(pytest.mark.network_allow(f"127.0.0.1:{sites.site_port}"))
    base = request.getfixturevalue("service")
    start = f"http://127.0.0.1:{sites.site_port}/"
    created = await _post(base, "/api/v1/sources", {"name": "site", "start_urls": [start]})
    assert created.status_code == 201, created.text
    host = f"127.0.0.1:{sites.site_port}"
    async with httpx.AsyncClient(base_url=base, timeout=10, headers=USER) as client:
        for _ in range(600):  # the scheduler runs the source's job; the test's timeout bounds it
            robots = await client.get(f"/api/domains/{host}/robots")
            if robots.status_code == 200 and sites.site_hits["/"]:
                break
            await asyncio.sleep(0.1)
        answer = robots.json()
    assert robots.status_code == 200, answer
    assert sites.site_hits["/robots.txt"] >= 1
    assert dict(sites.secret_hits) == {}
    assert (answer["robots_txt"], answer["robots_status"]) == (None, None)
    assert SECRET_BODY not in robots.text
