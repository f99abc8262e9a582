"""Who blocked us: the marks anti-bot vendors leave on their block, CAPTCHA and challenge pages.

:func:`identify` looks at a response's headers and the head of its body (lower-cased bytes)
and names the vendor, whether the page refuses us (``hard``) or is a JavaScript check that a
browser passes (``soft``), and a reason token. Only marks that a vendor puts on its own
interstitial count: the scripts the same vendors inject into normal pages (Cloudflare's
``/cdn-cgi/challenge-platform/scripts/jsd/main.js``, a Turnstile widget from
``challenges.cloudflare.com/turnstile``, AWS WAF's ``challenge.js`` integration, DataDome's
``tags.js``, Imperva's ``_Incapsula_Resource?SWJIYLWA=`` script) are no mark.

The marks were read from the vendors' documentation and from pages they serve, as collected
by wafw00f (github.com/EnableSecurity/wafw00f, wafw00f/plugins/) and listed in
tests/test_blockpages.py with each fixture's source.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["BLOCK_MARKS", "HEAD_BYTES", "BlockMark", "header_value", "identify", "served_by"]

HEAD_BYTES: Final = 32_768
"""Marks are looked for in this many first bytes: interstitials are small, their marks early."""


@dataclass(slots=True, frozen=True)
class BlockMark:
    """A vendor's page: all of ``needles`` (lower-case bytes) are in the head of the body.

    ``hard``: the page refuses us (a block page, a CAPTCHA); else a challenge a browser
    passes by running its script. ``reason`` is a verdict reason token.
    """

    vendor: str
    hard: bool
    reason: str
    needles: tuple[bytes, ...]

    @property
    def detail(self) -> str:
        return " + ".join(needle.decode() for needle in self.needles)


def _mark(vendor: str, hard: bool, reason: str, *needles: str) -> BlockMark:
    return BlockMark(vendor, hard, reason, tuple(n.lower().encode() for n in needles))


HARD, SOFT = True, False
BLOCK_MARKS: Final = (
    # Cloudflare: 1xxx error pages (1020 firewall rule, 1015 rate limit, 1010/1012 ...), the
    # "Attention Required!" block and CAPTCHA pages, then its challenges (hard first: an
    # error page may carry a challenge script too).
    _mark("cloudflare", HARD, "rate_limited", "cloudflare", "you are being rate limited"),
    _mark("cloudflare", HARD, "access_denied", "used cloudflare to restrict access"),
    _mark("cloudflare", HARD, "bot_check", "attention required! | cloudflare"),
    _mark("cloudflare", HARD, "bot_check", "cf-error-details", "you have been blocked"),
    _mark("cloudflare", HARD, "captcha", "cf_captcha_kind"),
    _mark("cloudflare", HARD, "captcha", "cf-challenge-hcaptcha-wrapper"),
    _mark("cloudflare", SOFT, "js_challenge", "_cf_chl_opt"),
    _mark("cloudflare", SOFT, "js_challenge", "/cdn-cgi/challenge-platform/h/"),
    _mark("cloudflare", SOFT, "js_challenge", "/cdn-cgi/challenge-platform/orchestrate/"),
    _mark("cloudflare", SOFT, "js_challenge", "jschl_vc"),
    _mark("cloudflare", SOFT, "js_challenge", "jschl-answer"),
    _mark("cloudflare", SOFT, "js_challenge", "cf-browser-verification"),
    # Akamai edge denials: the reference number ("#18.<hex>") and its errors host, written
    # with HTML entities by the edge.
    _mark("akamai", HARD, "access_denied", "reference&#32;&#35;18&#46;"),
    _mark("akamai", HARD, "access_denied", "errors&#46;edgesuite&#46;net"),
    _mark("akamai", HARD, "access_denied", "errors.edgesuite.net"),
    # Imperva (Incapsula): the incident page, an iframe of _Incapsula_Resource?CWUDNSAI=.
    _mark("imperva", HARD, "bot_check", "incapsula incident id"),
    _mark("imperva", HARD, "bot_check", "_incapsula_resource?cwudnsai="),
    # DataDome: its interstitial ('rt':'i', a device check) and its CAPTCHA ('rt':'c').
    _mark("datadome", SOFT, "js_challenge", "captcha-delivery.com", "'rt':'i'"),
    _mark("datadome", HARD, "captcha", "captcha-delivery.com"),
    # HUMAN (PerimeterX): "Press & Hold", the px-captcha element.
    _mark("perimeterx", HARD, "captcha", "px-captcha"),
    _mark("perimeterx", HARD, "captcha", "_pxcaptcha"),
    _mark("perimeterx", HARD, "captcha", "captcha.px-cdn.net"),
    _mark("perimeterx", HARD, "captcha", "press &amp; hold", "_px"),
    _mark("perimeterx", HARD, "captcha", "press & hold", "_px"),
    # AWS WAF: the CAPTCHA interstitial, then the challenge one (both set window.gokuProps).
    _mark("aws_waf", HARD, "captcha", "awswafcaptcha"),
    _mark("aws_waf", HARD, "captcha", "captcha-sdk.awswaf.com"),
    _mark("aws_waf", SOFT, "js_challenge", "gokuprops"),
    _mark("aws_waf", SOFT, "js_challenge", "awswafintegration.checkforcerefresh"),
    # Sucuri: the firewall's block page, then its JavaScript cookie check.
    _mark("sucuri", HARD, "access_denied", "sucuri website firewall"),
    _mark("sucuri", HARD, "access_denied", "cdn.sucuri.net/sucuri-firewall"),
    _mark("sucuri", SOFT, "js_challenge", "sucuri_cloudproxy_js"),
    # Google's /sorry page, and the big retailers' robot checks.
    _mark("google", HARD, "captcha", "unusual traffic from your computer network"),
    _mark("amazon", HARD, "captcha", "/errors/validatecaptcha"),
    _mark("amazon", HARD, "captcha", ">robot check</title>"),
    _mark("amazon", HARD, "captcha", "enter the characters you see below"),
    _mark("walmart", HARD, "captcha", "robot or human?"),
)

# The marks by their first needle (most have one): a test per mark on a page without any.
_BY_FIRST_NEEDLE: Final = tuple((mark.needles[0], mark.needles[1:], mark) for mark in BLOCK_MARKS)
# Headers that only a vendor's interstitial carries (not every response it protects, as
# ``x-datadome`` or ``server: cloudflare`` do): name -> value -> mark.
_HEADER_MARKS: Final = {
    "cf-mitigated": {"challenge": _mark("cloudflare", SOFT, "js_challenge", "cf-mitigated")},
    "x-amzn-waf-action": {
        "captcha": _mark("aws_waf", HARD, "captcha", "x-amzn-waf-action: captcha"),
        "challenge": _mark("aws_waf", SOFT, "js_challenge", "x-amzn-waf-action: challenge"),
    },
}
# Who served a page whose text names no vendor ("Access Denied", "Just a moment..."): name ->
# what its value starts with -> vendor.
_SERVERS: Final = (
    ("server", "cloudflare", "cloudflare"),
    ("server", "akamaighost", "akamai"),
    ("x-cdn", "incapsula", "imperva"),
    ("x-datadome", "", "datadome"),
    ("x-sucuri-id", "", "sucuri"),
    ("x-amzn-waf-action", "", "aws_waf"),
)


def identify(headers: Mapping[str, str], head: bytes) -> BlockMark | None:
    """The vendor's mark on this response: a header mark, else the first body mark (of
    :data:`BLOCK_MARKS`, in order) whose needles are all in ``head`` (lower-cased bytes).

    A body mark wins over a header mark when it is hard: a CAPTCHA served as a challenge is
    still a CAPTCHA.
    """
    by_header: BlockMark | None = None
    for name, values in _HEADER_MARKS.items():
        value = header_value(headers, name)
        if value is not None:
            by_header = values.get(value.strip().lower())
            if by_header is not None:
                break
    for first, rest, mark in _BY_FIRST_NEEDLE:
        if first in head and all(needle in head for needle in rest):
            if by_header is None or mark.hard:
                return mark
            break
    return by_header


def served_by(headers: Mapping[str, str]) -> str | None:
    """The vendor that served a response, by its headers (None: none known)."""
    for name, prefix, vendor in _SERVERS:
        value = header_value(headers, name)
        if value is not None and value.strip().lower().startswith(prefix):
            return vendor
    return None


def header_value(headers: Mapping[str, str], name: str) -> str | None:
    """A header whatever the case of its key (multidicts are insensitive, plain dicts not)."""
    value = headers.get(name)
    if value is None and not hasattr(headers, "getall"):
        for key, candidate in headers.items():
            if key.lower() == name:
                return candidate
    return value
