"""Anti-bot pages of the big vendors are refused or sent to the renderer, with the vendor
named; normal pages that carry the same vendors' scripts are kept.

The fixtures (tests/fixtures/blockpages/, one file per case) are our own small pages written
after the markers of the real ones; the source of each is cited in its row. wafw00f is
github.com/EnableSecurity/wafw00f, its plugins in wafw00f/plugins/<vendor>.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from multidict import CIMultiDict

from harvestman.blockpages import BLOCK_MARKS, HEAD_BYTES, identify
from harvestman.parse import parse_html
from harvestman.validate import Validator, Verdict, VerdictStatus, validate_response

FIXTURES = Path(__file__).parent / "fixtures" / "blockpages"
HTML = "text/html; charset=UTF-8"
OK, SOFT, HARD = VerdictStatus.OK, VerdictStatus.SOFT, VerdictStatus.HARD
CF_DOCS = "https://developers.cloudflare.com"
AWS_DOCS = "https://docs.aws.amazon.com/waf/latest/developerguide"


@dataclass(frozen=True)
class Case:
    fixture: str | None  # None: an empty body
    status: int
    headers: dict[str, str]
    expected: tuple[VerdictStatus, str | None, str | None]  # status, reason, vendor
    source: str

    def body(self) -> bytes:
        return (FIXTURES / self.fixture).read_bytes() if self.fixture else b""


def cloudflare(**extra: str) -> dict[str, str]:
    return {"Content-Type": HTML, "Server": "cloudflare", "CF-RAY": "8a1b2c3d4e5f6789-LHR", **extra}


BLOCKED = {
    "cloudflare 1020 firewall rule": Case(
        "cloudflare_1020.html",
        403,
        cloudflare(),
        (HARD, "access_denied", "cloudflare"),
        f"{CF_DOCS}/support/troubleshooting/http-status-codes/cloudflare-1xxx-errors/error-1020/",
    ),
    "cloudflare 1015 rate limit": Case(
        "cloudflare_1015.html",
        429,
        cloudflare(),
        (HARD, "rate_limited", "cloudflare"),
        f"{CF_DOCS}/support/troubleshooting/http-status-codes/cloudflare-1xxx-errors/error-1015/",
    ),
    # Judged ok once: the phrase wraps across lines in the markup (no byte mark) and the title
    # names no refusal. Served with 429 and Retry-After, as Cloudflare serves 1015.
    "cloudflare 1015 rate limit, phrase wrapped, with Retry-After": Case(
        "cloudflare_1015_wrapped.html",
        429,
        cloudflare(**{"Retry-After": "120"}),
        (HARD, "rate_limited", "cloudflare"),
        f"{CF_DOCS}/support/troubleshooting/http-status-codes/cloudflare-1xxx-errors/error-1015/",
    ),
    "nginx 429 page": Case(
        "nginx_429.html",
        429,
        {"Content-Type": "text/html", "Server": "nginx", "Retry-After": "30"},
        (HARD, "rate_limited", None),
        "nginx src/http/ngx_http_special_response.c (ngx_http_error_429_page)",
    ),
    "cloudflare attention required (captcha)": Case(
        "cloudflare_attention_required.html",
        403,
        cloudflare(),
        (HARD, "bot_check", "cloudflare"),
        "wafw00f plugins/cloudflare.py; FlareSolverr src/providers/cloudflare.ts (cf_captcha_kind)",
    ),
    "cloudflare managed challenge": Case(
        "cloudflare_managed_challenge.html",
        403,
        cloudflare(**{"cf-mitigated": "challenge"}),
        (SOFT, "js_challenge", "cloudflare"),
        f"{CF_DOCS}/cloudflare-challenges/challenge-types/challenge-pages/ and "
        f"{CF_DOCS}/cloudflare-challenges/challenge-types/challenge-pages/detect-response/",
    ),
    "cloudflare managed challenge, served with 200": Case(
        "cloudflare_managed_challenge.html",
        200,
        {"Content-Type": HTML},
        (SOFT, "js_challenge", "cloudflare"),
        "github.com/scaredos/cfresearch (the /cdn-cgi/challenge-platform/h/<x>/orchestrate path)",
    ),
    "cloudflare turnstile (interactive) challenge": Case(
        "cloudflare_turnstile_challenge.html",
        403,
        cloudflare(**{"cf-mitigated": "challenge"}),
        (HARD, "bot_check", "cloudflare"),
        f"{CF_DOCS}/cloudflare-challenges/challenge-types/challenge-pages/ (interactive)",
    ),
    "cloudflare legacy I'm Under Attack": Case(
        "cloudflare_under_attack_legacy.html",
        503,
        cloudflare(),
        (SOFT, "js_challenge", "cloudflare"),
        "github.com/VeNoMouS/cloudscraper cloudscraper/cloudflare.py (jschl_vc, chk_jschl)",
    ),
    "cloudflare challenge by its header alone": Case(
        None,
        403,
        cloudflare(**{"cf-mitigated": "challenge"}),
        (SOFT, "js_challenge", "cloudflare"),
        f"{CF_DOCS}/cloudflare-challenges/challenge-types/challenge-pages/detect-response/",
    ),
    "akamai edge denial": Case(
        "akamai_access_denied.html",
        403,
        {"Content-Type": "text/html", "Server": "AkamaiGHost"},
        (HARD, "access_denied", "akamai"),
        "wafw00f plugins/kona.py (Server: AkamaiGHost); Akamai's 'Reference #18.' error page",
    ),
    "imperva incident page, served with 200": Case(
        "imperva_incident.html",
        200,
        {"Content-Type": "text/html", "X-CDN": "Incapsula", "X-Iinfo": "8-12345678-0 0NNN"},
        (HARD, "bot_check", "imperva"),
        "wafw00f plugins/incapsula.py; github.com/Imbuedhush/Incapsula-Bypass README.md",
    ),
    "datadome captcha": Case(
        "datadome_captcha.html",
        403,
        {"Content-Type": HTML, "X-DataDome": "protected", "X-DD-B": "1"},
        (HARD, "captcha", "datadome"),
        "https://docs.capsolver.com/de/guide/antibots/datadome (the slider; t=bv: blocked)",
    ),
    "datadome device check interstitial": Case(
        "datadome_interstitial.html",
        403,
        {"Content-Type": HTML, "X-DataDome": "protected"},
        (SOFT, "js_challenge", "datadome"),
        "https://docs.datadome.co/docs/device-check",
    ),
    "human (perimeterx) press and hold": Case(
        "perimeterx_press_and_hold.html",
        403,
        {"Content-Type": HTML},
        (HARD, "captcha", "perimeterx"),
        "wafw00f plugins/perimeterx.py; perimeterx mod_perimeterx docs (Custom Block Page)",
    ),
    "walmart robot or human (a perimeterx page)": Case(
        "walmart_robot_or_human.html",
        200,
        {"Content-Type": HTML},
        (HARD, "captcha", "perimeterx"),
        "https://www.walmart.com/blocked (a HUMAN page: wafw00f plugins/perimeterx.py)",
    ),
    "aws waf captcha": Case(
        "aws_waf_captcha.html",
        405,
        {"Content-Type": HTML, "x-amzn-waf-action": "captcha"},
        (HARD, "captcha", "aws_waf"),
        f"{AWS_DOCS}/waf-captcha-and-challenge-actions.html and "
        f"{AWS_DOCS}/waf-js-captcha-api-conditional.html (HTTP 405)",
    ),
    "aws waf challenge, 202": Case(
        "aws_waf_challenge.html",
        202,
        {"Content-Type": HTML, "x-amzn-waf-action": "challenge"},
        (SOFT, "js_challenge", "aws_waf"),
        f"{AWS_DOCS}/waf-captcha-and-challenge-actions.html (202, x-amzn-waf-action: challenge)",
    ),
    "sucuri firewall": Case(
        "sucuri_access_denied.html",
        403,
        {"Content-Type": HTML, "Server": "Sucuri/Cloudproxy", "X-Sucuri-ID": "14013"},
        (HARD, "access_denied", "sucuri"),
        "wafw00f plugins/sucuri.py",
    ),
    "google unusual traffic (/sorry)": Case(
        "google_sorry.html",
        429,
        {"Content-Type": HTML},
        (HARD, "captcha", "google"),
        "https://support.google.com/websearch/answer/86640",
    ),
    "amazon robot check": Case(
        "amazon_robot_check.html",
        503,
        {"Content-Type": HTML, "Server": "Server"},
        (HARD, "captcha", "amazon"),
        "github.com/ziplokk1/scrapy-amazon-robot-middleware README.md ('Robot Check')",
    ),
    "amazon robot check, served with 200": Case(
        "amazon_robot_check.html",
        200,
        {"Content-Type": HTML},
        (HARD, "captcha", "amazon"),
        "as above: Amazon serves the same page with 200 too",
    ),
    "plain nginx 403": Case(
        "nginx_403.html",
        403,
        {"Content-Type": "text/html", "Server": "nginx"},
        (HARD, "forbidden", None),
        "nginx src/http/ngx_http_special_response.c (ngx_http_error_403_page)",
    ),
    "plain 403 without a body": Case(
        None,
        403,
        {"Content-Length": "0"},
        (HARD, "forbidden", None),
        "RFC 9110 section 15.5.4 (403 Forbidden)",
    ),
}

KEPT = {
    # A bare 429 is retried after its Retry-After (the fetch layer's), the host not cooled down.
    "bare 429 with Retry-After": Case(
        None,
        429,
        {"Retry-After": "1", "Content-Length": "0"},
        (OK, None, None),
        "RFC 6585 section 4 (429 Too Many Requests)",
    ),
    # Judged hard once: "Access Denied" heads it and its text is short; three paragraphs make
    # it an article (the <noscript> is Disqus's, for the comments).
    "short article on fixing S3 access denied, noscript for comments": Case(
        "ok_article_s3_access_denied.html",
        200,
        {"Content-Type": HTML},
        (OK, None, None),
        "modelled on AWS's https://repost.aws/knowledge-center/s3-troubleshoot-403 and Disqus's "
        "embed code (https://help.disqus.com/en/articles/1717112-universal-embed-code)",
    ),
    "article about access denied and javascript": Case(
        "ok_article_about_access_denied.html",
        200,
        {"Content-Type": HTML},
        (OK, None, None),
        "modelled on help articles such as https://support.google.com/chrome/answer/6098869",
    ),
    "cloudflare bot-detection script on a normal page": Case(
        "ok_cloudflare_bot_detection_script.html",
        200,
        cloudflare(),
        (OK, None, None),
        f"{CF_DOCS}/cloudflare-challenges/challenge-types/javascript-detections/",
    ),
    "turnstile widget in a contact form": Case(
        "ok_turnstile_contact_form.html",
        200,
        cloudflare(),
        (OK, None, None),
        f"{CF_DOCS}/turnstile/get-started/client-side-rendering/",
    ),
    "aws waf integration script": Case(
        "ok_aws_waf_integration.html",
        200,
        {"Content-Type": HTML},
        (OK, None, None),
        f"{AWS_DOCS}/waf-js-challenge-api.html",
    ),
    "next.js page with __NEXT_DATA__": Case(
        "ok_nextjs_hydration.html",
        200,
        {"Content-Type": HTML},
        (OK, None, None),
        "https://nextjs.org/docs/pages/building-your-application/rendering/server-side-rendering",
    ),
    "nuxt page with window.__NUXT__": Case(
        "ok_nuxt_hydration.html",
        200,
        {"Content-Type": HTML},
        (OK, None, None),
        "https://v2.nuxt.com/docs/concepts/server-side-rendering/",
    ),
    "product page with JSON-LD and little text": Case(
        "ok_product_jsonld.html",
        200,
        {"Content-Type": HTML},
        (OK, None, None),
        "https://developers.google.com/search/docs/appearance/structured-data/product-snippet",
    ),
    "titled 'Just a moment...' without a challenge": Case(
        "ok_just_a_moment_title.html",
        200,
        cloudflare(),
        (OK, None, None),
        f"{CF_DOCS}/cloudflare-challenges/challenge-types/challenge-pages/ (the title alone)",
    ),
    "short contact page": Case(
        "ok_contact_page.html", 200, {"Content-Type": HTML}, (OK, None, None), "our own"
    ),
    "short contact page in Japanese": Case(
        "ok_contact_page_ja.html", 200, {"Content-Type": HTML}, (OK, None, None), "our own"
    ),
    "short contact page in Chinese": Case(
        "ok_contact_page_zh.html", 200, {"Content-Type": HTML}, (OK, None, None), "our own"
    ),
}
TABLE = {**BLOCKED, **KEPT}


def summary(verdict: Verdict) -> tuple[VerdictStatus, str | None, str | None]:
    return verdict.status, verdict.reason, verdict.vendor


@pytest.mark.parametrize("case", TABLE.values(), ids=TABLE.keys())
def test_vendor_pages_are_judged_with_their_vendor(case: Case) -> None:
    assert summary(validate_response(case.status, case.headers, case.body())) == case.expected


@pytest.mark.parametrize("case", TABLE.values(), ids=TABLE.keys())
def test_headers_are_read_whatever_their_case(case: Case) -> None:
    headers = CIMultiDict((name.upper(), value) for name, value in case.headers.items())
    assert summary(validate_response(case.status, headers, case.body())) == case.expected


@pytest.mark.parametrize(
    "case", [c for c in TABLE.values() if 200 <= c.status < 300], ids=lambda c: c.fixture
)
def test_the_parsed_text_gives_the_same_verdict(case: Case) -> None:
    body = case.body()
    text = parse_html(body, "https://www.example.com/", charset="utf-8").text
    validator = Validator()
    assert validator.validate(case.status, case.headers, body, text) == validator.validate(
        case.status, case.headers, body
    )


def test_every_fixture_is_in_the_table() -> None:
    assert {path.name for path in FIXTURES.iterdir()} == {
        c.fixture for c in TABLE.values() if c.fixture
    }


def test_a_challenge_a_browser_passes_may_be_rendered_a_captcha_not() -> None:
    renderable = {
        name
        for name, case in BLOCKED.items()
        if validate_response(case.status, case.headers, case.body()).needs_render
    }
    assert renderable == {name for name, c in BLOCKED.items() if c.expected[1] == "js_challenge"}
    assert len(renderable) == 6


def test_the_label_carries_the_vendor() -> None:
    case = BLOCKED["cloudflare 1020 firewall rule"]
    verdict = validate_response(case.status, case.headers, case.body())
    assert verdict.label == "access_denied:cloudflare"
    assert Verdict(HARD, "forbidden").label == "forbidden"


def test_other_error_statuses_are_not_judged() -> None:
    body = BLOCKED["akamai edge denial"].body()
    assert validate_response(404, {"Content-Type": HTML}, body).status is OK
    assert validate_response(500, {"Content-Type": HTML}, body).status is OK


def test_marks_are_looked_for_only_in_the_head_of_the_body() -> None:
    body = b"<html><body>" + b" " * HEAD_BYTES + b"<p>Incapsula incident ID: 1</p></body></html>"
    assert identify({}, body[:HEAD_BYTES].lower()) is None
    assert all(needle == needle.lower() for mark in BLOCK_MARKS for needle in mark.needles)
