from __future__ import annotations

import doctest
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harvestman import urls
from harvestman.errors import ConfigError, UrlError
from harvestman.urls import (
    DEFAULT_TRACKING_PARAMS,
    MAX_URL_LENGTH,
    Scope,
    UrlNormalizer,
    host_key,
    normalize_url,
    robots_url,
    url_hash,
)

RFC_BASE = "http://a/b/c/d;p?q"


def reason_of(url: str, base: str | None = None) -> str:
    with pytest.raises(UrlError) as caught:
        normalize_url(url, base)
    return caught.value.reason


def test_docstring_examples_hold() -> None:
    failures, tried = doctest.testmod(urls)
    assert (failures, tried > 0) == (0, True)


def test_defaults_are_the_documented_ones() -> None:
    assert DEFAULT_TRACKING_PARAMS == ("utm_*", "ref", "source", "fbclid", "gclid")
    assert MAX_URL_LENGTH == 2048


# RFC 3986 §5.4, with the results normalized: fragments dropped, empty path "/".
@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        # §5.4.1 normal examples
        ("g", "http://a/b/c/g"),
        ("./g", "http://a/b/c/g"),
        ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"),
        ("//g", "http://g/"),
        ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q"),
        ("g#s", "http://a/b/c/g"),
        ("g?y#s", "http://a/b/c/g?y"),
        (";x", "http://a/b/c/;x"),
        ("g;x", "http://a/b/c/g;x"),
        ("g;x?y#s", "http://a/b/c/g;x?y"),
        ("", "http://a/b/c/d;p?q"),
        (".", "http://a/b/c/"),
        ("./", "http://a/b/c/"),
        ("..", "http://a/b/"),
        ("../", "http://a/b/"),
        ("../g", "http://a/b/g"),
        ("../..", "http://a/"),
        ("../../", "http://a/"),
        ("../../g", "http://a/g"),
        # §5.4.2 abnormal examples
        ("../../../g", "http://a/g"),
        ("../../../../g", "http://a/g"),
        ("/./g", "http://a/g"),
        ("/../g", "http://a/g"),
        ("g.", "http://a/b/c/g."),
        (".g", "http://a/b/c/.g"),
        ("g..", "http://a/b/c/g.."),
        ("..g", "http://a/b/c/..g"),
        ("./../g", "http://a/b/g"),
        ("./g/.", "http://a/b/c/g/"),
        ("g/./h", "http://a/b/c/g/h"),
        ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
        ("g;x=1/../y", "http://a/b/c/y"),
        ("g?y/./x", "http://a/b/c/g?y/./x"),
        ("g?y/../x", "http://a/b/c/g?y/../x"),
        ("g#s/./x", "http://a/b/c/g"),
        ("g#s/../x", "http://a/b/c/g"),
        # the RFC's "backward compatibility" reading, which browsers also follow
        ("http:g", "http://a/b/c/g"),
    ],
)
def test_rfc3986_reference_resolution_examples(reference: str, expected: str) -> None:
    assert normalize_url(reference, RFC_BASE) == expected


def test_rfc3986_example_with_another_scheme_is_dropped() -> None:
    assert reason_of("g:h", RFC_BASE) == "scheme"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # scheme and host case, default ports, fragment, empty path, trailing dot
        ("HTTP://Example.COM", "http://example.com/"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("https://example.com:80/a", "https://example.com:80/a"),
        ("http://example.com:08080/a", "http://example.com:8080/a"),
        ("http://example.com:/a", "http://example.com/a"),
        ("http://example.com/a#section-2", "http://example.com/a"),
        ("http://example.com?x=1", "http://example.com/?x=1"),
        ("http://www.example.com./a", "http://www.example.com/a"),
        # dot segments, also when spelled as escapes
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/a/%2e%2E/b", "http://example.com/b"),
        ("http://example.com/../../x", "http://example.com/x"),
        ("http://example.com/a/b/..", "http://example.com/a/"),
        ("http://example.com/.well-known/x", "http://example.com/.well-known/x"),
        # percent-encoding
        ("http://example.com/%7euser/%41%2d%5f", "http://example.com/~user/A-_"),
        ("http://example.com/a%2fb%3F%c3%a9", "http://example.com/a%2Fb%3F%C3%A9"),
        ("http://example.com/caf\u00e9 cr\u00e8me", "http://example.com/caf%C3%A9%20cr%C3%A8me"),
        ("http://example.com/100%/%zz/%4", "http://example.com/100%25/%25zz/%254"),
        ('http://example.com/a"<b>`{|}^[]', "http://example.com/a%22%3Cb%3E%60%7B%7C%7D%5E%5B%5D"),
        ("http://example.com/;a=1,b:c@d!$&'()*+", "http://example.com/;a=1,b:c@d!$&'()*+"),
        (
            "http://example.com/?q=caf\u00e9&x=%7e&y=%2b",
            "http://example.com/?q=caf%C3%A9&x=~&y=%2B",
        ),
        ("http://example.com/?path=/a/b?c", "http://example.com/?path=/a/b?c"),
        # hosts: IDN, escapes, IPv4, IPv6, underscores
        ("http://B\u00fccher.de/", "http://xn--bcher-kva.de/"),
        ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
        ("http://fa\u00df.de/", "http://xn--fa-hia.de/"),
        ("http://\u00fc.com\u3002/", "http://xn--tda.com/"),
        ("http://%C3%BC.com/", "http://xn--tda.com/"),
        ("http://%41bc.com/", "http://abc.com/"),
        ("http://my_host.example.com/", "http://my_host.example.com/"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/"),
        ("http://[2001:DB8::1]/", "http://[2001:db8::1]/"),
        ("http://[0:0:0:0:0:0:0:1]:8080/", "http://[::1]:8080/"),
        # userinfo is kept when present
        ("http://User:Pass@Example.com/", "http://User:Pass@example.com/"),
        ("http://a@b@example.com/", "http://a%40b@example.com/"),
        ("http://@example.com/", "http://example.com/"),
        # query: sorted by key then value (stable), tracking removed, spelling kept
        ("http://e.com/?b=2&a=1", "http://e.com/?a=1&b=2"),
        ("http://e.com/?a=2&a=1&a=10", "http://e.com/?a=1&a=10&a=2"),
        ("http://e.com/?a=&a&a=0", "http://e.com/?a=&a&a=0"),
        ("http://e.com/?q=a+b%20c", "http://e.com/?q=a+b%20c"),
        ("http://e.com/?utm_source=x&UTM_Medium=y&id=7", "http://e.com/?id=7"),
        ("http://e.com/?ref=1&source=2&fbclid=3&GCLID=4", "http://e.com/"),
        ("http://e.com/?refresh=1&sources=2&utm=3", "http://e.com/?refresh=1&sources=2&utm=3"),
        ("http://e.com/?%75tm_source=x&a=1", "http://e.com/?a=1"),
        ("http://e.com/?", "http://e.com/"),
        ("http://e.com/?&&a=1&", "http://e.com/?a=1"),
        # WHATWG input clean-up
        ("  \t http://e.com/a \n", "http://e.com/a"),
        ("http://e.com/a\tb\nc\rd", "http://e.com/abcd"),
        ("\u00a0http://e.com/\u3000", "http://e.com/"),
        ("http:\\\\e.com\\a\\b?c=\\", "http://e.com/a/b?c=%5C"),
    ],
)
def test_normalizes_to_the_canonical_form(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


@pytest.mark.parametrize(
    ("reference", "base", "expected"),
    [
        (
            "../d%7e/%c3%a9 f",
            "https://b\u00fccher.de/x/y/z",
            "https://xn--bcher-kva.de/x/d~/%C3%A9%20f",
        ),
        ("page2.html", "http://example.com", "http://example.com/page2.html"),
        (
            "?page=2&utm_campaign=x",
            "http://example.com/list?page=1",
            "http://example.com/list?page=2",
        ),
        ("//cdn.example.com/x.css", "https://example.com/", "https://cdn.example.com/x.css"),
        ("\\about", "http://example.com/a/b", "http://example.com/about"),
        ("1a:b", "http://example.com/x/", "http://example.com/x/1a:b"),
        ("  ", "http://example.com/a#frag", "http://example.com/a"),
        ("http://other.org/x", "not a url at all", "http://other.org/x"),
    ],
)
def test_resolves_links_found_on_a_page(reference: str, base: str, expected: str | None) -> None:
    if expected is None:
        assert reason_of(reference, base) == "no_host"
    else:
        assert normalize_url(reference, base) == expected


@pytest.mark.parametrize(
    ("url", "base", "reason"),
    [
        ("", None, "empty"),
        (" \t\n", None, "empty"),
        ("mailto:someone@example.com", None, "scheme"),
        ("javascript:void(0)", "http://example.com/", "scheme"),
        ("tel:+123", "http://example.com/", "scheme"),
        ("data:text/html,hi", None, "scheme"),
        ("ftp://example.com/", None, "scheme"),
        ("example.com/page", None, "scheme"),
        ("//example.com/page", None, "scheme"),
        ("page", "mailto:x@example.com", "scheme"),
        ("page", "/relative/base", "scheme"),
        ("http://:8080/", None, "no_host"),
        ("http://user@/", None, "no_host"),
        ("http://exa mple.com/", None, "bad_host"),
        ("http://a..b.com/", None, "bad_host"),
        ("http://./", None, "bad_host"),
        ("http://.example.com/", None, "bad_host"),
        ("http://" + "a" * 64 + ".com/", None, "bad_host"),
        ("http://%zz.com/", None, "bad_host"),
        ("http://%FF.com/", None, "bad_host"),
        ("http://a%2Fb.com/", None, "bad_host"),
        ("http://[::1/", None, "bad_host"),
        ("http://[::1]x/", None, "bad_host"),
        ("http://[fe80::1%25eth0]/", None, "bad_host"),
        ("http://[v1.x]/", None, "bad_host"),
        ("http://[1:2:3]/", None, "bad_host"),
        ("http://example.com:65536/", None, "bad_port"),
        ("http://example.com:8o/", None, "bad_port"),
        ("http://example.com:\u00b9/", None, "bad_port"),
        ("http://example.com:" + "9" * 5000 + "/", None, "bad_port"),
        ("http://example.com/" + "a" * 2048, None, "too_long"),
    ],
)
def test_drops_what_cannot_be_crawled_with_a_reason(
    url: str, base: str | None, reason: str
) -> None:
    assert reason_of(url, base) == reason


@pytest.mark.parametrize(
    ("url", "base", "expected"),
    [
        # An http(s) reference with another special scheme and no "//" is absolute: the
        # standard's "special authority ignore slashes" state (RFC 3986 reads a path).
        ("https:other", "http://example.com/a/b", "https://other/"),
        ("http:///path", None, "http://path/"),
        ("http:/path", None, "http://path/"),
        # UTS #46 without the STD3 rules, not strict IDNA 2008: "\u2260" is a valid label.
        ("http://\u2260.com/", None, "http://xn--1ch.com/"),
        # Port 0 is a port to the URL Standard; the browser tries it.
        ("http://example.com:0/", None, "http://example.com:0/"),
        # IPv4 in any form the standard (and getaddrinfo) reads is one host.
        ("http://192.0x00A80001/", None, "http://192.168.0.1/"),
        ("http://0x7f.1/", None, "http://127.0.0.1/"),
        # An empty password goes with the ":"; "'" is escaped in a query.
        ("https://test:@test/", None, "https://test@test/"),
        # A lone surrogate (no decoder makes one, but a str can hold it) is U+FFFD, as a
        # browser's string conversion makes it; it was refused as "unparsable".
        ("http://example.com/\ud800", None, "http://example.com/%EF%BF%BD"),
        ("http://example.com/?q=\udfff", None, "http://example.com/?q=%EF%BF%BD"),
        ("http://e.com/?q='x'", None, "http://e.com/?q=%27x%27"),
    ],
)
def test_where_the_url_standard_and_rfc3986_differ_the_browser_wins(
    url: str, base: str | None, expected: str
) -> None:
    """These once followed RFC 3986 (a dropped link, or another URL than a browser fetches)."""
    assert normalize_url(url, base) == expected


@pytest.mark.parametrize(
    "url", ["http://256.256.256.256/", "http://1.2.3.08/", "http://foo.09/", "http://0x100000000/"]
)
def test_hosts_the_url_standard_refuses_as_ipv4_are_dropped(url: str) -> None:
    assert reason_of(url) == "bad_host"


def test_url_error_names_the_original_url() -> None:
    with pytest.raises(UrlError) as caught:
        normalize_url("http://example.com:99999/a")
    assert (caught.value.reason, caught.value.url) == ("bad_port", "http://example.com:99999/a")


def test_length_limit_applies_to_the_normalized_form() -> None:
    prefix = "http://example.com/"
    at_limit = prefix + "a" * (MAX_URL_LENGTH - len(prefix))
    assert normalize_url(at_limit) == at_limit
    assert normalize_url(at_limit + "#" + "f" * 5000) == at_limit
    assert normalize_url(at_limit + "?utm_source=" + "x" * 100) == at_limit
    assert reason_of(at_limit + "b") == "too_long"
    # one "é" becomes six characters once percent-encoded
    assert reason_of(prefix + "a" * (MAX_URL_LENGTH - len(prefix) - 5) + "\u00e9") == "too_long"


def test_a_normalizer_takes_its_own_tracking_parameters_and_length() -> None:
    normalizer = UrlNormalizer(tracking_params=["sessionid", "mc_*"], max_length=31)
    assert (
        normalizer.normalize("http://e.com/?SessionId=1&mc_eid=2&utm_source=3&id=4")
        == "http://e.com/?id=4&utm_source=3"
    )
    assert normalizer.normalize("http://e.com/" + "a" * 18) == "http://e.com/" + "a" * 18
    with pytest.raises(UrlError) as caught:
        normalizer.normalize("http://e.com/" + "a" * 19)
    assert caught.value.reason == "too_long"
    assert UrlNormalizer(tracking_params=()).normalize("http://e.com/?ref=1") == (
        "http://e.com/?ref=1"
    )


def test_a_normalizer_refuses_a_non_positive_length() -> None:
    with pytest.raises(ConfigError):
        UrlNormalizer(max_length=0)


def test_url_hash_is_the_sha256_hex_of_the_normalized_url() -> None:
    assert url_hash("http://example.com/") == (
        "2a1b402420ef46577471cdc7409b0fa2c6a204db316e59ade2d805435489a067"
    )
    assert url_hash(normalize_url("HTTP://EXAMPLE.com:80/#x")) == url_hash("http://example.com/")
    assert url_hash("http://xn--tda.com/%C3%A9") != url_hash("http://xn--tda.com/%C3%A9/")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com/a?b", "example.com"),
        ("https://example.com:8443/", "example.com:8443"),
        ("http://user:pw@example.com/", "example.com"),
        ("http://127.0.0.1:8081/x", "127.0.0.1:8081"),
        ("http://[::1]:8080/", "[::1]:8080"),
        ("http://[::1]/", "[::1]"),
    ],
)
def test_host_key_is_host_and_non_default_port(url: str, expected: str) -> None:
    assert host_key(url) == expected


def test_host_key_of_a_normalized_url_matches_its_scheme_independent_site() -> None:
    assert host_key(normalize_url("HTTPS://WWW.Example.com:443/")) == "www.example.com"
    assert host_key(normalize_url("http://B\u00fccher.de:80/")) == "xn--bcher-kva.de"


def test_host_key_refuses_what_is_not_a_url() -> None:
    with pytest.raises(UrlError):
        host_key("example.com/a")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com/a/b?c#d", "https://example.com/robots.txt"),
        ("HTTP://User@Example.COM:8080/x", "http://example.com:8080/robots.txt"),
        ("http://example.com:80", "http://example.com/robots.txt"),
        ("http://[::1]:9000/", "http://[::1]:9000/robots.txt"),
    ],
)
def test_robots_url_is_at_the_root_of_the_host(url: str, expected: str) -> None:
    assert robots_url(url) == expected


def test_robots_url_refuses_a_non_http_url() -> None:
    with pytest.raises(UrlError):
        robots_url("ftp://example.com/")


# --- Scope ---------------------------------------------------------------------------------


def test_scope_defaults_to_the_seed_hosts_with_and_without_www() -> None:
    scope = Scope(["https://www.example.com/start", "http://shop.example.org/"])
    outcomes = {
        url: scope.check(url)
        for url in [
            "https://www.example.com/a",
            "http://example.com/b",
            "http://shop.example.org/c",
            "http://www.shop.example.org/d",
            "http://blog.example.com/",
            "http://example.org/",
            "http://example.com:8080/",
            "http://notexample.com/",
        ]
    }
    assert outcomes == {
        "https://www.example.com/a": None,
        "http://example.com/b": None,
        "http://shop.example.org/c": None,
        "http://www.shop.example.org/d": None,
        "http://blog.example.com/": "out_of_scope",
        "http://example.org/": "out_of_scope",
        "http://example.com:8080/": "out_of_scope",
        "http://notexample.com/": "out_of_scope",
    }


def test_scope_tells_loopback_sites_apart_by_port() -> None:
    scope = Scope(["http://127.0.0.1:8001/"])
    assert scope.check("http://127.0.0.1:8001/page") is None
    assert scope.check("http://127.0.0.1:8002/page") == "out_of_scope"
    assert scope.check("http://127.0.0.1/page") == "out_of_scope"


def test_allowed_domains_include_their_subdomains() -> None:
    scope = Scope(
        ["https://example.com/"],
        allow_domains=["Example.NET", "*.b\u00fccher.de", ".wiki.org.", "127.0.0.1:9000"],
    )
    outcomes = {
        url: scope.check(url)
        for url in [
            "https://example.net/",
            "https://a.b.example.net/x",
            "http://example.net:8080/",
            "https://badexample.net/",
            "https://shop.xn--bcher-kva.de/",
            "https://xn--bcher-kva.de/",
            "https://en.wiki.org/",
            "http://127.0.0.1:9000/",
            "http://127.0.0.1:9001/",
        ]
    }
    assert outcomes == {
        "https://example.net/": None,
        "https://a.b.example.net/x": None,
        "http://example.net:8080/": None,
        "https://badexample.net/": "out_of_scope",
        "https://shop.xn--bcher-kva.de/": None,
        "https://xn--bcher-kva.de/": None,
        "https://en.wiki.org/": None,
        "http://127.0.0.1:9000/": None,
        "http://127.0.0.1:9001/": "out_of_scope",
    }


def test_scope_with_only_allowed_domains_and_no_seeds() -> None:
    scope = Scope([], allow_domains=["example.com"])
    assert scope.check("http://www.example.com/") is None
    assert scope.check("http://example.org/") == "out_of_scope"


def test_include_and_exclude_patterns_filter_in_scope_urls() -> None:
    scope = Scope(
        ["https://example.com/"],
        include=[r"/blog/", r"\?page=\d+$"],
        exclude=[r"/blog/drafts/", r"\.pdf$"],
    )
    outcomes = {
        url: scope.check(url)
        for url in [
            "https://example.com/",
            "https://example.com/blog/post-1",
            "https://example.com/list?page=2",
            "https://example.com/about",
            "https://example.com/blog/drafts/x",
            "https://example.com/blog/paper.pdf",
            "https://other.com/blog/drafts/x",
        ]
    }
    assert outcomes == {
        "https://example.com/": None,
        "https://example.com/blog/post-1": None,
        "https://example.com/list?page=2": None,
        "https://example.com/about": "not_included",
        "https://example.com/blog/drafts/x": "excluded",
        "https://example.com/blog/paper.pdf": "excluded",
        "https://other.com/blog/drafts/x": "out_of_scope",
    }


def test_seeds_are_always_in_scope() -> None:
    scope = Scope(["HTTP://Example.com/start?utm_source=x"], include=[r"/docs/"], exclude=["start"])
    assert scope.check("http://example.com/start") is None
    assert scope.check("http://example.com/start2") == "excluded"
    assert scope.check("http://example.com/other") == "not_included"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"seeds": ["mailto:a@example.com"]}, "invalid seed URL 'mailto:a@example.com': scheme"),
        ({"seeds": [], "allow_domains": ["exa mple.com"]}, "invalid allowed domain"),
        ({"seeds": [], "include": ["("]}, "invalid include pattern '('"),
        ({"seeds": [], "exclude": ["[a"]}, "invalid exclude pattern '[a'"),
    ],
)
def test_scope_refuses_bad_settings(arguments: dict[str, list[str]], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        Scope(**arguments)


# --- properties ----------------------------------------------------------------------------

URL_ALPHABET = st.sampled_from(
    list(":/?#[]@!$&'()*+,;=%.-_~ \t\n\\\"<>^`{|}")
    + list("aAzZ09")
    + ["\u00e9", "\u00fc", "\u00df", "\u3002", "\u00a0", "\u200d", "\ud800", "\x00", "\x7f"]
)
url_like_text = st.text(URL_ALPHABET, max_size=40) | st.text(max_size=40)


def normalizes(url: str, base: str | None = None) -> str | None:
    try:
        return normalize_url(url, base)
    except UrlError:
        return None


@settings(max_examples=400, deadline=None)
@given(url=url_like_text, base=st.none() | url_like_text)
@example(url="", base="")
@example(url="\\\\", base="http://a/")
def test_normalize_raises_only_url_error_on_any_text(url: str, base: str | None) -> None:
    normalizes(url, base)
    normalizes("http://" + url, base)
    normalizes(url, None if base is None else "http://" + base)


@settings(max_examples=400, deadline=None)
@given(url=url_like_text, base=st.none() | url_like_text)
def test_normalize_is_idempotent_on_any_text(url: str, base: str | None) -> None:
    for candidate in (url, "http://" + url, "https://e.com/" + url):
        once = normalizes(candidate, base)
        if once is not None:
            assert normalize_url(once) == once


SCHEMES = st.sampled_from(["http", "HTTP", "https", "hTTpS", "ftp", "mailto", "javascript"])
HOSTS = st.sampled_from(
    [
        "example.com",
        "EXAMPLE.com.",
        "www.example.com",
        "b\u00fccher.de",
        "B\u00dcCHER.de",
        "xn--bcher-kva.de",
        "%C3%BC.com",
        "%41b.com",
        "my_host.example",
        "127.0.0.1",
        "[::1]",
        "[::FFFF:1.2.3.4]",
        "[2001:DB8::1]",
        "\u00fc.com\u3002",
        "",
        "a..b",
        "[::1",
    ]
)
PORTS = st.sampled_from(["", ":", ":80", ":443", ":8080", ":0080", ":0", ":99999", ":x"])
USERINFO = st.sampled_from(["", "@", "user@", "u:p@", "a@b@", "%75ser:%zz@", "\u00e9@"])
SEGMENTS = st.sampled_from(
    [
        "a",
        "B",
        ".",
        "..",
        "%2e",
        "%2E%2e",
        "",
        "\u00e9",
        "%7e",
        "%7E",
        "%41",
        "a b",
        "%",
        "%zz",
        "%c3%a9",
        "x;y=1",
        "@",
        ":",
        "\\",
        "[x]",
        "~",
        "%2F",
        "%25",
    ]
) | st.text(URL_ALPHABET, max_size=5)
PARAMS = st.builds(
    lambda key, sep, value: key + sep + value,
    st.sampled_from(["a", "B", "utm_source", "UTM_Medium", "ref", "refx", "", "%75tm_x", "q"]),
    st.sampled_from(["", "="]),
    st.sampled_from(["", "1", "x+y", "%7e", "%2b", "\u00e9", "a=b", "%", "?"]),
)


@st.composite
def urls_from_parts(draw: st.DrawFn) -> str:
    path = "/".join(draw(st.lists(SEGMENTS, max_size=6)))
    url = draw(SCHEMES) + "://" + draw(USERINFO) + draw(HOSTS) + draw(PORTS)
    if path or draw(st.booleans()):
        url += "/" + path
    if draw(st.booleans()):
        url += "?" + "&".join(draw(st.lists(PARAMS, max_size=5)))
    if draw(st.booleans()):
        url += "#" + draw(st.text(URL_ALPHABET, max_size=8))
    return draw(st.sampled_from(["", " ", "\t"])) + url + draw(st.sampled_from(["", " ", "\n"]))


@st.composite
def references(draw: st.DrawFn) -> str:
    prefix = draw(st.sampled_from(["", "/", "./", "../", "//example.com/", "?", "#", "http:"]))
    reference = prefix + "/".join(draw(st.lists(SEGMENTS, max_size=4)))
    if draw(st.booleans()):
        reference += "?" + "&".join(draw(st.lists(PARAMS, max_size=3)))
    return reference


@settings(max_examples=600, deadline=None)
@given(url=urls_from_parts())
def test_normalize_is_idempotent_on_urls_built_from_parts(url: str) -> None:
    once = normalizes(url)
    if once is not None:
        assert once.isascii()
        assert normalize_url(once) == once


@settings(max_examples=600, deadline=None)
@given(reference=references(), base=urls_from_parts())
def test_resolved_links_are_normalized_and_stable(reference: str, base: str) -> None:
    once = normalizes(reference, base)
    if once is not None:
        assert once.isascii()
        assert "#" not in once
        assert normalize_url(once) == once
        assert normalize_url(once, base) == once


def answer(normalizer: UrlNormalizer, url: str, base: str | None) -> tuple[str, str]:
    try:
        return "url", normalizer.normalize(url, base)
    except UrlError as exc:
        return "error", f"{exc.reason} {exc.url == url}"


@settings(max_examples=600, deadline=None)
@given(
    reference=references() | url_like_text.map(lambda text: "/" + text),
    base=urls_from_parts(),
    other_path=st.text(URL_ALPHABET, max_size=12),
)
@example(reference="/a #x", base="http://a.example/", other_path="")
@example(reference="/a\t#x", base="http://a.example/", other_path="")
def test_a_remembered_answer_is_the_one_a_fresh_normalizer_gives(
    reference: str, base: str, other_path: str
) -> None:
    """One normalizer remembers answers across pages; a page of the same site elsewhere (or
    another site) must get exactly what a normalizer that remembers nothing gives."""
    remembering = UrlNormalizer()
    bases = [
        base,
        base.rstrip() + "/" + other_path,
        "http://a.example/x/y?q",
        "http://a.example/x/z",  # the same directory, another last segment
        "https://a.example/x/y",
        None,
    ]
    for current in [*bases, *reversed(bases)]:
        for candidate in (
            reference,
            "http://a.example" + reference,
            "http:" + reference,
            reference.partition("#")[0],
            reference.partition("#")[0] + "#other",
        ):
            assert answer(remembering, candidate, current) == answer(
                UrlNormalizer(), candidate, current
            )


def test_remembered_answers_are_bounded() -> None:
    normalizer = UrlNormalizer()
    for i in range(urls.MEMO_SIZE + 10):
        normalizer.normalize(f"/p/{i}", "http://example.com/")
    assert len(normalizer._memo) <= urls.MEMO_SIZE
    assert normalizer.normalize("/p/1?utm_source=x", "http://example.com/a") == (
        "http://example.com/p/1"
    )


SIMPLE_SEGMENTS = st.sampled_from(
    ["a", "B9", ".", "..", ".x", "x.", "~u", "a;b=1", "!$&()*+,=@", "-_", ""]
)


@settings(max_examples=600, deadline=None)
@given(
    segments=st.lists(SIMPLE_SEGMENTS, min_size=1, max_size=5),
    absolute=st.booleans(),
    query=st.none() | st.text(st.sampled_from(list("az09=&%?/:@+~")), max_size=8),
    base=urls_from_parts(),
)
def test_simple_references_skip_the_parser_with_its_answer(
    segments: list[str], absolute: bool, query: str | None, base: str
) -> None:
    """References of plain characters are merged without the URL parser (a fast path); the
    answer must be the parser's."""
    reference = ("/" if absolute else "") + "/".join(segments)
    if query is not None:
        reference += "?" + query
    if reference.startswith("//") or not reference:
        return
    normalizer = UrlNormalizer()

    def outcome(function: Callable[[str, str | None], str]) -> str:
        try:
            return function(reference, base)
        except UrlError as exc:
            return exc.reason

    assert outcome(normalizer._normalize) == outcome(normalizer._parse)


PLAIN_HOSTS = st.sampled_from(
    [
        "example.com",
        "Example.COM",
        "example.com.",
        "127.0.0.1",
        "127.1",
        "0x7f.0.0.1",
        "010.0.0.1",
        "999.1.1.1",
        "1.2.3.4.5",
        "a..b",
        "xn--bcher-kva.de",
        "xn--a.com",
        "-a-.b",
        ".",
        "a" * 64 + ".com",
        "localhost",
    ]
)


@settings(max_examples=600, deadline=None)
@given(
    scheme=st.sampled_from(["http", "https"]),
    host=PLAIN_HOSTS,
    port=PORTS,
    segments=st.lists(SIMPLE_SEGMENTS, min_size=1, max_size=5),
    query=st.none() | st.text(st.sampled_from(list("az09=&%?/:@+~")), max_size=8),
    fragment=st.none() | st.text(URL_ALPHABET, max_size=5),
    base=st.none() | urls_from_parts(),
)
def test_plain_absolute_urls_skip_the_parser_with_its_answer(
    scheme: str,
    host: str,
    port: str,
    segments: list[str],
    query: str | None,
    fragment: str | None,
    base: str | None,
) -> None:
    """An absolute URL of a plain host and port and a path of plain characters is read as its
    path against ``scheme://host:port/`` (a fast path); the answer must be the parser's."""
    url = f"{scheme}://{host}{port}/" + "/".join(segments)
    if query is not None:
        url += "?" + query
    if fragment is not None:
        url += "#" + fragment
    normalizer = UrlNormalizer()

    def outcome(function: Callable[[str, str | None], str]) -> str:
        try:
            return function(url, base)
        except UrlError as exc:
            return f"{exc.reason} {exc.url == url}"

    assert outcome(normalizer._normalize) == outcome(normalizer._parse)


@pytest.mark.parametrize(
    "reference",
    [
        "mailto:a@example.com",
        "javascript:void(0)",
        "tel:+1",
        "ftp://example.com/a",
        "FTP:x",
        "c:\\x",
        "http:x",
        "HTTPS:/x",
        "data:text/html,<p>",
        "x+y.z-1:/a",
    ],
)
@pytest.mark.parametrize(
    "base", ["http://a.example/x/y", "https://a.example/", "ftp://a.example/x", "not a base", None]
)
def test_a_remembered_other_scheme_answers_as_a_fresh_normalizer(
    reference: str, base: str | None
) -> None:
    """References with a scheme of their own are remembered when the base cannot matter: the
    answer on any page must be what a normalizer that remembers nothing gives there."""
    remembering = UrlNormalizer()
    for current in ("http://b.example/", base, "ftp://b.example/", base):
        assert answer(remembering, reference, current) == answer(
            UrlNormalizer(), reference, current
        )


@settings(max_examples=300, deadline=None)
@given(
    hrefs=st.lists(references() | url_like_text | urls_from_parts(), max_size=8),
    base=urls_from_parts(),
)
def test_normalize_each_answers_as_normalize(hrefs: list[str], base: str) -> None:
    """A page's links normalized together get what each gets alone, ``None`` for a failure."""
    remembering = UrlNormalizer()
    for _ in range(2):  # the second time from the memo
        alone = [answer(UrlNormalizer(), href, base) for href in hrefs]
        together = list(remembering.normalize_each(hrefs, base))
        assert together == [url if kind == "url" else None for kind, url in alone]
