"""What the renderer's egress proxy costs a page: the same app page rendered through the guarded
proxy (``Renderer(guard=...)``) and straight (no guard: the browser connects by itself).

The page is an app shell that loads a stylesheet, 10 scripts and 5 fetches from its own origin
(17 requests), served by a local aiohttp server. The two renderers alternate page by page so
that load from elsewhere on the machine hits both alike; the median and the best are printed.

Run: ``.venv/bin/python bench/bench_render_egress.py [--pages 20] [--browser /usr/bin/chromium]``
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import statistics
import time

from aiohttp import web

from harvestman.guard import NetworkGuard
from harvestman.render import Renderer

SCRIPTS = "".join(f"<script src='/s{i}.js'></script>" for i in range(10))
PAGE = (
    "<html><head><title>app</title><link rel=stylesheet href='/a.css'>" + SCRIPTS + "</head>"
    "<body><div id=root></div><script>"
    "Promise.all([0,1,2,3,4].map(i => fetch('/api/' + i).then(r => r.text())))"
    ".then(parts => { document.getElementById('root').textContent = parts.join(' '); });"
    "</script></body></html>"
)


async def handle(request: web.Request) -> web.Response:
    path = request.path
    if path == "/":
        return web.Response(text=PAGE, content_type="text/html")
    if path.endswith(".js"):
        return web.Response(text="var x = 1;" * 200, content_type="application/javascript")
    if path.endswith(".css"):
        return web.Response(text="p { color: red }" * 100, content_type="text/css")
    return web.Response(text="data " * 100, content_type="text/plain")


async def main(pages: int, browser: str) -> None:
    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    url = f"http://127.0.0.1:{port}/"
    guard = NetworkGuard()
    guard.admit(ipaddress.ip_address("127.0.0.1"), port)
    kinds = {
        "proxied (guard)": Renderer(browser=browser, user_agent="bench", settle=0, guard=guard),
        "direct (no guard)": Renderer(browser=browser, user_agent="bench", settle=0),
    }
    times: dict[str, list[float]] = {name: [] for name in kinds}
    try:
        for renderer in kinds.values():
            await renderer.render(url)  # start the browser: not counted
        for _ in range(pages):
            for name, renderer in kinds.items():
                started = time.perf_counter()
                await renderer.render(url)
                times[name].append(time.perf_counter() - started)
    finally:
        for renderer in kinds.values():
            await renderer.close()
        await runner.cleanup()
    for name, values in times.items():
        print(
            f"{name:18} median {statistics.median(values) * 1000:7.1f} ms"
            f"  best {min(values) * 1000:7.1f} ms  ({len(values)} pages)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--browser", default="/usr/bin/chromium")
    args = parser.parse_args()
    asyncio.run(main(args.pages, args.browser))
