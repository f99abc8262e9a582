"""URL normalization, hashing, host keys and crawl scope.

Every link of every page passes through :meth:`UrlNormalizer.normalize`, so this module is the
hottest code of the crawler. Links resolve and parse by the WHATWG URL Standard, as a browser
resolves them (ada, the C++ parser Node.js uses, through its C API); Harvestman's own rules
then apply to the parsed parts, leaving components that are already canonical untouched. A
relative reference of plain characters is merged without the parser (the parser's answer,
tested), the work done per authority and per base URL is cached, and each normalizer
remembers its answers, keyed by what of the base they depend on (nothing for
``http(s)://...``, scheme and authority for ``/path``, the directory too for ``path`` and
``../path``): nav bars, footers and pages linking to each other repeat links across a site's
pages, and a repeat then costs one dict lookup instead of a parse.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Final

import idna
from ada_url._ada_wrapper import ffi as _ffi
from ada_url._ada_wrapper import lib as _ada

from harvestman.errors import ConfigError, PatternError, UrlError
from harvestman.patterns import UrlPattern, compile_pattern

if TYPE_CHECKING:
    from harvestman.config import Settings

__all__ = [
    "DEFAULT_TRACKING_PARAMS",
    "MAX_URL_LENGTH",
    "REFUSAL_REASONS",
    "Scope",
    "UrlNormalizer",
    "host_key",
    "normalize_url",
    "refusal",
    "robots_url",
    "url_hash",
]

DEFAULT_TRACKING_PARAMS: tuple[str, ...] = ("utm_*", "ref", "source", "fbclid", "gclid")
MAX_URL_LENGTH = 2048

_DEFAULT_PORTS: Final = {"http": "80", "https": "443"}

# What each ``UrlError.reason`` of the normalizer means, for a person who typed the URL.
REFUSAL_REASONS: Final = {
    "empty": "nothing was given",
    "scheme": "only http:// and https:// addresses are crawled",
    "no_host": "the address has no host",
    "bad_host": "the host is not a valid name or IP address",
    "bad_port": "the port is not a number up to 65535",
    "too_long": f"it is longer than {MAX_URL_LENGTH:,} characters once normalized",
    "unparsable": "it cannot be read as a URL",
}


def refusal(exc: UrlError) -> str:
    """Why a URL was refused, for a person: the reason token and what it means here
    ("scheme: ftp: is not http(s)")."""
    why = exc.detail or REFUSAL_REASONS.get(exc.reason, "")
    return f"{exc.reason}: {why}" if why else exc.reason


# Answers a normalizer remembers (see the module docstring); ~200 bytes each, dropped all at
# once when full. With page processes both the crawler and its page process hold one: 16,384
# (~3.5 MB) crawled 200,000 pages with the same CPU as 32,768 and 65,536 (bench/README.md).
MEMO_SIZE: Final = 16_384
# Queries a normalizer remembers cleaned (an LRU cache; a query is at most a URL's length).
QUERY_CACHE_SIZE: Final = 512
_ABSOLUTE: Final = ("http://", "https://")

# WHATWG strips leading and trailing C0 controls and spaces; we also strip Unicode white space
# (NBSP and friends arrive in hrefs copied from word processors).
_STRIP_CHARS: Final = "".join(
    {chr(c) for c in range(0x21)} | {c for c in map(chr, range(0x3000 + 1)) if c.isspace()}
)

# RFC 3986 appendix B, with the scheme restricted to its grammar so that "1a:b" or "ü:x" parse as
# relative paths (as browsers do) instead of as unknown schemes.
_SPLIT: Final = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?", re.S
).match

# A relative reference the URL Standard resolves as RFC 3986 does: a path of characters the
# parser neither encodes nor reads specially (no "%", which may spell a dot segment, no ":",
# "\\" or white space), not starting "//", then maybe a query without "'" (which it encodes).
_SIMPLE_REFERENCE: Final = re.compile(
    r"(?!//)[A-Za-z0-9\-._~!$&()*+,;=@/]+(?:\?[A-Za-z0-9\-._~!$&()*+,;=:@/?%]*)?"
).fullmatch
# An absolute http(s) URL whose authority is a plain host and port: its authority parses as in
# the base "scheme://authority/", and its path and query then resolve against that base.
_PLAIN_ABSOLUTE: Final = re.compile(r"(https?://[A-Za-z0-9.\-]+(?::[0-9]*)?)(/.*)", re.S).fullmatch
# A scheme (RFC 3986's grammar) ending the first segment: "mailto:", "javascript:", "tel:".
_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):").match
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_BYTE_ESCAPES: Final = tuple(f"%{b:02X}" for b in range(256))


def _escape_table() -> dict[str, str]:
    """Map every two-hex-digit escape body (any case) to its normalized form (RFC 3986 §6.2.2)."""
    table = {}
    digits = "0123456789abcdefABCDEF"
    for hi in digits:
        for lo in digits:
            char = chr(int(hi + lo, 16))
            table[hi + lo] = char if char in _UNRESERVED else f"%{(hi + lo).upper()}"
    return table


_ESCAPES: Final = _escape_table()

_UNRESERVED_RE = r"A-Za-z0-9\-._~"
_SUB_DELIMS_RE = r"!$&'()*+,;="
_PATH_CHARS = _UNRESERVED_RE + _SUB_DELIMS_RE + ":@/"
_QUERY_CHARS = _PATH_CHARS + "?"
_USERINFO_CHARS = _UNRESERVED_RE + _SUB_DELIMS_RE + ":"

_PATH_IS_CANONICAL: Final = re.compile(f"[{_PATH_CHARS}]*").fullmatch
_QUERY_IS_CANONICAL: Final = re.compile(f"[{_QUERY_CHARS}]*").fullmatch
_PATH_FIX: Final = re.compile(f"%([0-9A-Fa-f]{{2}})|%|[^{_PATH_CHARS}%]+").sub
_QUERY_FIX: Final = re.compile(f"%([0-9A-Fa-f]{{2}})|%|[^{_QUERY_CHARS}%]+").sub
_USERINFO_FIX: Final = re.compile(f"%([0-9A-Fa-f]{{2}})|%|[^{_USERINFO_CHARS}%]+").sub
_USERINFO_IS_CANONICAL: Final = re.compile(f"[{_USERINFO_CHARS}]*").fullmatch


def _fix_escape(match: re.Match[str]) -> str:
    hex_digits = match.group(1)
    if hex_digits is not None:
        return _ESCAPES[hex_digits]
    text = match.group()
    if text == "%":
        return "%25"
    return "".join([_BYTE_ESCAPES[b] for b in text.encode("utf-8")])


def _normalize_escapes(text: str, fix: Callable[..., str]) -> str:
    """Apply RFC 3986 §6.2.2 percent-encoding normalization to one component."""
    try:
        return fix(_fix_escape, text)
    except UnicodeEncodeError:  # a lone surrogate cannot be UTF-8 encoded
        raise UrlError("unparsable", text, "not valid Unicode") from None


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 for an absolute path, linear in its length.

    The URL parser has removed every dot segment, escaped ones too; this only runs when an
    escape decoded by :func:`_normalize_escapes` spells a new one (``/%2e%2e%2f`` does not,
    so in practice it never changes a path, but the output must be free of them).
    """
    segments = path.split("/")
    output: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if segments[-1] in (".", ".."):
        output.append("")
    return "/" + "/".join(output)


def _ada_href(url: bytes, base: bytes | None) -> str | None:
    """The WHATWG URL Standard's serialization of ``url`` parsed against ``base``, or ``None``.

    The C API of ada (the parser Node.js uses) is called directly: through ``ada_url.join_url``
    each call costs 0.7 µs more (an ``ffi.gc`` wrapper and an exception per failure), and this
    runs for every link that is not remembered.
    """
    if base is None:
        parsed = _ada.ada_parse(url, len(url))
    else:
        parsed = _ada.ada_parse_with_base(url, len(url), base, len(base))
    try:
        if not _ada.ada_is_valid(parsed):
            return None
        href = _ada.ada_get_href(parsed)
        return _ffi.unpack(href.data, href.length).decode("ascii")  # type: ignore[no-any-return]
    finally:
        _ada.ada_free(parsed)


@lru_cache(maxsize=1024)
def _parse_base(base: str) -> tuple[bytes | None, str | None, str | None, str]:
    """(href as bytes, scheme, authority, directory) of a base URL; cached, pages share it.

    A base the URL Standard refuses is no base (``href`` ``None``): absolute links still
    resolve. The memo keys on the parsed base, so ``/a/..`` and ``/`` share their answers.
    """
    text = _clean_input(base)
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        encoded = _SURROGATE.sub("\ufffd", text).encode("utf-8")
    href = _ada_href(encoded, None)
    if href is None:
        return None, None, None, ""
    scheme, _, rest = href.partition(":")
    if not rest.startswith("//"):  # an opaque path: mailto:, data:, ...
        return href.encode("ascii"), scheme, None, ""
    slash = rest.find("/", 2)
    authority = rest[2:slash] if slash >= 0 else rest[2:]
    path = rest[slash:] if slash >= 0 else ""
    path = path.partition("#")[0].partition("?")[0]
    return href.encode("ascii"), scheme, authority, path[: path.rfind("/") + 1]


def _clean_input(url: str) -> str:
    """Strip what the URL Standard strips, plus Unicode white space at either end.

    The standard strips leading and trailing C0 controls and spaces (and ada does); NBSP and
    friends also arrive around hrefs copied from word processors, and no browser keeps them
    as part of a link a person clicks.
    """
    text = url.strip()
    if text and (text[0] < " " or text[-1] < " "):  # C0 controls that str.strip() keeps
        text = text.strip(_STRIP_CHARS)
    return text


def _failure_reason(text: str, has_base: bool) -> str:
    """Why the URL parser refused ``text`` (cleaned), in Harvestman's reason vocabulary."""
    if not text:
        return "empty"
    match = _SPLIT(text.replace("\\", "/"))
    assert match is not None  # every group of the pattern is optional
    scheme, authority, path = match.group(1, 2, 3)
    if (scheme is None and not has_base) or (
        scheme is not None and scheme.lower() not in _DEFAULT_PORTS
    ):
        return "scheme"
    if authority is None:
        if scheme is None:
            return "scheme" if not has_base else "bad_host"
        # "http:host/path", "http:/host": the standard reads the host after any slashes
        authority = path.lstrip("/").partition("/")[0]
    host_port = authority.rpartition("@")[2]
    if host_port.startswith("["):
        return "bad_host"
    host, colon, port = host_port.rpartition(":")
    if not colon:
        host, port = port, ""
    if not host:
        return "no_host"
    if colon and (not (port.isascii() and port.isdigit()) or int(port[-6:]) > 65535):
        return "bad_port"
    return "bad_host"


def _invalid_a_label(host: str) -> str | None:
    """The first ``xn--`` label of ``host`` that UTS #46 refuses, or ``None``.

    The URL Standard's "domain to ASCII" decodes such labels and checks them (the label must
    decode, to something not ASCII, that UTS #46 maps to itself); ada keeps them as written.
    """
    for label in host.split("."):
        if label.startswith("xn--"):
            try:
                decoded = label[4:].encode("ascii").decode("punycode")
                valid = not decoded.isascii() and (
                    idna.uts46_remap(decoded, std3_rules=False, transitional=False) == decoded
                )
            except (UnicodeError, ValueError, idna.IDNAError):
                valid = False
            if not valid:
                return label
    return None


def _dns_name_error(host: str) -> str | None:
    """Why DNS cannot look ``host`` up (RFC 1035 §2.3.4), or ``None``.

    The URL Standard accepts ``a..b.com``, a 64-character label or a 300-character name, and
    a browser then fails in its resolver; a crawler refuses them before queueing.
    """
    if host.startswith("[") or len(host) > 253:
        return None if host.startswith("[") else "name over 253 characters"
    for label in host.split("."):
        if not 0 < len(label) <= 63:
            return "empty label or label over 63 characters"
    return None


@lru_cache(maxsize=4096)
def _normalize_authority(authority: str) -> str:
    """``[userinfo@]host[:port]`` of a parsed URL with Harvestman's rules on top; cached.

    The parser has mapped the host (UTS #46, IPv4 numbers, IPv6 compressed), removed a
    default port and an empty userinfo; a trailing dot on the host goes too (``example.com.``
    is ``example.com`` to DNS), and a name DNS cannot look up is refused.
    """
    userinfo, at, host_port = authority.rpartition("@")
    if host_port.startswith("["):
        end = host_port.find("]") + 1
        host, port = host_port[:end], host_port[end:]
    else:
        host, colon, port = host_port.partition(":")
        port = colon + port
        if host.endswith("."):
            host = host[:-1]
        problem = _dns_name_error(host)
        if problem is not None:
            raise UrlError("bad_host", host, problem)
        if "xn--" in host:
            label = _invalid_a_label(host)
            if label is not None:
                raise UrlError("bad_host", host, f"{label} is not a valid IDNA label")
    if at:
        if not _USERINFO_IS_CANONICAL(userinfo):
            userinfo = _normalize_escapes(userinfo, _USERINFO_FIX)
        return f"{userinfo}@{host}{port}"
    return host + port


def _unfragmented(url: str) -> str:
    """``url`` without its fragment, the memo's key for it: "page#a" and "page#b" have one
    answer, kept under "page", unless white space ends "page" (inside a URL it is kept, at its
    end stripped, so the fragment decides).

    >>> _unfragmented("a.html#top"), _unfragmented("a #top")
    ('a.html', 'a #top')
    """
    bare = url.partition("#")[0]
    if not bare or bare[-1] <= " " or bare[-1].isspace():
        return url
    return bare


class UrlNormalizer:
    """Turns any link into the one canonical, crawlable form of its URL, or raises ``UrlError``.

    Rules: the WHATWG URL Standard's parsing (what a browser fetches), then RFC 3986 §6:

    - the URL Standard resolves ``url`` against ``base`` and parses it: surrounding white space
      and embedded tab/CR/LF removed, "\\" read as "/", ``http:g`` and ``https:/host`` read
      as browsers read them, scheme and host lower-cased, IDN hosts to punycode (UTS #46),
      IPv4 in any number form to dotted decimal (an invalid one refused), IPv6 compressed,
      a default port (80 for http, 443 for https) and an empty userinfo removed; a lone
      surrogate counts as U+FFFD;
    - a trailing dot on the host is removed, and a host DNS cannot look up (an empty label,
      a label over 63 characters, a name over 253) is refused;
    - the fragment is dropped, dot segments are removed, an empty path becomes "/";
    - escapes get upper-case hex, escapes of unreserved characters are decoded, characters not
      allowed in a component are UTF-8 percent-encoded, a lone "%" becomes "%25";
    - query parameters (split on "&", empty ones dropped) are sorted by key then value (stable),
      tracking parameters are removed (``"utm_*"`` matches by prefix, other patterns exactly, keys
      compared case-insensitively), an empty query drops the "?";
    - optionally (``trailing_slash``, "keep" by default), a path's trailing slash is stripped
      (``/a/`` -> ``/a``; the root stays ``/``) or added to a path whose last segment holds no
      dot (``/a`` -> ``/a/``; ``/a.html`` stays), for sites that serve both forms alike.

    Failures carry a ``reason``: ``empty`` (nothing to resolve), ``scheme`` (not http/https, or
    a relative reference without a base), ``no_host``, ``bad_host``, ``bad_port``,
    ``too_long`` (over ``max_length`` once normalized).

    >>> n = UrlNormalizer()
    >>> n.normalize("HTTP://Example.COM:80/a/./b/../c?utm_source=x&b=2&a=1#top")
    'http://example.com/a/c?a=1&b=2'
    >>> n.normalize("../d%7e/%c3%a9 f", base="https://bücher.de/x/y/z")
    'https://xn--bcher-kva.de/x/d~/%C3%A9%20f'
    >>> n.normalize("//example.com", base="https://a.org/")
    'https://example.com/'
    """

    def __init__(
        self,
        tracking_params: Iterable[str] = DEFAULT_TRACKING_PARAMS,
        max_length: int = MAX_URL_LENGTH,
        *,
        trailing_slash: str = "keep",
    ) -> None:
        if max_length < 1:
            raise ConfigError(f"max URL length must be positive, got {max_length}")
        if trailing_slash not in TRAILING_SLASH_RULES:
            raise ConfigError(f"trailing_slash must be keep, add or strip, got {trailing_slash!r}")
        self._slash_rule = None if trailing_slash == "keep" else trailing_slash
        patterns = [p.lower() for p in tracking_params if p]
        self._tracking_exact = frozenset(p for p in patterns if not p.endswith("*"))
        self._tracking_prefixes = tuple(p[:-1] for p in patterns if p.endswith("*"))
        self._max_length = max_length
        # (url, base scheme, base authority, base directory) -> the answer: a URL, or a
        # failure's reason and detail. The key holds what the answer depends on; cleaning
        # (white space, "\\" read as "/") keeps a url's first character when it is "/", "."
        # or alphanumeric, so that character tells the kind of reference.
        self._memo: dict[tuple[str, str | None, str | None, str | None], str | tuple[str, str]]
        self._memo = {}
        # Links repeat their queries (pagination, tracking parameters) more than their paths.
        self._query = lru_cache(maxsize=QUERY_CACHE_SIZE)(self._normalize_query)

    @classmethod
    def from_settings(cls, settings: Settings) -> UrlNormalizer:
        """The normalizer ``settings`` describe (tracking parameters, length, trailing slash).

        Every part of Harvestman that turns a URL into its hash builds its normalizer here, so
        a URL seeded over the API and the same URL found by the crawler hash alike (a source's
        ``trailing_slash`` option is in its crawl's settings: ``jobs.runner.source_settings``).
        """
        return cls(
            settings.url_tracking_params,
            settings.url_max_length,
            trailing_slash=settings.url_trailing_slash,
        )

    def normalize(self, url: str, base: str | None = None) -> str:
        """Return the normalized absolute form of ``url`` (resolved against ``base``, if given).

        Raises ``UrlError`` and nothing else, whatever the strings.
        """
        # The fragment is dropped: "page#a" and "page#b" have one answer, kept under "page"
        # (unless white space ends "page": inside the URL it is kept, at its end stripped).
        bare = _unfragmented(url) if "#" in url else url
        first = bare[:1]
        if bare.startswith(_ABSOLUTE):
            key: tuple[str, str | None, str | None, str | None] = (bare, None, None, None)
        elif base is None or not (first == "/" or first == "." or first.isalnum()):
            # Not remembered: "", "?q", "#f", " x" need the base's path and query.
            return self._normalize(url, base)
        elif first != "/" and ":" in bare:
            # "http:?q" (a scheme, no authority, no path) needs the base, as browsers resolve
            # it. A scheme other than http(s) and the base's is read without the base, and
            # fails: "mailto:", "javascript:", "tel:" on every page are remembered once.
            scheme = _SCHEME(bare)
            if (
                scheme is None
                or len(bare) > self._max_length
                or (lowered := scheme.group(1).lower()) in _DEFAULT_PORTS
                or lowered == _parse_base(base)[1]
            ):
                return self._normalize(url, base)
            key = (bare, None, None, None)
        else:
            _, base_scheme, base_authority, base_directory = _parse_base(base)
            # "/path" and "//host" need the base's scheme and authority; "path", "./path",
            # "../path" its directory too; none needs the base's last segment or query. The
            # parts are the parsed base's, so "/a/../b" and "/b" are one directory.
            key = (bare, base_scheme, base_authority, None if first == "/" else base_directory)
        known = self._memo.get(key)
        if known is None:
            known = self._remember(key, url, base)
        if isinstance(known, str):
            return known
        raise UrlError(known[0], url, known[1])

    def normalize_each(self, urls: Iterable[str], base: str) -> Iterator[str | None]:
        """:meth:`normalize` of each of ``urls`` against ``base``, lazily, ``None`` for one that
        raises ``UrlError``: a page's links. The same answers, for less: what the memo's keys
        take of the base is worked out once, and a failure raises nothing.

        >>> list(UrlNormalizer().normalize_each(["b#x", "mailto:a@b.c"], "http://a.org/"))
        ['http://a.org/b', None]
        """
        _, scheme, authority, directory = _parse_base(base)
        memo = self._memo
        for url in urls:
            # The keys of :meth:`normalize`, for the kinds of reference it remembers without
            # a look at the reference's scheme.
            bare = _unfragmented(url) if "#" in url else url
            first = bare[:1]
            key: tuple[str, str | None, str | None, str | None]
            if first == "/":
                key = (bare, scheme, authority, None)
            elif bare.startswith(_ABSOLUTE):
                key = (bare, None, None, None)
            elif (first == "." or first.isalnum()) and ":" not in bare:
                key = (bare, scheme, authority, directory)
            else:
                try:
                    yield self.normalize(url, base)
                except UrlError:
                    yield None
                continue
            known = memo.get(key)
            if known is None:
                known = self._remember(key, url, base)
            yield known if isinstance(known, str) else None

    def _remember(
        self, key: tuple[str, str | None, str | None, str | None], url: str, base: str | None
    ) -> str | tuple[str, str]:
        """Work out ``url``'s answer (a URL, or a failure's reason and detail), remembered."""
        try:
            known: str | tuple[str, str] = self._normalize(url, base)
        except UrlError as exc:
            known = (exc.reason, exc.detail)
        memo = self._memo
        if len(memo) >= MEMO_SIZE:
            memo.clear()
        memo[key] = known
        return known

    def _normalize(self, url: str, base: str | None) -> str:
        reference = url.partition("#")[0] if "#" in url else url
        against = base
        if reference.startswith(_ABSOLUTE):
            parts = _PLAIN_ABSOLUTE(reference)
            if parts is not None:  # "/path?q" against "scheme://authority/": the parser's reading
                against, reference = parts.group(1) + "/", parts.group(2)
        if against is not None and _SIMPLE_REFERENCE(reference):
            _, scheme, authority, directory = _parse_base(against)
            if authority is not None and scheme in _DEFAULT_PORTS:
                # The parser would merge and remove dot segments exactly like this for a
                # reference of these characters (no "%2e" dot segments, no "\\", no
                # white space, no scheme); skipping it halves the cost of a new link.
                path, _, query = reference.partition("?")
                plain = path[0] == "/"  # of characters a path keeps as they are
                if not plain:
                    path = directory + path
                if "/." in path:
                    path = _remove_dot_segments(path)
                return self._finish(url, scheme, authority, path, query, plain)
        return self._parse(url, base)

    def _parse(self, url: str, base: str | None) -> str:
        """:meth:`_normalize` by the URL Standard's parser alone (ada), with our rules on top."""
        text = _clean_input(url)
        base_href = None
        base_is_http = False
        if base is not None:
            base_href, base_scheme, _, _ = _parse_base(base)
            base_is_http = base_scheme in _DEFAULT_PORTS
        try:
            encoded = text.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate: a browser's string conversion (USVString) makes it U+FFFD.
            encoded = _SURROGATE.sub("\ufffd", text).encode("utf-8")
        href = _ada_href(encoded, base_href)
        if href is None:
            raise UrlError(_failure_reason(text, base_is_http), url)
        if href.startswith("https://"):
            scheme, rest = "https", href[8:]
        elif href.startswith("http://"):
            scheme, rest = "http", href[7:]
        else:
            raise UrlError("scheme", url, href.partition(":")[0] + ": is not http(s)")
        # The serialization of a special URL always has an authority and a path from "/".
        slash = rest.find("/")
        tail = rest[slash:]
        if "#" in tail:
            tail = tail.partition("#")[0]
        path, _, query = tail.partition("?")
        return self._finish(url, scheme, rest[:slash], path, query)

    def _finish(
        self, url: str, scheme: str, authority: str, path: str, query: str, plain: bool = False
    ) -> str:
        """Harvestman's rules on the parts of a parsed URL (see the class docstring); ``plain``:
        the path is known to hold only characters it keeps as they are."""
        try:
            host = _normalize_authority(authority)
            if not plain and not _PATH_IS_CANONICAL(path):
                path = _normalize_escapes(path, _PATH_FIX)
                if "/." in path:
                    path = _remove_dot_segments(path)
            if self._slash_rule is not None:
                path = _apply_slash_rule(path, self._slash_rule)
            if query:
                query = self._query(query)
        except UrlError as exc:
            raise UrlError(exc.reason, url, exc.detail) from None
        result = f"{scheme}://{host}{path}?{query}" if query else f"{scheme}://{host}{path}"
        if len(result) > self._max_length:
            raise UrlError("too_long", url, f"{len(result)} > {self._max_length} characters")
        return result

    def _normalize_query(self, query: str) -> str:
        """A query with its escapes normalized and its parameters cleaned."""
        if not _QUERY_IS_CANONICAL(query):
            query = _normalize_escapes(query, _QUERY_FIX)
        return self._clean_query(query)

    def _clean_query(self, query: str) -> str:
        """Drop empty and tracking parameters; sort the rest by key, then value, stably."""
        exact = self._tracking_exact
        prefixes = self._tracking_prefixes
        kept: list[tuple[str, str, int, str]] = []
        for index, param in enumerate(query.split("&")):
            if not param:
                continue
            key, _, value = param.partition("=")
            lowered = key.lower()
            if lowered in exact or lowered.startswith(prefixes):
                continue
            kept.append((key, value, index, param))
        if len(kept) > 1:
            kept.sort()
        return "&".join([item[3] for item in kept])


TRAILING_SLASH_RULES: Final = ("keep", "add", "strip")


def _apply_slash_rule(path: str, rule: str) -> str:
    """``path`` with its trailing slash stripped or added (see :class:`UrlNormalizer`).

    >>> _apply_slash_rule("/a/b/", "strip"), _apply_slash_rule("/", "strip")
    ('/a/b', '/')
    >>> _apply_slash_rule("/a/b", "add"), _apply_slash_rule("/a/b.html", "add")
    ('/a/b/', '/a/b.html')
    """
    if rule == "strip":
        return path.rstrip("/") or "/"
    if path.endswith("/") or "." in path[path.rfind("/") :]:
        return path
    return path + "/"


_DEFAULT_NORMALIZER: Final = UrlNormalizer()


def normalize_url(url: str, base: str | None = None) -> str:
    """Normalize ``url`` with the default settings; see :class:`UrlNormalizer`."""
    return _DEFAULT_NORMALIZER.normalize(url, base)


def url_hash(normalized_url: str) -> str:
    """SHA-256 hex digest (64 characters) of the UTF-8 bytes of a normalized URL.

    >>> url_hash("http://example.com/")[:16]
    '2a1b402420ef4657'
    """
    return hashlib.sha256(normalized_url.encode("utf-8")).hexdigest()


_SCHEME_AUTHORITY: Final = re.compile(r"([^:/?#]+)://([^/?#]*)").match


def _authority_of(normalized_url: str) -> tuple[str, str]:
    """(scheme, authority without userinfo) of a normalized URL."""
    match = _SCHEME_AUTHORITY(normalized_url)
    if match is None:
        raise UrlError("no_host", normalized_url, "not a normalized URL")
    authority = match.group(2).rpartition("@")[2]
    if not authority:
        raise UrlError("no_host", normalized_url)
    return match.group(1), authority


def host_key(normalized_url: str) -> str:
    """The politeness key of a normalized URL: ``host``, or ``host:port`` for a non-default port.

    >>> host_key("https://user@xn--bcher-kva.de:8443/a?b")
    'xn--bcher-kva.de:8443'
    """
    return _authority_of(normalized_url)[1]


def robots_url(url: str) -> str:
    """``scheme://host[:port]/robots.txt`` for ``url`` (normalized first; userinfo dropped).

    >>> robots_url("HTTPS://Example.com:443/a/b?c#d")
    'https://example.com/robots.txt'
    """
    scheme, authority = _authority_of(_DEFAULT_NORMALIZER.normalize(url))
    return f"{scheme}://{authority}/robots.txt"


class Scope:
    """Decides which normalized URLs a crawl may follow.

    A URL is in scope when its host key (host, plus a non-default port) is a seed's host key, the
    ``www.`` and bare names of a seed counting as the same site, or when its host equals or is a
    subdomain of an ``allow_domains`` entry (an entry with a port matches that host key exactly).
    Then an ``exclude`` regex that matches (searched anywhere, with RE2: linear time, no
    backreferences or lookaround, see :mod:`harvestman.patterns`) puts it out, and when ``include``
    regexes are given one of them must match. Seed URLs themselves are always in scope.

    ``check`` returns ``None`` when in scope, else the reason: ``"out_of_scope"``,
    ``"excluded"`` or ``"not_included"`` (checked in that order). A bad seed, domain or regex
    raises ``ConfigError``.

    >>> scope = Scope(["https://www.example.com/"], exclude=[r"/private/"])
    >>> scope.check("http://example.com/a"), scope.check("https://example.com/private/x")
    (None, 'excluded')
    >>> scope.check("https://other.org/")
    'out_of_scope'
    """

    def __init__(
        self,
        seeds: Iterable[str],
        allow_domains: Iterable[str] = (),
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
    ) -> None:
        self._seed_urls: set[str] = set()
        self._hosts: set[str] = set()
        for seed in seeds:
            try:
                normalized = normalize_url(seed)
            except UrlError as exc:
                raise ConfigError(f"invalid seed URL {seed!r}: {exc.reason}") from exc
            self._seed_urls.add(normalized)
            key = host_key(normalized)
            self._hosts.add(key)
            self._hosts.add(key[4:] if key.startswith("www.") else "www." + key)
        self._domains: set[str] = set()
        suffixes: list[str] = []
        for domain in allow_domains:
            entry = self.domain_key(domain)
            if ":" in entry.rpartition("]")[2]:
                self._hosts.add(entry)
            else:
                self._domains.add(entry)
                suffixes.append("." + entry)
        self._domain_suffixes = tuple(suffixes)
        self._include = [self._compile(p, "include") for p in include]
        self._exclude = [self._compile(p, "exclude") for p in exclude]

    @staticmethod
    def domain_key(domain: str) -> str:
        """The host key an ``allow_domains`` entry stands for; ConfigError if it is none.

        >>> Scope.domain_key("*.Example.ORG"), Scope.domain_key("http://127.0.0.1:8080/x")
        ('example.org', '127.0.0.1:8080')
        """
        text = domain.strip().removeprefix("*.").lstrip(".")
        try:
            if "://" in text:
                return host_key(normalize_url(text))
            return host_key(normalize_url("http://" + text))
        except UrlError as exc:
            raise ConfigError(f"invalid allowed domain {domain!r}: {exc.reason}") from exc

    @staticmethod
    def _compile(pattern: str, option: str) -> UrlPattern:
        try:
            # Length is bounded where a pattern enters (settings, API); here only RE2's syntax.
            return compile_pattern(pattern, max_length=len(pattern))
        except PatternError as exc:
            raise PatternError(pattern, exc.reason, f"{option} pattern") from exc

    def check(self, url: str) -> str | None:
        """``None`` if the normalized ``url`` may be crawled, else the reason it may not."""
        if url in self._seed_urls:
            return None
        key = _authority_of(url)[1]
        if key not in self._hosts:
            host = key.rpartition(":")[0] if key.rfind(":") > key.rfind("]") else key
            if host not in self._domains and not host.endswith(self._domain_suffixes):
                return "out_of_scope"
        for pattern in self._exclude:
            if pattern.search(url):
                return "excluded"
        if self._include and not any(pattern.search(url) for pattern in self._include):
            return "not_included"
        return None
