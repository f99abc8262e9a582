"""Many small websites on 127.0.0.1, one port each: a test bed for politeness across workers.

Every host serves ``/robots.txt`` (``Crawl-delay`` and a disallowed ``/private/``), a home page
linking to ``pages`` pages and one private page, and pages linking to each other. ``log`` keeps
``(time.monotonic(), port, path)`` for every request, so tests can check per-host spacing, and
``hits`` counts requests per (port, path).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

from aiohttp import web


class HostFarm:
    __test__ = False

    def __init__(self, hosts: int, *, pages: int = 4, crawl_delay: float = 0.2) -> None:
        self.count = hosts
        self.pages = pages
        self.crawl_delay = crawl_delay
        self.ports: list[int] = []
        self.log: list[tuple[float, int, str]] = []
        self.hits: Counter[tuple[int, str]] = Counter()
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> HostFarm:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        for _ in range(self.count):
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            self.ports.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def roots(self) -> list[str]:
        return [f"http://127.0.0.1:{port}/" for port in self.ports]

    def expected_pages(self) -> set[tuple[int, str]]:
        """Every allowed page (not robots.txt) of every host: what a crawl must fetch once."""
        paths = ["/", *(f"/p/{i}" for i in range(1, self.pages + 1))]
        return {(port, path) for port in self.ports for path in paths}

    def denied(self) -> set[tuple[int, str]]:
        return {(port, "/private/x") for port in self.ports}

    def spacing(self) -> Iterator[tuple[int, float]]:
        """(port, gap) between consecutive requests to each host, in arrival order."""
        last: dict[int, float] = {}
        for at, port, _ in self.log:
            if port in last:
                yield port, at - last[port]
            last[port] = at

    async def _handle(self, request: web.Request) -> web.Response:
        port = request.transport.get_extra_info("sockname")[1]  # type: ignore[union-attr]
        path = request.path_qs
        self.log.append((time.monotonic(), port, path))
        self.hits[(port, path)] += 1
        if path == "/robots.txt":
            body = f"User-agent: *\nDisallow: /private/\nCrawl-delay: {self.crawl_delay}\n"
            return web.Response(text=body)
        if path == "/":
            links = [f"/p/{i}" for i in range(1, self.pages + 1)] + ["/private/x"]
        elif path.startswith("/p/"):
            n = int(path.rsplit("/", 1)[1])
            links = ["/", f"/p/{n % self.pages + 1}"]
        else:
            raise web.HTTPNotFound()
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        html = f"<html><head><title>{port}{path}</title></head><body><p>{anchors}</p></body></html>"
        return web.Response(text=html, content_type="text/html")
