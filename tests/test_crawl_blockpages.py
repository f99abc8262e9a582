"""A crawl meets anti-bot pages: the URL is recorded with the vendor, the host cools down and
its breaker counts the refusal, and nothing of the block page is stored as content.

The pages are our fixtures (tests/fixtures/blockpages/) modelled on Cloudflare's error 1020
page (https://developers.cloudflare.com/support/troubleshooting/http-status-codes/
cloudflare-1xxx-errors/error-1020/) and Imperva's incident page (wafw00f,
github.com/EnableSecurity/wafw00f wafw00f/plugins/incapsula.py); both hosts are servers on
127.0.0.1 (a host is its address and port).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from aiohttp import web

from conftest import SettingsFactory, serve
from harvestman.crawl.steps import ValidateStep
from harvestman.validate import Validator
from support.crawling import crawl
from support.parts import crawl_parts, page_work

FIXTURES = Path(__file__).parent / "fixtures" / "blockpages"
COOLDOWN = 3_600.0
CLOUDFLARE_HEADERS = {
    "Content-Type": "text/html; charset=UTF-8",
    "Server": "cloudflare",
    "CF-RAY": "8a1b2c3d4e5f6789-LHR",
}


async def test_block_pages_are_recorded_with_their_vendor_and_the_host_backs_off(
    make_settings: SettingsFactory,
) -> None:
    hits: Counter[str] = Counter()
    cloudflare_page = (FIXTURES / "cloudflare_1020.html").read_bytes()
    imperva_page = (FIXTURES / "imperva_incident.html").read_bytes()

    async def cloudflare(request: web.Request) -> web.Response:
        hits[f"cloudflare{request.path}"] += 1
        if request.path == "/robots.txt":
            return web.Response(status=404)
        return web.Response(status=403, body=cloudflare_page, headers=CLOUDFLARE_HEADERS)

    challenge_page = (FIXTURES / "cloudflare_managed_challenge.html").read_bytes()

    async def challenging(request: web.Request) -> web.Response:  # a browser would pass it
        if request.path == "/robots.txt":
            return web.Response(status=404)
        headers = {**CLOUDFLARE_HEADERS, "cf-mitigated": "challenge"}
        return web.Response(status=403, body=challenge_page, headers=headers)

    async def imperva(request: web.Request) -> web.Response:  # a block page served with 200
        hits[f"imperva{request.path}"] += 1
        if request.path == "/robots.txt":
            return web.Response(status=404)
        return web.Response(body=imperva_page, headers={"Content-Type": "text/html"})

    settings = make_settings(
        validate_hard_cooldown=COOLDOWN,
        fetch_max_retries=0,
        store_text=True,
        discovery_sitemaps=False,
        crawl_max_depth=0,
    )
    async with (
        serve(cloudflare) as cf_port,
        serve(imperva) as imperva_port,
        serve(challenging) as challenge_port,
    ):
        cf_host, imperva_host = f"127.0.0.1:{cf_port}", f"127.0.0.1:{imperva_port}"
        blocked, incident = f"http://{cf_host}/products/", f"http://{imperva_host}/shop/"
        challenged = f"http://127.0.0.1:{challenge_port}/news/"
        crawler, rows, pages = await crawl(settings, [blocked, incident, challenged])

    row = {r["url"]: r for r in rows}
    page = {p["url"]: p for p in pages}
    # The 403 stays an HTTP failure, with the vendor's verdict in its error and page record.
    assert (row[blocked]["status"], row[blocked]["error_class"]) == ("failed", "HttpStatusError")
    assert row[blocked]["error"] == "HTTP 403; hard: access_denied:cloudflare (access denied)"
    assert (page[blocked]["status_code"], page[blocked]["error"]) == (403, row[blocked]["error"])
    assert (page[blocked]["validation_status"], page[blocked]["rejection_reason"]) == (
        "hard",
        "access_denied:cloudflare",
    )
    # The 200 block page is a hard rejection, recorded as such.
    assert (row[incident]["status"], row[incident]["error_class"]) == ("failed", "ContentRejected")
    assert row[incident]["error"] == "hard: bot_check:imperva (incapsula incident id)"
    assert (page[incident]["validation_status"], page[incident]["rejection_reason"]) == (
        "hard",
        "bot_check:imperva",
    )
    # A challenge is recorded as one; the host is not cooled down for it.
    assert row[challenged]["error"] == (
        "HTTP 403; soft: js_challenge:cloudflare (verifying you are human)"
    )
    assert (page[challenged]["validation_status"], page[challenged]["rejection_reason"]) == (
        "soft",
        "js_challenge:cloudflare",
    )
    challenge_host = crawler.wiring.run.frontier.hosts[f"127.0.0.1:{challenge_port}"]
    assert challenge_host.next_allowed < page[challenged]["fetched_at"] + COOLDOWN / 2
    # Nothing of any block page is stored as content, not even its title.
    for url in (blocked, incident, challenged):
        stored = page[url]
        assert (stored["content_hash"], stored["text"], stored["title"]) == (None, None, None)
        assert (stored["main_text"], stored["archive_path"]) == (None, None)
    # Each host cools down (held from the verdict on, a moment before the page was recorded),
    # and its breaker counts the refusal (the 200 too).
    frontier = crawler.wiring.run.frontier
    for url, host in ((blocked, cf_host), (incident, imperva_host)):
        assert frontier.hosts[host].next_allowed > page[url]["fetched_at"] + COOLDOWN / 2
    breakers = crawler.breakers
    assert breakers is not None
    records = {host: breakers.store.get(host) for host in (cf_host, imperva_host)}
    assert {host: record and record.failures for host, record in records.items()} == {
        cf_host: 1,
        imperva_host: 1,
    }
    assert (hits["cloudflare/products/"], hits["imperva/shop/"]) == (1, 1)
    stats = crawler.stats
    assert (stats["validate/vendor/cloudflare"], stats["validate/vendor/imperva"]) == (2, 1)
    assert (stats["validate/hard/access_denied"], stats["validate/hard/bot_check"]) == (1, 1)


@pytest.mark.parametrize(
    ("fixture", "reason", "error", "halted"),
    [
        # Served with 200 (github.com/scaredos/cfresearch: the challenge-platform orchestrate
        # path): a renderer may pass it, so it is recorded as needs_js, naming who asked.
        (
            "cloudflare_managed_challenge.html",
            "needs_js",
            "soft: needs_js (js_challenge:cloudflare: verifying you are human)",
            True,
        ),
        # wafw00f plugins/incapsula.py: Imperva's incident page, served with 200.
        (
            "imperva_incident.html",
            "bot_check:imperva",
            "hard: bot_check:imperva (incapsula incident id)",
            True,
        ),
    ],
)
async def test_the_validate_step_records_the_vendor(
    tmp_path: Path, fixture: str, reason: str, error: str, halted: bool
) -> None:
    url = "http://127.0.0.1:9/page.html"
    async with crawl_parts(tmp_path, [url]) as parts:
        work = page_work(parts, url, (FIXTURES / fixture).read_bytes())
        step = ValidateStep(Validator(), parts.run, parts.outcomes, hard_cooldown=60.0,
                            max_retries=0)  # fmt: skip

        rejected = step.run(work)

    assert rejected is not None
    assert (work.record.rejection_reason, rejected.outcome.error, rejected.halt) == (
        reason,
        error,
        halted,
    )
    assert work.record.content_hash is None


async def test_a_rate_limit_page_is_hard_and_its_retry_after_is_honoured(
    make_settings: SettingsFactory,
) -> None:
    """Cloudflare's 1015 page comes with 429 and Retry-After (our fixture after
    https://developers.cloudflare.com/support/troubleshooting/http-status-codes/
    cloudflare-1xxx-errors/error-1015/): a hard rate_limited verdict, and the host is held for
    the Retry-After, which is longer than the cooldown here."""
    page_body = (FIXTURES / "cloudflare_1015_wrapped.html").read_bytes()
    retry_after = 7_200

    async def limited(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(status=404)
        headers = {**CLOUDFLARE_HEADERS, "Retry-After": str(retry_after)}
        return web.Response(status=429, body=page_body, headers=headers)

    settings = make_settings(
        validate_hard_cooldown=60.0,
        fetch_max_retries=0,
        discovery_sitemaps=False,
        crawl_max_depth=0,
    )
    async with serve(limited) as port:
        url = f"http://127.0.0.1:{port}/catalog/"
        crawler, rows, pages = await crawl(settings, [url])

    (row,) = [r for r in rows if r["url"] == url]
    (page,) = [p for p in pages if p["url"] == url]
    assert row["error"] == "HTTP 429; hard: rate_limited:cloudflare (you are being rate limited)"
    assert (page["validation_status"], page["rejection_reason"]) == (
        "hard",
        "rate_limited:cloudflare",
    )
    held = crawler.wiring.run.frontier.hosts[f"127.0.0.1:{port}"].next_allowed
    assert held > page["fetched_at"] + retry_after - 60
    assert crawler.stats["validate/hard/rate_limited"] == 1
