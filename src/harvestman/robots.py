"""robots.txt policy per host (RFC 9309).

The first section parses a robots.txt body and answers questions about it; it does no I/O.
Where RFC 9309 leaves room for readings, it follows Google's reference parser
(github.com/google/robotstxt)::

    >>> rules = parse_robots(
    ...     b"User-agent: *\\nDisallow: /private\\nAllow: /private/ok\\nCrawl-delay: 2\\n"
    ...     b"Sitemap: /sitemap.xml\\n",
    ...     "https://example.com/robots.txt",
    ... )
    >>> rules.is_allowed("https://example.com/private/x", "Harvestman/0.1 (+https://h.example)")
    False
    >>> rules.is_allowed("https://example.com/private/ok", "Harvestman/0.1")
    True
    >>> rules.crawl_delay("Harvestman/0.1"), rules.sitemaps
    (2.0, ['https://example.com/sitemap.xml'])

Why not Protego: Protego 0.7 disagrees with Google's parser on user-agent matching (it looks for
the group's name inside the crawler's name, so ``User-agent: harvest`` binds ``harvestman`` and
``User-agent: Harvestman/1.0`` does not; it keeps same-named groups apart; ``* foo`` is no
global group), on rule length (it counts ``?`` as the three octets of ``%3F``), on ``$`` (a
``Disallow: /a$`` also disallows ``/a$b``), on line breaks (form feed and vertical tab split
lines) and on ``index.htm``. The matcher below is also about three times faster
(bench/bench_robots.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import urljoin, urlsplit

__all__ = ["MAX_ROBOTS_BYTES", "RobotsRules", "parse_robots", "product_token"]

# ------------------------------------------------------------------------------------------------
# Parsing and matching (RFC 9309). Nothing in this section does I/O.
# ------------------------------------------------------------------------------------------------

MAX_ROBOTS_BYTES: Final = 500 * 1024
"""Octets of a robots.txt body that are read; the rest is ignored (RFC 9309 §2.5, Google)."""

# Google's line limit: eight times the longest URL the old browsers took, less the byte its
# buffer keeps for the final NUL (robots.cc, RobotsTxtParser::Parse). It also bounds the work a
# single hostile pattern can cost per URL.
_MAX_LINE_CHARS: Final = 2083 * 8 - 1
_BOM: Final = b"\xef\xbb\xbf"
_WHITESPACE: Final = " \t\v\f"
_LINE_BREAK: Final = re.compile(r"\r\n?|\n")
_WHITESPACE_RUN: Final = re.compile(r"[ \t]+")
# A user-agent line names the run of [a-zA-Z_-] its value starts with (RFC 9309 §2.2.1 allows
# only those characters; Google reads "Foo/1.0" or "Foo2Bot" as "foo" rather than dropping it).
_LINE_TOKEN: Final = re.compile(r"[A-Za-z_-]*")
# The crawler's own product name: its user agent up to the version or the comment.
_CALLER_TOKEN: Final = re.compile(r"[^/\s]*")
_CRAWL_DELAY: Final = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")
_PATH_START: Final = re.compile(r"[/?;]")

# What rules and URLs are compared on: RFC 3986 §6.2.2 normalization, the same one
# harvestman.urls applies to the URLs it hands out (and the fast path below relies on that).
_UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SAFE: Final = r"A-Za-z0-9\-._~!$&'()*+,;=:@/?"
_ESCAPE_OR_UNSAFE: Final = re.compile(f"%([0-9A-Fa-f]{{2}})|[^{_SAFE}]")
_CANONICAL_URL: Final = re.compile(f"[A-Za-z][A-Za-z0-9+.\\-]*://[^/?#;]*((?:[/?][{_SAFE}]*)?)")

_ALLOW, _DISALLOW, _USER_AGENT, _SITEMAP, _CRAWL_DELAY_KEY = range(5)
# Google reads a key by its prefix and forgives these spellings; crawl-delay is not Google's.
_KEYS: Final = (
    (("user-agent", "useragent", "user agent"), _USER_AGENT),
    (("allow",), _ALLOW),
    (("disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"), _DISALLOW),
    (("sitemap", "site-map"), _SITEMAP),
    (("crawl-delay", "crawl delay", "crawldelay", "crawl_delay"), _CRAWL_DELAY_KEY),
)


def product_token(user_agent: str) -> str:
    """The crawler's product token: its user agent's product name, up to "/" or white space,
    lower-cased, and never shortened further.

    Groups are selected by comparing it whole with each user-agent line's token
    (:func:`_line_token`), as RFC 9309 §2.2.1 and Google's matcher both do, so "Foo.Bot/1.0"
    does not bind a ``User-agent: foo`` group: it falls to ``*``.

    >>> product_token("Harvestman/0.1 (+https://x)")
    'harvestman'
    >>> product_token("Foo.Bot/1.0")
    'foo.bot'
    """
    match = _CALLER_TOKEN.match(user_agent.strip(_WHITESPACE))
    return match.group().lower() if match else ""


def _line_token(value: str) -> str:
    """The name a user-agent line gives: its value up to the first character outside
    ``[a-zA-Z_-]``, lower-cased ("Foo-Bot/2.0 (x)" names "foo-bot")."""
    match = _LINE_TOKEN.match(value)
    return match.group().lower() if match else ""


def parse_robots(body: bytes | str, robots_url: str) -> RobotsRules:
    """Parse a robots.txt body; never raises.

    ``body`` is read up to :data:`MAX_ROBOTS_BYTES` octets (a ``str`` is measured as UTF-8), a
    byte-order mark is dropped and invalid UTF-8 is replaced. ``robots_url`` is the address the
    body came from; relative ``Sitemap`` lines are resolved against it.
    """
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body)
    data = data[:MAX_ROBOTS_BYTES]
    # Google also skips a BOM cut short, which would otherwise spoil the first key.
    bom = 0
    while bom < len(_BOM) and bom < len(data) and data[bom] == _BOM[bom]:
        bom += 1
    text = data[bom:].decode("utf-8", "replace")

    groups: list[_Group] = []
    sitemaps: dict[str, None] = {}
    group: _Group | None = None
    # RFC 9309 §2.1: consecutive user-agent lines open one group. As in Google's parser, unknown
    # lines and sitemaps between them do not split it; a rule closes the run, and so does a
    # Crawl-delay, a record of the group for those who write one (Google ignores the line, so
    # "User-agent: *, Crawl-delay: 9, User-agent: badbot, Disallow: /" would bar everyone).
    collecting_agents = False
    for line in _LINE_BREAK.split(text):
        parsed = _key_value(line[:_MAX_LINE_CHARS])
        if parsed is None:
            continue
        key, value = parsed
        if key == _USER_AGENT:
            if group is None or not collecting_agents:
                group = _Group()
                groups.append(group)
                collecting_agents = True
            group.add_agent(value)
        elif key == _SITEMAP:
            sitemap = _resolve_sitemap(value, robots_url)
            if sitemap is not None:
                sitemaps[sitemap] = None
        elif group is None:
            continue  # a rule before any user-agent line applies to no one
        else:
            collecting_agents = False
            if key != _CRAWL_DELAY_KEY:
                group.rules.append((value, key == _ALLOW))
            elif group.crawl_delay is None:
                group.crawl_delay = _parse_crawl_delay(value)
    return RobotsRules(groups, list(sitemaps), source=text)


class RobotsRules:
    """The rules of one robots.txt, queried by URL and user agent.

    ``sitemaps`` lists the absolute http(s) URLs of its ``Sitemap`` lines, in file order, without
    duplicates. ``source`` is the text that was parsed (after the size cap and BOM removal), which
    :func:`parse_robots` turns back into equal rules; ``None`` for :meth:`allow_all` and
    :meth:`disallow_all`. Build one with :func:`parse_robots`, :meth:`allow_all` or
    :meth:`disallow_all`.

    A user agent is matched on its :func:`product_token`, whole and case-insensitively: the
    groups naming that token apply, merged; else the ``*`` groups, merged; else nothing is
    disallowed. What a user agent selects
    is worked out once and kept, since a crawler asks with the same user agent every time.
    """

    __slots__ = ("_groups", "_policies", "sitemaps", "source")

    def __init__(
        self, groups: list[_Group], sitemaps: list[str], source: str | None = None
    ) -> None:
        self._groups = groups
        self._policies: dict[str, _Policy] = {}
        self.sitemaps = sitemaps
        self.source = source

    @classmethod
    def allow_all(cls) -> RobotsRules:
        """Rules that allow every URL (robots.txt missing, RFC 9309 §2.3.1.3)."""
        return cls([], [])

    @classmethod
    def disallow_all(cls) -> RobotsRules:
        """Rules that disallow every URL but /robots.txt (unreachable, RFC 9309 §2.3.1.4)."""
        group = _Group()
        group.add_agent("*")
        group.rules.append(("/", False))
        return cls([group], [])

    def is_allowed(self, url: str, user_agent: str) -> bool:
        """Whether ``user_agent`` may fetch ``url`` (absolute, or a path).

        The URL's path and query (never its fragment) are matched against the rules of the
        selected groups: the longest matching pattern decides, an Allow wins a tie, and no match
        means allowed. ``/robots.txt`` itself is always allowed.
        """
        policy = self._policies.get(user_agent) or self._policy(user_agent)
        matcher = policy.matcher
        if matcher is None:
            return True
        path = _path_of(url)
        if path == "/robots.txt" or path.startswith("/robots.txt?"):
            return True
        return matcher.allows(path)

    def crawl_delay(self, user_agent: str) -> float | None:
        """Seconds ``user_agent`` should wait between requests; ``None`` if the file says nothing.

        The first valid ``Crawl-delay`` of the selected groups in file order counts; values that
        are not a non-negative decimal number are ignored.
        """
        return (self._policies.get(user_agent) or self._policy(user_agent)).crawl_delay

    def _policy(self, user_agent: str) -> _Policy:
        token = product_token(user_agent)
        groups = [group for group in self._groups if token and token in group.agents]
        if not groups:
            groups = [group for group in self._groups if group.is_global]
        rules = [rule for group in groups for rule in group.rules]
        delays = [group.crawl_delay for group in groups if group.crawl_delay is not None]
        policy = _Policy(_Matcher(rules) if rules else None, delays[0] if delays else None)
        if len(self._policies) >= 16:  # callers pass one user agent; don't grow without bound
            self._policies.clear()
        self._policies[user_agent] = policy
        return policy

    def __repr__(self) -> str:
        rules = sum(len(group.rules) for group in self._groups)
        return (
            f"<RobotsRules groups={len(self._groups)} rules={rules} sitemaps={len(self.sitemaps)}>"
        )


class _Group:
    """One group of a robots.txt: the agents it names, its rules and its crawl delay."""

    __slots__ = ("agents", "crawl_delay", "is_global", "rules")

    def __init__(self) -> None:
        self.agents: set[str] = set()
        self.is_global = False
        self.rules: list[tuple[str, bool]] = []  # (pattern as written, is an Allow)
        self.crawl_delay: float | None = None

    def add_agent(self, value: str) -> None:
        # Google: "* anything" is still the global group; "Foo/1.0" and "Foo bar" name "foo".
        if value[:1] == "*" and (len(value) == 1 or value[1] in _WHITESPACE):
            self.is_global = True
        else:
            token = _line_token(value)
            if token:
                self.agents.add(token)
            # A line naming a crawler's product token exactly binds it, digits and dots
            # included ("User-agent: MJ12bot" is MJ12bot's group, not only "mj"'s), as in
            # Protego and every polite crawler; Google's shortened token stays for the rest.
            exact = product_token(value)
            if exact:
                self.agents.add(exact)


@dataclass(frozen=True, slots=True)
class _Policy:
    matcher: _Matcher | None
    crawl_delay: float | None


class _Matcher:
    """Longest-match evaluation of a set of (pattern, is_allow) rules.

    A pattern can only match a path that starts with its literal head (the part before the
    first ``*``), so rules are bucketed by head and a lookup probes ``path[:n]`` for each head
    length ``n``: a few dict lookups instead of a scan of every rule. Only rules sharing a head
    (``/*?sort=``, ``/*.pdf$`` all have the head ``/``) are tried one by one, longest first.
    """

    __slots__ = ("_by_head", "_head_lengths")

    def __init__(self, rules: list[tuple[str, bool]]) -> None:
        by_head: dict[str, list[tuple[int, int, tuple[str, ...], str]]] = {}
        for value, allow in rules:
            pattern = _normalize(value)
            patterns = [pattern]
            if allow:
                # Google: allowing ".../index.htm(l)" also allows the directory itself.
                slash = pattern.rfind("/")
                if slash >= 0 and pattern.startswith("/index.htm", slash):
                    patterns.append(pattern[: slash + 1] + "$")
            for pattern in patterns:
                if pattern:  # an empty pattern matches nothing (RFC 9309 §2.2.2)
                    head, rule = _compile_rule(pattern, allow)
                    by_head.setdefault(head, []).append(rule)
        for bucket in by_head.values():
            bucket.sort(key=lambda rule: rule[0], reverse=True)
        self._by_head = {head: tuple(bucket) for head, bucket in by_head.items()}
        self._head_lengths = tuple(sorted({len(head) for head in by_head}))

    def allows(self, path: str) -> bool:
        """Whether the rules allow ``path`` (normalized path and query)."""
        best = -1
        size = len(path)
        by_head = self._by_head
        for length in self._head_lengths:
            if length > size:
                break
            bucket = by_head.get(path[:length])
            if bucket is None:
                continue
            for score, kind, middle, last in bucket:
                if score <= best:
                    break
                # The common shapes are tested inline: this loop is the hot path.
                if (
                    kind == _PREFIX
                    or (kind == _EXACT and size == length)
                    or (kind == _CONTAINS and path.find(last, length) >= 0)
                    or (kind == _ENDS and size - len(last) >= length and path.endswith(last))
                    or (
                        kind >= _WILDCARDS
                        and _matches_after_head(
                            path, length, middle, last, kind == _WILDCARDS_TO_END
                        )
                    )
                ):
                    best = score
                    break
        return best < 0 or best & 1 == 1


# Rule shapes, by what the path must satisfy once it starts with the rule's head.
_PREFIX, _EXACT, _CONTAINS, _ENDS, _WILDCARDS, _WILDCARDS_TO_END = range(6)


def _compile_rule(pattern: str, allow: bool) -> tuple[str, tuple[int, int, tuple[str, ...], str]]:
    """``(head, (score, kind, middle, last))`` for a normalized, non-empty pattern.

    The pattern reads ``head*middle[0]*…*middle[-1]*last``, then ``$`` for the anchored kinds.
    Its score is twice its length in octets, plus one for an Allow: the higher score is the
    longer rule, and an Allow wins a tie.
    """
    score = 2 * len(pattern) + allow
    anchored = pattern.endswith("$")
    # A "$" before the end is a plain character; paths carry it as "%24" (see _path_of), so a
    # rule's "%24" and its inner "$" both match a literal "$" (RFC 9309 §2.2.3's examples).
    body = (pattern[:-1] if anchored else pattern).replace("$", "%24")
    head, star, rest = body.partition("*")
    if not star:
        return head, (score, _EXACT if anchored else _PREFIX, (), "")
    pieces = rest.split("*")
    middle = tuple(piece for piece in pieces[:-1] if piece)
    last = pieces[-1]
    if middle:
        return head, (score, _WILDCARDS_TO_END if anchored else _WILDCARDS, middle, last)
    if not last:  # "/a*" and "/a*$" match what "/a" matches
        return head, (score, _PREFIX, (), "")
    return head, (score, _ENDS if anchored else _CONTAINS, (), last)


def _matches_after_head(
    path: str, position: int, middle: tuple[str, ...], last: str, anchored: bool
) -> bool:
    """Whether ``path[position:]`` matches ``*middle[0]*…*middle[-1]*last`` (then its end).

    Taking each piece at its earliest occurrence leaves the most room for the rest, so this
    greedy scan is exact and linear, where a backtracking regex can take exponential time.
    """
    for piece in middle:
        found = path.find(piece, position)
        if found < 0:
            return False
        position = found + len(piece)
    if anchored:
        return len(path) - len(last) >= position and path.endswith(last)
    return path.find(last, position) >= 0


def _key_value(line: str) -> tuple[int, str] | None:
    """The (key, value) of a line, or ``None`` for blank, comment, unknown or broken lines."""
    line = line.partition("#")[0].strip(_WHITESPACE)
    if not line:
        return None
    key, colon, value = line.partition(":")
    if not colon:
        # Google: a forgotten colon is forgiven when the line is exactly two words.
        words = _WHITESPACE_RUN.split(line)
        if len(words) != 2:
            return None
        key, value = words
    key = key.strip(_WHITESPACE).lower()
    for spellings, kind in _KEYS:
        if key.startswith(spellings):
            return kind, value.strip(_WHITESPACE)
    return None


def _parse_crawl_delay(value: str) -> float | None:
    if not _CRAWL_DELAY.fullmatch(value):
        return None
    delay = float(value)
    return delay if math.isfinite(delay) else None


def _resolve_sitemap(value: str, robots_url: str) -> str | None:
    if not value:
        return None
    try:
        url = urljoin(robots_url, value)
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed "[" in the host
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return url


def _fix_escape(match: re.Match[str]) -> str:
    hex_digits = match.group(1)
    if hex_digits is not None:
        char = chr(int(hex_digits, 16))
        return char if char in _UNRESERVED else "%" + hex_digits.upper()
    return "".join(f"%{byte:02X}" for byte in match.group().encode("utf-8", "surrogatepass"))


def _normalize(text: str) -> str:
    """Percent-encoding normalized (RFC 3986 §6.2.2, RFC 9309 §2.2.2): ``%7e`` → ``~``,
    ``%3f`` → ``%3F``, ``ツ`` → ``%E3%83%84``, a stray ``%`` → ``%25``; ``*`` and ``$`` stay."""
    return _ESCAPE_OR_UNSAFE.sub(_fix_escape, text)


def _path_and_query(url: str) -> str:
    """Google's GetPathParamsQuery: what follows the authority, without the fragment."""
    start = 2 if url.startswith("//") else 0
    early_path = _PATH_START.search(url, start)
    protocol_end = url.find("://", start)
    if protocol_end < 0 or (early_path is not None and early_path.start() < protocol_end):
        protocol_end = start  # a "://" inside the path or query names no scheme
    else:
        protocol_end += 3
    path_start = _PATH_START.search(url, protocol_end)
    if path_start is None:
        return "/"
    begin = path_start.start()
    hash_pos = url.find("#", start)
    if 0 <= hash_pos < begin:
        return "/"
    path = url[begin:] if hash_pos < 0 else url[begin:hash_pos]
    return path if path.startswith("/") else "/" + path


def _path_of(url: str) -> str:
    """The normalized path and query of ``url``, as rules are matched against.

    A literal ``*`` or ``$`` is written ``%2A`` / ``%24``: in a rule those two are special, and
    their escaped forms are how a rule names the literal characters (RFC 9309 §2.2.3).
    """
    canonical = _CANONICAL_URL.fullmatch(url)
    if canonical is not None:  # already normalized, as harvestman.urls hands URLs out
        path = canonical.group(1)
        if not path.startswith("/"):
            path = "/" + path
    else:
        path = _normalize(_path_and_query(url))
    return _escape_specials(path)


def _escape_specials(path: str) -> str:
    """``*`` and ``$`` as ``%2A`` and ``%24``, the forms a rule matches them by."""
    if "*" in path or "$" in path:
        return path.replace("*", "%2A").replace("$", "%24")
    return path
