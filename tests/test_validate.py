"""Garbage pages rejected with their reasons, good pages (short ones too) kept."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from multidict import CIMultiDict

from harvestman.crawl.fetch import Fetcher
from harvestman.parse import parse_html
from harvestman.validate import (
    DEFAULT_SIGNATURES,
    MIN_WORDS,
    SENTENCE_WORDS,
    Signature,
    Validator,
    Verdict,
    VerdictStatus,
    count_words,
    validate_response,
)

HTML = {"Content-Type": "text/html; charset=utf-8"}
OK = Verdict(VerdictStatus.OK, None)
SOFT, HARD = VerdictStatus.SOFT, VerdictStatus.HARD

CLOUDFLARE_BLOCK = b"""<!DOCTYPE html>
<html class="no-js" lang="en-US">
<head>
<title>Attention Required! | Cloudflare</title>
<meta charset="UTF-8" />
<meta name="robots" content="noindex, nofollow" />
<link rel="stylesheet" id="cf_styles-css" href="/cdn-cgi/styles/cf.errors.css" />
<script>if (!navigator.cookieEnabled) { window.addEventListener('DOMContentLoaded', function () {
  document.getElementById('cookie-alert').style.display = 'block'; }) }</script>
</head>
<body>
<div id="cf-wrapper">
  <div class="cf-alert cf-alert-error" id="cookie-alert">Please enable cookies.</div>
  <div id="cf-error-details" class="cf-error-details-wrapper">
    <div class="cf-wrapper cf-header cf-error-overview">
      <h1 data-translate="block_headline">Sorry, you have been blocked</h1>
      <h2 class="cf-subheadline"><span>You are unable to access</span> example.com</h2>
    </div>
    <div class="cf-section cf-wrapper"><div class="cf-columns two">
      <div class="cf-column">
        <h2>Why have I been blocked?</h2>
        <p>This website is using a security service to protect itself from online attacks. The
        action you just performed triggered the security solution. There are several actions
        that could trigger this block including submitting a certain word or phrase, a SQL
        command or malformed data.</p>
      </div>
      <div class="cf-column">
        <h2>What can I do to resolve this?</h2>
        <p>You can email the site owner to let them know you were blocked. Please include what
        you were doing when this page came up and the Cloudflare Ray ID found at the bottom of
        this page.</p>
      </div>
    </div></div>
    <div class="cf-error-footer cf-wrapper"><p class="text-13">
      <span class="cf-footer-item">Cloudflare Ray ID: <strong>8a1b2c3d4e5f6789</strong></span>
      <span class="cf-footer-separator">&bull;</span>
      <span class="cf-footer-item">Your IP: <button type="button">Click to reveal</button>
      <span class="hidden">203.0.113.7</span></span>
      <span class="cf-footer-item"><span>Performance &amp; security by</span>
      <a href="https://www.cloudflare.com/5xx-error-landing">Cloudflare</a></span>
    </p></div>
  </div>
</div>
</body>
</html>
"""

AKAMAI_DENIED = b"""<HTML><HEAD>
<TITLE>Access Denied</TITLE>
</HEAD><BODY>
<H1>Access Denied</H1>

You don't have permission to access "http&#58;&#47;&#47;www&#46;example&#46;com&#47;news&#47;" \
on this server.<P>
Reference&#32;&#35;18&#46;6f2a3e17&#46;1700000000&#46;1a2b3c4d
<P>https&#58;&#47;&#47;errors&#46;edgesuite&#46;net&#47;18&#46;6f2a3e17&#46;1700000000</P>
</BODY>
</HTML>
"""

APACHE_FORBIDDEN = b"""<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">
<html><head>
<title>403 Forbidden</title>
</head><body>
<h1>Forbidden</h1>
<p>You don't have permission to access this resource.</p>
<hr>
<address>Apache/2.4.62 (Debian) Server at www.example.com Port 80</address>
</body></html>
"""

CLOUDFLARE_CHALLENGE = b"""<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
<meta name="robots" content="noindex,nofollow">
<style>*{box-sizing:border-box;margin:0;padding:0}html{line-height:1.15}body{display:flex;
flex-direction:column;height:100vh;min-height:100vh}.main-content{margin:8rem auto}</style>
<meta http-equiv="refresh" content="390"></head><body class="no-js">
<div class="main-wrapper" role="main"><div class="main-content">
<h1 class="zone-name-title h1">www.example.com</h1>
<p id="Truv1" class="h2 spacer-bottom">Verifying you are human. This may take a few seconds.</p>
<div id="challenge-stage"></div>
<div id="challenge-body-text" class="core-msg spacer">www.example.com needs to review the security
of your connection before proceeding.</div>
<noscript><div class="h2"><span>Enable JavaScript and cookies to continue</span></div></noscript>
</div></div>
<script>(function(){window._cf_chl_opt={cvId: '3',cZone: "www.example.com",cType: 'managed',
cRay: '8a1b2c3d4e5f6789'};var cpo = document.createElement('script');
cpo.src = '/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1?ray=8a1b2c3d4e5f6789';
document.getElementsByTagName('head')[0].appendChild(cpo);}());</script></body></html>
"""

LEGACY_CHALLENGE = b"""<!DOCTYPE HTML><html lang="en-US"><head><title>Just a moment...</title>
</head><body><table width="100%" height="100%"><tr><td align="center" valign="middle">
<div class="cf-browser-verification cf-im-under-attack">
<h1><span>Checking your browser before accessing</span> example.com.</h1>
<p>This process is automatic. Your browser will redirect to your requested content shortly.</p>
<p>Please allow up to 5 seconds&hellip;</p></div>
<div class="attribution">DDoS protection by <a href="https://www.cloudflare.com/">Cloudflare</a>
<br>Ray ID: 8a1b2c3d4e5f6789</div></td></tr></table></body></html>
"""

ENABLE_JS = b"""<!doctype html><html><head><title>Example Shop</title></head><body>
<div class="warning"><h2>Please enable JavaScript</h2>
<p>This site requires JavaScript to work. Please enable JavaScript in your browser settings and
reload the page.</p></div>
<script src="/static/shop.js"></script></body></html>
"""

APP_SHELL_HEAD = b"""<!doctype html><html lang="en"><head><meta charset="utf-8"/>
<link rel="icon" href="/favicon.ico"/><meta name="viewport" content="width=device-width"/>
<title>Dashboard</title><script defer="defer" src="/static/js/main.4f2a1b3c.js"></script>
<link href="/static/css/main.7d8e9f0a.css" rel="stylesheet"></head><body>"""
APP_SHELL_STATE = b"""<script>window.__INITIAL_STATE__ = {"user":null,"flags":{"beta":true},
"routes":["/","/settings","/reports","/billing","/team","/projects","/help"]};</script>"""
# create-react-app's default page says so in <noscript>, which is not visible text.
APP_SHELL_NOSCRIPT = (
    APP_SHELL_HEAD
    + b"<noscript>You need to enable JavaScript to run this app.</noscript>"
    + b'<div id="root"></div>'
    + APP_SHELL_STATE
    + b"</body></html>"
)
APP_SHELL = (
    APP_SHELL_HEAD + b'<div id="root"><p>Loading...</p></div>' + APP_SHELL_STATE + b"</body></html>"
)
TINY_APP_SHELL = b'<html><body><div id="app"></div><script src="/app.js"></script></body></html>'

EMPTY_SHELL = b"<html><head><title>Home</title></head><body><div id='app'></div></body></html>"
STYLE = b"<style>" + b"nav a{margin:0 4px;padding:2px;color:#333;text-decoration:none} " * 8
NAV_ONLY = (
    b"<html><head><title>Site map</title>" + STYLE + b"</style></head><body>"
    b'<nav><a href="/">Home</a> <a href="/news">News</a> <a href="/about">About</a> '
    b'<a href="/contact">Contact</a></nav><div class="content"></div>'
    b"<footer>&copy; 2026 Example</footer></body></html>"
)

SHORT_NOTE = b"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Library hours</title></head><body>
<p>The library is closed on Monday for the public holiday and opens again on Tuesday at nine.</p>
</body></html>
"""
CLOSED_TODAY = b"<html><head><title>Notice</title></head><body><p>Closed today.</p></body></html>"
CLOSED_TODAY_STYLED = (
    b"<html><head><title>Notice</title>" + STYLE + b"</style></head>"
    b"<body><p>Closed today.</p></body></html>"
)
LIST_OF_LINKS = (
    b"<html><head><title>Archive</title></head><body><ul>"
    + b"".join(
        b'<li><a href="/2026/%02d/">Archive of month %d</a></li>' % (m, m) for m in range(1, 8)
    )
    + b"</ul></body></html>"
)

SENTENCE = (
    "The council met on Tuesday to discuss the new library budget, and the members agreed that "
    "the opening hours would be extended during the exam season for all students. "
)


def article(mention: str, *, sentences: int = 30, title: str = "Council news") -> bytes:
    """A page of ``sentences`` sentences in paragraphs, with ``mention`` in the last one."""
    paragraphs = "".join(f"<p>{SENTENCE * 3}</p>\n" for _ in range(sentences // 3))
    return (
        f"<!doctype html><html><head><title>{title}</title></head><body><article>"
        f"<h1>{title}</h1>{paragraphs}<p>{mention}</p></article></body></html>"
    ).encode()


GARBAGE = {
    "cloudflare block": (
        CLOUDFLARE_BLOCK,
        Verdict(HARD, "bot_check", "you have been blocked", "cloudflare"),
    ),
    "akamai access denied": (
        AKAMAI_DENIED,
        Verdict(HARD, "access_denied", "access denied", "akamai"),
    ),
    "apache 403 page": (APACHE_FORBIDDEN, Verdict(HARD, "forbidden", "403 forbidden")),
    "cloudflare challenge": (
        CLOUDFLARE_CHALLENGE,
        Verdict(SOFT, "js_challenge", "verifying you are human", "cloudflare"),
    ),
    "legacy challenge": (
        LEGACY_CHALLENGE,
        Verdict(SOFT, "js_challenge", "checking your browser", "cloudflare"),
    ),
    "enable javascript": (ENABLE_JS, Verdict(SOFT, "needs_js", "enable javascript")),
    "app shell, noscript": (
        APP_SHELL_NOSCRIPT,
        Verdict(SOFT, "needs_js", "<noscript>: enable javascript"),
    ),
    "app shell": (APP_SHELL, Verdict(SOFT, "only_scripts", "2 scripts, 1 words of text")),
    "tiny app shell": (TINY_APP_SHELL, Verdict(SOFT, "only_scripts", "1 scripts, 0 words of text")),
    "empty shell": (EMPTY_SHELL, Verdict(SOFT, "too_small", "78 bytes < 500, 0 words")),
    "closed today, small": (CLOSED_TODAY, Verdict(SOFT, "too_small", "80 bytes < 500, 2 words")),
    "empty body": (b"", Verdict(SOFT, "too_small", "0 bytes < 500, 0 words")),
    "nav only": (NAV_ONLY, Verdict(SOFT, "no_text", "7 words, no paragraph text")),
}

GOOD = {
    "short note": SHORT_NOTE,
    "closed today, styled": CLOSED_TODAY_STYLED,
    "list of links": LIST_OF_LINKS,
    "article": article("The end."),
    "long article mentioning every phrase": article(
        "Readers reported an Access Denied error, a 403 Forbidden page, a request to enable "
        "JavaScript and a 'checking your browser' screen; you have been blocked, said one."
    ),
    "short article mentioning access denied after its lead": article(
        "A clerk said the access denied message was a mistake.", sentences=6
    ),
    "long article titled access denied": article("Fin.", title="Access denied: a report"),
}


def test_the_fixtures_are_what_their_names_say() -> None:
    assert (len(EMPTY_SHELL), len(CLOSED_TODAY)) == (78, 80)
    assert len(SHORT_NOTE) < 300
    assert min(len(NAV_ONLY), len(CLOSED_TODAY_STYLED), len(APP_SHELL)) >= 500
    short = parse_html(GOOD["short article mentioning access denied after its lead"], "http://a/")
    assert short.text.index("access denied") > 400
    assert len(short.text) < 2_000


@pytest.mark.parametrize(("body", "expected"), GARBAGE.values(), ids=GARBAGE.keys())
def test_garbage_is_rejected_with_its_reason(body: bytes, expected: Verdict) -> None:
    assert validate_response(200, HTML, body) == expected


@pytest.mark.parametrize("body", GOOD.values(), ids=GOOD.keys())
def test_good_pages_are_kept(body: bytes) -> None:
    assert validate_response(200, HTML, body) == OK


@pytest.mark.parametrize(
    "body", [*(b for b, _ in GARBAGE.values()), *GOOD.values()], ids=[*GARBAGE, *GOOD]
)
def test_the_parsed_text_gives_the_same_verdict(body: bytes) -> None:
    page = parse_html(body, "https://www.example.com/page", charset="utf-8")
    validator = Validator()
    assert validator.validate(200, HTML, body, text=page.text) == validator.validate(
        200, HTML, body
    )


@pytest.mark.parametrize(
    ("status", "headers", "body"),
    [
        (404, HTML, EMPTY_SHELL),
        (404, HTML, AKAMAI_DENIED),  # not a status anti-bot services answer with
        (301, HTML, b""),
        (204, HTML, b""),
        (200, {"Content-Type": "application/json"}, b'{"error": "access denied"}'),
        (200, {"Content-Type": "text/plain"}, b"Access Denied"),
        (200, {}, b"%PDF-1.7 access denied"),
    ],
)
def test_only_2xx_html_is_judged(status: int, headers: dict[str, str], body: bytes) -> None:
    assert validate_response(status, headers, body) == OK


def test_error_statuses_of_anti_bot_services_are_judged_too() -> None:
    assert validate_response(403, HTML, AKAMAI_DENIED) == GARBAGE["akamai access denied"][1]
    assert validate_response(503, HTML, CLOUDFLARE_CHALLENGE) == GARBAGE["cloudflare challenge"][1]


@pytest.mark.parametrize(
    "headers",
    [
        {},  # untyped: sniffed as HTML
        {"content-type": "text/html"},
        {"CONTENT-TYPE": "application/xhtml+xml"},
        CIMultiDict({"content-type": "Text/HTML; charset=ISO-8859-1"}),
    ],
)
def test_html_is_recognised_whatever_the_header_spelling(headers: dict[str, str]) -> None:
    assert validate_response(206, headers, AKAMAI_DENIED).reason == "access_denied"


JAPANESE_NOTE = (
    "<title>お知らせ</title><p>図書館は月曜日に休館します。火曜日の九時に開館します。</p>"
)
JAPANESE_ARTICLE = (
    "<html><head><title>市議会</title><script>gtag('config', 'G-1');</script></head><body>"
    + "<p>市議会は火曜日に図書館の新しい予算について話し合いました。</p>" * 12
    + "</body></html>"
)


@pytest.mark.parametrize(
    ("body", "charset"),
    [(JAPANESE_NOTE, "shift_jis"), (JAPANESE_NOTE, "utf-8"), (JAPANESE_ARTICLE, "euc-jp")],
)
def test_text_without_spaces_counts_its_characters(body: str, charset: str) -> None:
    raw = body.encode(charset)
    headers = {"Content-Type": f"text/html; charset={charset}"}
    text = parse_html(raw, "https://www.example.jp/", charset=charset).text
    assert count_words(text) >= (SENTENCE_WORDS if body is JAPANESE_NOTE else MIN_WORDS)
    assert validate_response(200, headers, raw) == OK
    assert validate_response(200, headers, raw, text=text) == OK


def test_min_bytes_decides_between_too_small_and_no_text() -> None:
    assert validate_response(200, HTML, EMPTY_SHELL, min_bytes=50) == Verdict(
        SOFT, "no_text", "0 words, no paragraph text"
    )
    assert validate_response(200, HTML, CLOSED_TODAY, min_bytes=50) == OK
    assert validate_response(200, HTML, CLOSED_TODAY_STYLED, min_bytes=5_000).reason == (
        "too_small"
    )


def test_extra_patterns_come_first() -> None:
    page = f"<title>Sorry</title><h1>Request blocked by the WAF.</h1><p>{SENTENCE}</p>".encode()
    validator = Validator(extra_patterns=["hard:waf_block:Request  blocked by the WAF"])
    assert validate_response(200, HTML, page) == OK  # the built-in signatures do not know it
    assert validator.validate(200, HTML, page) == Verdict(
        HARD, "waf_block", "request blocked by the waf"
    )
    custom = Validator(extra_patterns=[Signature("attention required", SOFT, "maybe_blocked")])
    assert custom.validate(200, HTML, CLOUDFLARE_BLOCK).reason == "maybe_blocked"


@pytest.mark.parametrize(
    "spec", ["ok:fine:all good", "maybe:x:y", "hard:Bad Reason:phrase", "hard:reason:", "hard"]
)
def test_malformed_signatures_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match=r"."):
        Signature.parse(spec)


def test_which_verdicts_a_renderer_may_fix() -> None:
    renderable = {name for name, (_, verdict) in GARBAGE.items() if verdict.needs_render}
    assert renderable == {
        "cloudflare challenge",
        "legacy challenge",
        "enable javascript",
        "app shell, noscript",
        "app shell",
        "tiny app shell",
    }
    assert not OK.needs_render
    assert {s.reason for s in DEFAULT_SIGNATURES} == {
        "rate_limited",
        "bot_check",
        "forbidden",
        "access_denied",
        "js_challenge",
        "needs_js",
    }


# -- over HTTP: the headers and bodies the fetch layer hands over ----------------------------------

PAGES = {
    "/blocked": (CLOUDFLARE_BLOCK, "text/html; charset=UTF-8"),
    "/challenge": (CLOUDFLARE_CHALLENGE, "text/html"),
    "/shell": (APP_SHELL, "text/html"),
    "/note": (SHORT_NOTE, "text/html"),
    "/denied": (AKAMAI_DENIED, "text/html;charset=ISO-8859-1"),
    "/data.json": (b'{"message": "Access Denied"}', "application/json"),
}


@pytest.fixture
async def server() -> AsyncIterator[str]:
    async def handle(request: web.Request) -> web.Response:
        body, content_type = PAGES[request.path]
        return web.Response(body=body, headers={"Content-Type": content_type})

    app = web.Application()
    app.router.add_get("/{name}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_fetched_responses_are_judged(server: str) -> None:
    validator = Validator()
    verdicts = {}
    async with Fetcher(user_agent="harvestman-test") as fetcher:
        for path in PAGES:
            result = await fetcher.fetch(server + path)
            page = parse_html(result.body, result.final_url) if result.is_html else None
            text = page.text if page is not None else None
            verdicts[path] = validator.validate(result.status, result.headers, result.body, text)
    assert {path: (v.status.value, v.reason) for path, v in verdicts.items()} == {
        "/blocked": ("hard", "bot_check"),
        "/challenge": ("soft", "js_challenge"),
        "/shell": ("soft", "only_scripts"),
        "/note": ("ok", None),
        "/denied": ("hard", "access_denied"),
        "/data.json": ("ok", None),
    }
