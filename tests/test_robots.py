"""robots.txt parsing and matching: RFC 9309 and Google's reference parser, case by case."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvestman.robots import (
    MAX_ROBOTS_BYTES,
    RobotsRules,
    _escape_specials,
    _normalize,
    _path_and_query,
    _path_of,
    parse_robots,
    product_token,
)

ROBOTS_URL = "https://example.com/robots.txt"
UA = "Harvestman/0.1 (+https://harvestman.example/bot)"


def allowed(robots: str | bytes, path: str, user_agent: str = UA) -> bool:
    return parse_robots(robots, ROBOTS_URL).is_allowed("https://example.com" + path, user_agent)


# Google's robots.txt specification, "URL matching based on path values": each pattern with the
# paths it matches and the paths it does not.
GOOGLE_PATH_TABLE = {
    "/": (["/", "/fish", "/a/b?c=d"], []),
    "/*": (["/", "/fish", "/a/b?c=d"], []),
    "/$": (["/"], ["/fish", "/?a=b"]),
    "/fish": (
        ["/fish", "/fish.html", "/fish/salmon.html", "/fishheads", "/fishheads/yummy.html",
         "/fish.php?id=anything"],
        ["/Fish.asp", "/catfish", "/?id=fish", "/desert/fish"],
    ),
    "/fish*": (
        ["/fish", "/fish.html", "/fish/salmon.html", "/fishheads", "/fishheads/yummy.html",
         "/fish.php?id=anything"],
        ["/Fish.asp", "/catfish", "/?id=fish", "/desert/fish"],
    ),
    "/fish/": (
        ["/fish/", "/fish/?id=anything", "/fish/salmon.htm"],
        ["/fish", "/fish.html", "/animals/fish/", "/Fish/Salmon.asp"],
    ),
    "/*.php": (
        ["/index.php", "/filename.php", "/folder/filename.php", "/folder/filename.php?parameters",
         "/folder/any.php.file.html", "/filename.php/"],
        ["/", "/windows.PHP"],
    ),
    "/*.php$": (
        ["/filename.php", "/folder/filename.php"],
        ["/filename.php?parameters", "/filename.php/", "/filename.php5", "/windows.PHP"],
    ),
    "/fish*.php": (
        ["/fish.php", "/fishheads/catfish.php?parameters"],
        ["/Fish.PHP"],
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        (pattern, path, matches)
        for pattern, (hits, misses) in GOOGLE_PATH_TABLE.items()
        for paths, matches in ((hits, True), (misses, False))
        for path in paths
    ],
)
def test_google_path_matching_table(pattern: str, path: str, matches: bool) -> None:
    robots = f"User-agent: *\nDisallow: {pattern}\n"

    assert allowed(robots, path) is not matches


@pytest.mark.parametrize(
    ("rules", "path", "expected"),
    [
        # Google's "order of precedence for rules" examples.
        ("Allow: /p\nDisallow: /", "/page", True),
        ("Allow: /folder\nDisallow: /folder", "/folder/page", True),
        ("Allow: /page\nDisallow: /*.htm", "/page.htm", False),
        ("Allow: /page\nDisallow: /*.ph", "/page.php5", True),
        ("Allow: /$\nDisallow: /", "/", True),
        ("Allow: /$\nDisallow: /", "/page.htm", False),
        # google/robotstxt ID_LongestMatch.
        ("Disallow: /x/page.html\nAllow: /x/page.html", "/x/page.html", True),
        ("Allow: /x/page.html\nDisallow: /x/page.html", "/x/page.html", True),
        ("Disallow: /\nAllow: /", "/x/page.html", True),
        ("Disallow: /x\nAllow: /x/", "/x", False),
        ("Disallow: /x\nAllow: /x/", "/x/", True),
        ("Allow: /page\nDisallow: /*.html", "/page.html", False),
        ("Allow: /page\nDisallow: /*.html", "/page", True),
        ("Allow: /x/page.\nDisallow: /*.html", "/x/page.html", True),
        ("Allow: /x/page.\nDisallow: /*.html", "/x/y.html", False),
        # Length counts the octets of the pattern as written, '*' and '$' included.
        ("Allow: /fish\nDisallow: /fish*", "/fish", False),
        ("Allow: /a?b\nDisallow: /a*bcd", "/a?bcd", False),
        # google/robotstxt ID_SpecialCharacters.
        ("Disallow: /foo/bar/quz\nAllow: /foo/*/qux", "/foo/bar/quz", False),
        ("Disallow: /foo/bar/quz\nAllow: /foo/*/qux", "/foo/quz", True),
        ("Disallow: /foo/bar/quz\nAllow: /foo/*/qux", "/foo//quz", True),
        ("Disallow: /foo/bar/quz\nAllow: /foo/*/qux", "/foo/bax/quz", True),
        ("Disallow: /foo/bar$\nAllow: /foo/bar/qux", "/foo/bar", False),
        ("Disallow: /foo/bar$\nAllow: /foo/bar/qux", "/foo/bar/qux", True),
        ("Disallow: /foo/bar$\nAllow: /foo/bar/qux", "/foo/bar/", True),
        ("Disallow: /foo/bar$\nAllow: /foo/bar/qux", "/foo/bar/baz", True),
        ("# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /", "/foo/bar", True),
        ("# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /", "/foo/quz", False),
        # '$' anchors only at the end of a pattern; elsewhere it is a plain character.
        ("Disallow: /fish$", "/fish$x", True),
        ("Disallow: /a$b", "/a$b", False),
        ("Disallow: /a$b", "/ab", True),
        ("Disallow: /a$$", "/a$", False),
        ("Disallow: /a$$", "/a", True),
        # RFC 9309 §2.2.3: "%24" and "%2A" in a rule name a literal "$" and "*" in the path.
        ("Disallow: /path/foo-%24", "/path/foo-$", False),
        ("Disallow: /path/file-with-a-%2A.html", "/path/file-with-a-*.html", False),
        ("Disallow: /path/file-with-a-%2A.html", "/path/file-with-a-x.html", True),
        ("Disallow: /path/foo-%24", "/path/foo-", True),
        ("Disallow: /path/foo-%24", "/path/foo-%24", False),
        ("Disallow: /a*%2Ab$", "/a/x*b", False),
        ("Disallow: /a*%2Ab$", "/a/xb", True),
        # Wildcards: several, repeated, leading, trailing.
        ("Disallow: /*/b/*/d$", "/a/b/c/d", False),
        ("Disallow: /*/b/*/d$", "/a/b/c/d/e", True),
        ("Disallow: /a**b", "/a-x-b", False),
        ("Disallow: *.gif$", "/img/x.gif", False),
        ("Disallow: /x*$", "/x/anything", False),
        ("Disallow: /*a*a*a*b", "/" + "a" * 3000, True),
        # Rules are case-sensitive (ID_AllowDisallow_Value_CaseSensitive).
        ("Disallow: /X/", "/x/y", True),
        ("Disallow: /x/", "/x/y", False),
        # An empty pattern matches nothing; a pattern without its leading slash never matches.
        ("Disallow:", "/anything", True),
        ("Disallow:\nAllow:", "/anything", True),
        ("Disallow: fish", "/fish", True),
        # Google: allowing an index.htm(l) allows its directory (GoogleOnly_IndexHTMLisDirectory).
        ("Allow: /allowed-slash/index.html\nDisallow: /", "/allowed-slash/", True),
        ("Allow: /allowed-slash/index.html\nDisallow: /", "/allowed-slash/index.htm", False),
        ("Allow: /allowed-slash/index.html\nDisallow: /", "/allowed-slash/index.html", True),
        ("Allow: /allowed-slash/index.html\nDisallow: /", "/anyother-url", False),
        ("Allow: /allowed-slash/index.html\nDisallow: /", "/allowed-slash/x", False),
        # The query is matched, the fragment is not.
        ("Disallow: /*?sort=", "/list?sort=asc", False),
        ("Disallow: /*?sort=", "/list?page=2", True),
        ("Disallow: /page$", "/page#section", False),
        ("Disallow: /*?", "/page?", False),
        # /robots.txt itself is always allowed.
        ("Disallow: /", "/robots.txt", True),
        ("Disallow: /", "/robots.txt?x=1", True),
        ("Disallow: /", "/robots.txtx", False),
    ],
)
def test_longest_match_wins_and_allow_wins_ties(rules: str, path: str, expected: bool) -> None:
    assert allowed(f"User-agent: *\n{rules}\n", path) is expected


@pytest.mark.parametrize(
    ("rule", "path", "expected"),
    [
        # Percent-encoding is normalized on both sides (RFC 9309 §2.2.2).
        ("/%7Efoo", "/~foo", False),
        ("/~foo", "/%7efoo", False),
        ("/foo/bar/%62%61%7A", "/foo/bar/baz", False),
        ("/foo/bar/ツ", "/foo/bar/%E3%83%84", False),
        ("/foo/bar/%E3%83%84", "/foo/bar/ツ", False),
        ("/foo/bar/%e3%83%84", "/foo/bar/%E3%83%84", False),
        ("/a%3f", "/a%3F", False),
        ("/a b", "/a%20b", False),
        ("/a[1]", "/a%5B1%5D", False),
        ("/100%", "/100%25", False),
        # Reserved characters keep their meaning: an escaped one is a different character.
        ("/a%2Fb", "/a/b", True),
        ("/a%3Fb", "/a?b", True),
        # A URL in the query stays as it is (ID_Encoding).
        ("/foo/bar?qux=taz&baz=http://foo.bar?tar&par", "/foo/bar?qux=taz&baz=http://foo.bar?tar&par",
         False),
    ],
)  # fmt: skip
def test_percent_encoding_is_normalized_on_both_sides(rule: str, path: str, expected: bool) -> None:
    robots = f"User-agent: *\nDisallow: {rule}\n"

    assert parse_robots(robots, ROBOTS_URL).is_allowed("http://example.com" + path, UA) is expected


# RFC 9309 §5.1, "Simple Example".
RFC_EXAMPLE = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot
"""


@pytest.mark.parametrize(
    ("user_agent", "path", "expected"),
    [
        ("otherbot", "/publications/a.html", True),
        ("otherbot", "/example/page.html", False),
        ("otherbot", "/images/a.gif", False),
        ("otherbot", "/publications/a.gif", True),  # "/publications/" is longer than "*.gif$"
        ("otherbot", "/elsewhere", True),
        ("foobot", "/example/page.html", True),
        ("foobot", "/example/allowed.gif", True),
        ("foobot", "/example/other.html", False),
        ("foobot", "/publications/", False),
        ("barbot", "/example/page.html", False),
        ("bazbot", "/example/page.html", False),
        ("bazbot", "/example/other.html", True),
        ("bazbot", "/a.gif", True),
        ("quxbot", "/example/page.html", True),
        ("quxbot", "/a.gif", True),
    ],
)
def test_rfc_9309_simple_example(user_agent: str, path: str, expected: bool) -> None:
    assert allowed(RFC_EXAMPLE, path, f"{user_agent}/1.0") is expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/example/page/", True),
        ("/example/page/other.gif", True),
        ("/example/page/disallowed.gif", False),
    ],
)
def test_rfc_9309_longest_match_example(path: str, expected: bool) -> None:
    robots = "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n"

    assert allowed(robots, path, "FooBot") is expected


@pytest.mark.parametrize(
    ("robots", "user_agent", "expected"),
    [
        # A group naming the crawler beats '*', whatever the order.
        ("User-agent: *\nDisallow: /\n\nUser-agent: harvestman\nAllow: /\n", UA, True),
        ("User-agent: harvestman\nAllow: /\n\nUser-agent: *\nDisallow: /\n", UA, True),
        ("User-agent: *\nDisallow: /\n\nUser-agent: otherbot\nAllow: /\n", UA, False),
        # The group that names the crawler is used alone, even when it says nothing.
        ("User-agent: *\nDisallow: /\n\nUser-agent: harvestman\nCrawl-delay: 1\n", UA, True),
        # Names compare case-insensitively, on the leading [A-Za-z_-] run of the line.
        ("User-agent: HARVESTMAN\nDisallow: /\n", UA, False),
        ("User-agent: Harvestman/2.0\nDisallow: /\n", UA, False),
        ("User-agent: harvestman bot\nDisallow: /\n", UA, False),
        ("User-agent: harvestman\nDisallow: /\n", "harvestman", False),
        # ... and only as a whole name.
        ("User-agent: harvest\nDisallow: /\n", UA, True),
        ("User-agent: harvestmanbot\nDisallow: /\n", UA, True),
        ("User-agent: *man\nDisallow: /\n", UA, True),
        ("User-agent: Mozilla/5.0 (compatible; Harvestman/0.1)\nDisallow: /\n", UA, True),
        # Google: '*' followed by a space and more is still the global group.
        ("User-agent: * foo\nDisallow: /\n", UA, False),
        # No group for the crawler and no '*' group: everything is allowed.
        ("User-agent: otherbot\nDisallow: /\n", UA, True),
        ("", UA, True),
        # Consecutive user-agent lines share one group, across comments and unknown lines.
        ("User-agent: a\nUser-agent: harvestman\nDisallow: /\n", UA, False),
        ("User-agent: a\n# note\nFoo: bar\nUser-agent: harvestman\nDisallow: /\n", UA, False),
        ("User-agent: a\nSitemap: /s.xml\nUser-agent: harvestman\nDisallow: /\n", UA, False),
        # A rule line closes the run: the next user-agent line opens a new group.
        ("User-agent: harvestman\nAllow: /x\nUser-agent: b\nDisallow: /\n", UA, True),
        # Rules before any user-agent line apply to no one.
        ("Disallow: /\nUser-agent: otherbot\nDisallow: /x\n", UA, True),
        # A crawler whose user agent has no product token only gets the '*' group.
        ("User-agent: *\nDisallow: /\n\nUser-agent: harvestman\nAllow: /\n", "123bot", False),
        # The crawler's token is compared whole: "Foo.Bot" is not "foo", so it falls to '*'
        # (RFC 9309 §2.2.1; google/robotstxt robots.cc compares the caller's agent whole).
        ("User-agent: foo\nDisallow: /\n", "Foo.Bot/1.0", True),
        ("User-agent: foo\nDisallow: /\n\nUser-agent: *\nAllow: /\n", "Foo.Bot/1.0", True),
        ("User-agent: foo\nAllow: /\n\nUser-agent: *\nDisallow: /\n", "Foo.Bot/1.0", False),
        ("User-agent: foo\nDisallow: /\n", "Foo-Bot_2.0", True),
        ("User-agent: foo-bot_\nDisallow: /\n", "Foo-Bot_2.0", True),
        # A line's token ends at its first character outside [a-zA-Z_-]: "Foo2Bot" names "foo"
        # (Google's ExtractUserAgent; RFC 9309 allows no digits in a token, so this follows
        # Google). A line naming the crawler's product token exactly binds it all the same,
        # digits and dots included (Protego does; a crawler called MJ12bot obeys
        # "User-agent: MJ12bot"): these two were once allowed.
        ("User-agent: Foo2Bot\nDisallow: /\n", "Foo/1.0", False),
        ("User-agent: Foo2Bot\nDisallow: /\n", "Foo2Bot/1.0", False),
        ("User-agent: Foo.Bot\nDisallow: /\n", "Foo.Bot/1.0", False),
        ("User-agent: MJ12bot\nDisallow: /\n", "MJ12bot/v1.4.8 (http://mj12bot.com/)", False),
        ("User-agent: mj12bot\nDisallow: /\n\nUser-agent: *\nAllow: /\n", "MJ12bot", False),
        ("User-agent: MJ13bot\nDisallow: /\n", "MJ12bot/v1.4.8", True),
        ("User-agent: Foo.Bot\nDisallow: /\n", "Foo/1.0", False),
        ("User-agent: FOO-bot_\nDisallow: /\n", "foo-BOT_/1.0", False),
    ],
)
def test_user_agent_group_selection(robots: str, user_agent: str, expected: bool) -> None:
    assert allowed(robots, "/page", user_agent) is expected


def test_groups_for_the_same_agent_are_merged() -> None:
    robots = (
        "User-agent: harvestman\nDisallow: /a\n\n"
        "User-agent: *\nDisallow: /\n\n"
        "User-agent: Harvestman/2\nAllow: /a/b\nDisallow: /c\n"
    )
    rules = parse_robots(robots, ROBOTS_URL)

    verdicts = {path: rules.is_allowed(f"https://example.com{path}", UA) for path in
                ["/a/x", "/a/b", "/c", "/d"]}  # fmt: skip

    assert verdicts == {"/a/x": False, "/a/b": True, "/c": False, "/d": True}


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("Harvestman/0.1 (+https://x)", "harvestman"),
        ("FooBot", "foobot"),
        # The caller's product name is never shortened (RFC 9309 §2.2.1, Google's matcher).
        ("Foo-Bot_2.0", "foo-bot_2.0"),
        ("Foo.Bot/1.0", "foo.bot"),
        ("Foo2Bot/3 (+https://x)", "foo2bot"),
        ("FooBot\t(compatible)", "foobot"),
        ("  Googlebot/2.1", "googlebot"),
        ("Mozilla/5.0 (compatible; Harvestman/0.1)", "mozilla"),
        ("123bot", "123bot"),
        ("", ""),
    ],
)
def test_product_token(user_agent: str, token: str) -> None:
    assert product_token(user_agent) == token


@pytest.mark.parametrize(
    "robots",
    [
        b"User-agent: *\nDisallow: /private\n",
        b"\xef\xbb\xbfUser-agent: *\nDisallow: /private\n",
        b"\xef\xbbUser-agent: *\nDisallow: /private\n",
        b"\xefUser-agent: *\nDisallow: /private\n",
        "\ufeffUser-agent: *\nDisallow: /private\n",
        b"User-agent: *\r\nDisallow: /private\r\n",
        b"User-agent: *\rDisallow: /private\r",
        b"User-agent: *\r\nAllow: /x\nDisallow: /private\rAllow: /y\n",
        b"User-agent: *\nDisallow: /private",
        b"  user-AGENT :  *  \n\tDISALLOW\t:\t/private\t# trailing comment\n",
        b"User-agent: *\nDisallow /private\n",
        b"Useragent: *\nDisalow: /private\n",
        b"User agent: *\nDissallow: /private\n",
        b"User-agent: *\nDisallow: /private\nDisallow /a /b\nJunk\n\x00\xff\xfe:\n",
        b"<html>\n<p>User-agent: *</p>\nUser-agent: *\nDisallow: /private\n</html>\n",
        b"User-agent: *\nDisallow: /private\n" + bytes(range(256)),
    ],
)
def test_encodings_line_ends_spellings_and_garbage(robots: bytes | str) -> None:
    rules = parse_robots(robots, ROBOTS_URL)

    assert rules.is_allowed("https://example.com/private/x", UA) is False
    assert rules.is_allowed("https://example.com/public", UA) is True


def test_form_feed_and_vertical_tab_do_not_end_a_line() -> None:
    # Google splits lines on CR and LF only; this line names the global group with no rules.
    rules = parse_robots("User-agent: *\x0cDisallow: /\nUser-agent: x\x0bDisallow: /\n", ROBOTS_URL)

    assert rules.is_allowed("https://example.com/page", UA) is True


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    rules = parse_robots(b"User-agent: *\nDisallow: /caf\xe9\nDisallow: /ok\n", ROBOTS_URL)

    assert rules.is_allowed("https://example.com/caf%EF%BF%BD", UA) is False
    assert rules.is_allowed("https://example.com/ok", UA) is False
    assert rules.is_allowed("https://example.com/cafe", UA) is True


def test_only_the_first_500_kib_are_read() -> None:
    head = b"User-agent: *\nDisallow: /before\n"
    padding = b"# " + b"x" * (MAX_ROBOTS_BYTES - len(head) - len(b"Disallow: /edge\n") - 3) + b"\n"
    body = head + padding + b"Disallow: /edge\n" + b"Disallow: /after\n"
    assert len(head + padding + b"Disallow: /edge\n") == MAX_ROBOTS_BYTES

    rules = parse_robots(body, ROBOTS_URL)

    assert rules.is_allowed("https://example.com/before", UA) is False
    assert rules.is_allowed("https://example.com/edge", UA) is False
    assert rules.is_allowed("https://example.com/after", UA) is True
    assert rules.source is not None
    assert len(rules.source.encode()) == MAX_ROBOTS_BYTES


def test_a_line_cut_by_the_cap_is_read_as_far_as_it_goes() -> None:
    body = b"User-agent: *\n" + b"#" * (MAX_ROBOTS_BYTES - 14 - 15) + b"\nDisallow: /abcdef\n"

    rules = parse_robots(body, ROBOTS_URL)

    assert rules.is_allowed("https://example.com/a", UA) is True
    assert rules.is_allowed("https://example.com/abc", UA) is False


def test_lines_longer_than_googles_limit_are_cut() -> None:
    # Google keeps 2083 * 8 - 1 characters of a line (google/robotstxt robots.cc, Parse()).
    rule = "Disallow: /" + "a" * 20_000
    rules = parse_robots(f"User-agent: *\n{rule}\n", ROBOTS_URL)

    assert rules.is_allowed("https://example.com/" + "a" * (2083 * 8 - 12), UA) is False
    assert rules.is_allowed("https://example.com/" + "a" * (2083 * 8 - 13), UA) is True


def test_source_parses_back_to_the_same_rules() -> None:
    first = parse_robots(b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /x\r\n", ROBOTS_URL)
    assert first.source == "User-agent: *\r\nDisallow: /x\r\n"

    again = parse_robots(first.source, ROBOTS_URL)

    assert again.is_allowed("https://example.com/x", UA) is False
    assert again.is_allowed("https://example.com/y", UA) is True


@pytest.mark.parametrize(
    ("robots", "user_agent", "delay"),
    [
        ("User-agent: *\nCrawl-delay: 2.5\n", UA, 2.5),
        ("User-agent: *\nCrawl-delay: 10\n", UA, 10.0),
        ("User-agent: *\nCrawl-delay: 0\n", UA, 0.0),
        ("User-agent: *\nCrawl-delay: .5\n", UA, 0.5),
        ("User-agent: *\ncrawl delay: 3\n", UA, 3.0),
        ("User-agent: *\nCrawl-delay: 3 # seconds\n", UA, 3.0),
        ("User-agent: *\nDisallow: /x\n", UA, None),
        ("Crawl-delay: 5\nUser-agent: *\n", UA, None),
        ("User-agent: otherbot\nCrawl-delay: 5\n", UA, None),
        ("User-agent: *\nCrawl-delay: 5\n\nUser-agent: harvestman\nCrawl-delay: 1\n", UA, 1.0),
        ("User-agent: *\nCrawl-delay: 5\n\nUser-agent: harvestman\nDisallow: /x\n", UA, None),
        ("User-agent: *\nCrawl-delay: 5\n\nUser-agent: harvestman\nDisallow: /x\n", "bot", 5.0),
        ("User-agent: harvestman\nDisallow: /\nUser-agent: harvestman\nCrawl-delay: 4\n", UA, 4.0),
        ("User-agent: *\nCrawl-delay: 2\nCrawl-delay: 7\n", UA, 2.0),
        # Invalid values are ignored; a later valid one counts.
        ("User-agent: *\nCrawl-delay: soon\nCrawl-delay: 3\n", UA, 3.0),
        ("User-agent: *\nCrawl-delay: -1\n", UA, None),
        ("User-agent: *\nCrawl-delay: inf\n", UA, None),
        ("User-agent: *\nCrawl-delay: nan\n", UA, None),
        ("User-agent: *\nCrawl-delay: 1e3\n", UA, None),
        ("User-agent: *\nCrawl-delay: 5s\n", UA, None),
        ("User-agent: *\nCrawl-delay:\n", UA, None),
        ("User-agent: *\nCrawl-delay: " + "9" * 400 + "\n", UA, None),
    ],
)
def test_crawl_delay(robots: str, user_agent: str, delay: float | None) -> None:
    assert parse_robots(robots, ROBOTS_URL).crawl_delay(user_agent) == delay


def test_a_crawl_delay_line_closes_the_run_of_user_agent_lines() -> None:
    robots = "User-agent: *\nCrawl-delay: 10\n\nUser-agent: badbot\nDisallow: /\n"
    rules = parse_robots(robots, ROBOTS_URL)

    assert rules.crawl_delay(UA) == 10.0
    assert rules.is_allowed("https://example.com/x", UA) is True
    assert rules.is_allowed("https://example.com/x", "BadBot") is False
    assert rules.crawl_delay("BadBot") is None


def test_sitemaps_are_global_absolute_ordered_and_unique() -> None:
    robots = """\
Sitemap: https://example.com/sitemap-1.xml
User-agent: otherbot
Disallow: /
sitemap: /sitemap-2.xml
Site-map: sitemap-3.xml   # relative to the robots.txt
SITEMAP: https://example.com/sitemap-1.xml
Sitemap: https://cdn.example.net/s.xml.gz
Sitemap: ftp://example.com/s.xml
Sitemap: javascript:alert(1)
Sitemap: http://[::1/broken.xml
Sitemap:
"""
    rules = parse_robots(robots, "https://example.com/robots.txt")

    assert rules.sitemaps == [
        "https://example.com/sitemap-1.xml",
        "https://example.com/sitemap-2.xml",
        "https://example.com/sitemap-3.xml",
        "https://cdn.example.net/s.xml.gz",
    ]
    assert rules.is_allowed("https://example.com/x", UA) is True


def test_allow_all_and_disallow_all() -> None:
    allow_all = RobotsRules.allow_all()
    disallow_all = RobotsRules.disallow_all()

    assert allow_all.is_allowed("https://example.com/x", UA) is True
    assert allow_all.crawl_delay(UA) is None
    assert (allow_all.sitemaps, allow_all.source) == ([], None)
    assert disallow_all.is_allowed("https://example.com/", UA) is False
    assert disallow_all.is_allowed("https://example.com/x?y", UA) is False
    assert disallow_all.is_allowed("https://example.com/robots.txt", UA) is True
    assert disallow_all.crawl_delay(UA) is None
    assert (disallow_all.sitemaps, disallow_all.source) == ([], None)


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("https://example.com", "/"),
        ("https://example.com/", "/"),
        ("https://example.com?a=1", "/?a=1"),
        ("https://example.com/a/b?c=d#frag", "/a/b?c=d"),
        ("https://example.com#frag/x", "/"),
        ("https://user:pw@example.com:8080/a", "/a"),
        ("/a/b?c", "/a/b?c"),
        ("//example.com/a", "/a"),
        ("example.com/a", "/a"),
        ("https://example.com/a;b", "/a;b"),
        ("https://example.com/a?x=http://b/c", "/a?x=http://b/c"),
        ("https://example.com/caf\u00e9 x", "/caf%C3%A9%20x"),
        ("https://example.com/%7euser/%2f", "/~user/%2F"),
    ],
)
def test_urls_are_matched_on_normalized_path_and_query(url: str, path: str) -> None:
    assert _path_of(url) == path


URL_TEXT = st.text(alphabet=st.sampled_from("/?#;:%@[]* ~aZ09.\u00e9\t"), max_size=40)


@given(st.sampled_from(["https://example.com", "http://a:1", "//h", "x://", ""]), URL_TEXT)
def test_fast_path_agrees_with_full_normalization(prefix: str, rest: str) -> None:
    url = prefix + rest

    assert _path_of(url) == _escape_specials(_normalize(_path_and_query(url)))


@given(st.text(alphabet="/?&=*$%.~abcAB019 #\u00e9", max_size=30))
def test_normalization_is_idempotent(text: str) -> None:
    assert _normalize(_normalize(text)) == _normalize(text)


@given(body=st.binary(max_size=400), url=st.text(max_size=60), user_agent=st.text(max_size=20))
def test_garbage_never_raises(body: bytes, url: str, user_agent: str) -> None:
    rules = parse_robots(b"User-agent: *\nDisallow: /*a*$\n" + body, url)

    assert isinstance(rules.is_allowed(url, user_agent), bool)
    assert rules.crawl_delay(user_agent) is None or rules.crawl_delay(user_agent) >= 0
    assert all(s.startswith(("http://", "https://")) for s in rules.sitemaps)
