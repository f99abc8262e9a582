"""Sitemaps: XML urlsets and indexes, plain-text lists, RSS and Atom feeds used as sitemaps.

:func:`parse_sitemap` turns the bytes of one sitemap into page URLs (with their ``lastmod``) and
child sitemap URLs, each as the document wrote it: white space trimmed, entities and CDATA
decoded, a feed's relative link resolved (against the ``xml:base`` in scope), nothing normalized
(no case folding, no reordered query, no dropped parameter). Normalizing, and dropping what
cannot be crawled, is the frontier's job (:mod:`harvestman.discovery.listings`). It streams: a
gzip body (detected by its magic bytes) is inflated in chunks of 64 KiB and each chunk goes
straight to a pull parser, so memory stays bounded whatever the body holds, and nothing past
``max_bytes`` of decompressed data is ever produced. :class:`SitemapReader` hands the entries
over as they are parsed, in batches of a bounded size, so a caller never holds more than a
batch of a sitemap's 50,000 URLs; :func:`parse_sitemap` collects them all (for feeds and small
documents).

XML is parsed with expat, never resolving entities: a document declaring an entity (the "billion
laughs" bomb, ``<!ENTITY x SYSTEM "file:///etc/passwd">``) is refused at the declaration, and no
external DTD is read. A DOCTYPE without entity declarations is allowed (RSS 0.91 feeds carry one).

Bad input never raises: what was parsed before a problem is kept and the problem is recorded in
``Sitemap.errors``, so a crawl goes on with a clear reason for what it skipped.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from typing import Final, NoReturn
from urllib.parse import urljoin
from xml.parsers import expat

__all__ = [
    "MAX_SITEMAP_BYTES",
    "MAX_SITEMAP_URLS",
    "Sitemap",
    "SitemapReader",
    "SitemapUrl",
    "parse_sitemap",
]

MAX_SITEMAP_URLS: Final = 50_000
MAX_SITEMAP_BYTES: Final = 50 * 1024 * 1024

_CHUNK: Final = 64 * 1024
# A loc, a lastmod or a text line longer than this is not a URL; keeping more wastes memory.
_MAX_VALUE: Final = 16 * 1024
# Expat 2.5 re-scans an unfinished token on every feed, so a huge comment or attribute costs
# time quadratic in its length; no sitemap has a token this long.
_MAX_TOKEN: Final = 1024 * 1024
_MAX_DEPTH: Final = 64
# Errors about single entries are listed up to this many, then only counted.
_MAX_LISTED: Final = 100
_GZIP_MAGIC: Final = b"\x1f\x8b"
_BOM_UTF8: Final = b"\xef\xbb\xbf"
_WHITESPACE: Final = b" \t\r\n"


@dataclass(slots=True, frozen=True)
class SitemapUrl:
    """A page URL from a sitemap as written (see the module docstring), with its last
    modification time if one was given."""

    loc: str
    lastmod: datetime | None


@dataclass(slots=True)
class Sitemap:
    """What one sitemap document yielded.

    ``kind`` is ``"urlset"``, ``"index"``, ``"text"``, ``"rss"``, ``"atom"``, or ``"invalid"``
    when the document is none of them; ``urls`` holds the pages (everything but an index),
    ``sitemaps`` the child sitemaps of an index, ``errors`` a reason for everything skipped.
    """

    urls: list[SitemapUrl]
    sitemaps: list[str]
    errors: list[str]
    kind: str


class _Stop(Exception):
    """Ends parsing early; ``reason`` (if any) is recorded."""

    def __init__(self, reason: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True, frozen=True)
class _Format:
    kind: str
    entry: str  # the element holding one entry
    locs: tuple[str, ...]  # child elements giving the URL, in order of preference
    dates: tuple[str, ...]  # child elements giving the date, in order of preference
    # Whether relative URLs resolve against the document's URL: feeds' links may be relative
    # (Atom, RFC 4287 §4.2.7.1), a sitemap's <loc> must be absolute (sitemaps.org: "must begin
    # with the protocol"), so a relative one is kept as written and refused by the frontier.
    relative: bool


# Dates by preference; dcterms:modified, dcterms:issued and dcterms:created (RSS 1.0 and 2.0
# extensions) are "modified", "issued" and "created" once namespaces are ignored.
_RSS: Final = _Format(
    "rss",
    "item",
    ("link", "guid"),
    ("pubdate", "date", "updated", "modified", "issued", "created"),
    True,
)
_FORMATS: Final = {
    "urlset": _Format("urlset", "url", ("loc",), ("lastmod",), False),
    "sitemapindex": _Format("index", "sitemap", ("loc",), ("lastmod",), False),
    "rss": _RSS,
    "rdf": _RSS,  # RSS 1.0: <rdf:RDF> with <item> elements
    # Atom 1.0 (updated, published) and Atom 0.3 (modified, issued, created; RFC 4287
    # replaced them).
    "feed": _Format(
        "atom", "entry", ("link",), ("updated", "modified", "published", "issued", "created"), True
    ),
}

_W3C_DATETIME: Final = re.compile(
    r"(\d{4})(?:-(\d\d)(?:-(\d\d)(?:[Tt ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d+))?)?"
    r" ?([Zz]|[+-]\d\d(?::?\d\d)?)?)?)?)?"
).fullmatch


# US and European zone names feeds write in RFC 822 dates beyond the RFC's own (feedparser
# reads the same ones), as hours east of UTC; other names are read as UTC.
_ZONES: Final = {
    **{"at": -4, "et": -5, "ct": -6, "mt": -7, "pt": -8, "met": 1, "mest": 2, "cet": 1},
    **{"cest": 2, "bst": 1, "ist": 1, "eet": 2, "eest": 3, "wet": 0, "west": 1},
}
_RFC822_ZONE: Final = re.compile(r"\s(?:(?:GMT|UTC|UT)(?=[+-]))?([+-]\S*|[A-Za-z/]+)$")
_NUMERIC_ZONE: Final = re.compile(r"([+-])(\d\d):?(\d\d)").fullmatch


def _parse_datetime(text: str) -> datetime | None:
    """A timezone-aware UTC datetime from W3C/RFC 3339 or RFC 822 text, or ``None``.

    A date without a time is midnight UTC; a time without a zone is read as UTC. What the
    date's own format refuses is refused: an hour over 23, a minute over 59, a second over 60
    (60, a leap second, is the second before it), an offset that is not ``±hh:mm`` or
    ``±hhmm`` within a day (``+zz:00``). Zone names RFC 822 does not know are lenient: the
    common US and European ones are read (``ET``, ``MET``), others as UTC.

    >>> _parse_datetime("2024-05-06")
    datetime.datetime(2024, 5, 6, 0, 0, tzinfo=datetime.timezone.utc)
    >>> _parse_datetime("Mon, 06 May 2024 10:00:00 +0200").hour
    8
    >>> _parse_datetime("2003-12-31T10:14:61Z"), _parse_datetime("Sun, 16 Dec 2012 11:47:32 +zz:00")
    (None, None)
    """
    text = text.strip()
    try:
        match = _W3C_DATETIME(text)
        if match is not None:
            year, month, day, hour, minute, second, fraction, zone = match.groups()
            tz = UTC
            if zone and zone not in "Zz":
                digits = zone[1:].replace(":", "")
                hours, minutes = int(digits[:2]), int(digits[2:] or 0)
                if hours > 23 or minutes > 59:
                    return None
                offset = timedelta(hours=hours, minutes=minutes)
                tz = timezone(-offset if zone[0] == "-" else offset)
            seconds = int(second or 0)
            if seconds > 60:
                return None
            value = datetime(
                int(year),
                int(month or 1),
                int(day or 1),
                int(hour or 0),
                int(minute or 0),
                min(seconds, 59),  # a leap second is the second before it
                int((fraction or "0")[:6].ljust(6, "0")),
                tzinfo=tz,
            )
        else:
            parsed = _parse_rfc822(text)
            if parsed is None:
                return None
            value = parsed
        return value.astimezone(UTC)
    except (ValueError, TypeError, IndexError, OverflowError):
        return None


def _parse_rfc822(text: str) -> datetime | None:
    """An RFC 822 (RFC 5322) date as feeds write it, zone names and all; see above."""
    text = " ".join(text.replace(",", " ").split())  # "Mon, 13 Feb, 2012": a comma too many
    offset: timedelta | None = None
    zone = _RFC822_ZONE.search(text)
    if zone is not None:
        name = zone.group(1)
        if name[0] in "+-":
            numeric = _NUMERIC_ZONE(name)
            if numeric is None or int(numeric.group(2)) > 23 or int(numeric.group(3)) > 59:
                return None
            sign = -1 if numeric.group(1) == "-" else 1
            offset = sign * timedelta(hours=int(numeric.group(2)), minutes=int(numeric.group(3)))
            text = text[: zone.start()]
        elif name.lower() in _ZONES:
            offset = timedelta(hours=_ZONES[name.lower()])
            text = text[: zone.start()]
    if ":" not in text:  # a date without a time: midnight
        text += " 00:00:00"
    value = parsedate_to_datetime(text)
    if offset is not None:
        value = value.replace(tzinfo=timezone(offset))
    elif value.tzinfo is None:  # RFC 822's "-0000", or a zone it does not know: UTC
        value = value.replace(tzinfo=UTC)
    return value


_HAS_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:").match


def _resolve(reference: str, base: str) -> str:
    """``reference`` resolved against ``base`` (RFC 3986 §5.2), or as written if that fails.

    >>> _resolve("posts/2?b=1&a=2", "https://example.com/blog/atom.xml")
    'https://example.com/blog/posts/2?b=1&a=2'
    """
    try:
        return urljoin(base, reference)
    except ValueError:  # e.g. an unclosed "[" in the base's host: the frontier will say why
        return reference


class _Collector:
    """Turns entries into results, enforcing the URL limit and bounding the error list."""

    def __init__(self, result: Sitemap, url: str, max_urls: int) -> None:
        self.result = result
        self.url = url
        self._url = url
        self._max_urls = max_urls
        self._unlisted = 0
        self.count = 0  # entries kept so far (handed over in batches or not)

    def skip(self, reason: str) -> None:
        if len(self.result.errors) < _MAX_LISTED:
            self.result.errors.append(reason)
        else:
            self._unlisted += 1

    def add(
        self,
        loc: str,
        date: str | None = None,
        *,
        relative: bool = False,
        index: bool = False,
        base: str | None = None,
    ) -> None:
        """Keep one entry (``loc`` trimmed, not empty); raise ``_Stop`` past the URL limit.

        ``relative`` resolves ``loc`` when it is relative, against ``base`` (the ``xml:base``
        in scope) or else the document's URL.
        """
        if self.count >= self._max_urls:
            raise _Stop(f"truncated at {self._max_urls} URLs")
        self.count += 1
        if relative and not _HAS_SCHEME(loc):
            loc = _resolve(loc, base or self._url)
        if index:
            self.result.sitemaps.append(loc)
            return
        lastmod = None
        if date:
            lastmod = _parse_datetime(date)
            if lastmod is None:
                self.skip(f"bad lastmod {date[:100]!r} of {loc[:200]}")
        self.result.urls.append(SitemapUrl(loc, lastmod))

    def finish(self) -> None:
        if self._unlisted:
            self.result.errors.append(f"{self._unlisted} more skipped entries not listed")


class _XmlSink:
    """Feeds XML to expat; collects the loc and date children of each entry element.

    Namespaces are ignored on purpose (element names are compared by lower-cased local name),
    so sitemaps with the 0.9 namespace, another one, a prefix, or none all read the same; only
    the direct children of an entry count, so ``<image:loc>`` inside ``<url>`` is not a page.

    A feed's relative links resolve against the ``xml:base`` in scope (XML Base, RFC 4287
    §2): of the link element itself, its entry, the feed, nested relative bases resolved in
    turn, the document's URL last. An Atom ``<link>`` with a ``rel`` other than
    ``alternate`` (``enclosure``, ``related``, ``self``) is not the entry's page, whether its
    URL is in ``href`` or in its text.
    """

    def __init__(self, out: _Collector) -> None:
        self._out = out
        self._format: _Format | None = None
        self._depth = 0
        self._entry_depth = 0
        self._fields: dict[str, str] = {}
        self._field: str | None = None
        self._parts: list[str] = []
        self._size = 0
        self._fed = 0
        self._locals: dict[str, str] = {}  # element name -> lower-cased local name
        self._bases: list[tuple[int, str]] = []  # (depth, xml:base in scope from there)
        self._field_bases: dict[str, str] = {}
        parser = expat.ParserCreate()
        parser.buffer_text = True
        parser.buffer_size = _CHUNK
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.EntityDeclHandler = self._refuse_entity
        parser.UnparsedEntityDeclHandler = self._refuse_entity
        parser.ExternalEntityRefHandler = self._refuse_entity
        self._parser = parser

    def feed(self, data: bytes, final: bool) -> bool:
        """Parse ``data``; ``False`` once parsing has ended (an error, a limit, the root's end)."""
        try:
            self._parser.Parse(data, final)
        except _Stop as stop:
            if stop.reason:
                self._out.result.errors.append(stop.reason)
            return False
        except expat.ExpatError as exc:
            self._out.result.errors.append(f"malformed XML: {exc}")
            return False
        except (ValueError, LookupError) as exc:  # an encoding expat cannot use
            self._out.result.errors.append(f"unsupported XML encoding: {exc}")
            return False
        self._fed += len(data)
        if self._fed - self._parser.CurrentByteIndex > _MAX_TOKEN:
            self._out.result.errors.append(f"XML token longer than {_MAX_TOKEN} bytes")
            return False
        return True

    def _refuse_entity(self, *args: object) -> NoReturn:
        raise _Stop("XML entity declaration refused")

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        self._depth += 1
        depth = self._depth
        if depth > _MAX_DEPTH:
            raise _Stop(f"XML nested deeper than {_MAX_DEPTH} elements")
        base = attrs.get("xml:base") if attrs else None
        if base is not None:
            scope = self._bases[-1][1] if self._bases else self._out.url
            self._bases.append((depth, _resolve(base.strip(), scope)))
        entry_depth = self._entry_depth
        if entry_depth and depth != entry_depth + 1:
            return  # extensions (<image:image>, <news:news>) are neither entries nor fields
        local = self._locals.get(name)
        if local is None:
            local = self._locals[name] = name.rpartition(":")[2].lower()
        fmt = self._format
        if fmt is None:
            fmt = self._format = _FORMATS.get(local)
            if fmt is None:
                raise _Stop(f"not a sitemap: root element <{name[:100]}>")
            self._out.result.kind = fmt.kind
        elif not entry_depth:
            if local == fmt.entry:
                self._entry_depth = depth
                self._fields = {}
                self._field_bases = {}
        elif local not in self._fields and (local in fmt.locs or local in fmt.dates):
            if attrs.get("rel", "alternate").strip().lower() != "alternate":
                return  # Atom's <link rel="enclosure|related|self|...">: not the page
            if self._bases:
                self._field_bases[local] = self._bases[-1][1]
            href = attrs.get("href")
            if href is not None:  # Atom's <link href rel>
                self._fields[local] = href.strip()
            elif attrs.get("isPermaLink", "true").strip().lower() != "false":  # RSS's <guid>
                self._field = local
                self._parts = []
                self._size = 0
                # Text is only wanted inside a field; unset, expat skips the call elsewhere.
                self._parser.CharacterDataHandler = self._text

    def _text(self, data: str) -> None:
        if self._size < _MAX_VALUE:
            self._parts.append(data)
            self._size += len(data)

    def _end(self, name: str) -> None:
        depth = self._depth
        self._depth -= 1
        if self._bases and self._bases[-1][0] == depth:
            self._bases.pop()
        if depth == 1:
            raise _Stop()  # the document is complete; anything after the root is ignored
        if depth == self._entry_depth + 1:
            field = self._field
            if field is not None:
                self._parser.CharacterDataHandler = None
                self._field = None
                self._fields[field] = "".join(self._parts).strip()
        elif depth == self._entry_depth:
            self._entry_depth = 0
            self._emit()

    def _emit(self) -> None:
        fmt = self._format
        assert fmt is not None
        fields = self._fields
        loc = next((fields[name] for name in fmt.locs if fields.get(name)), None)
        if loc is None:
            self._out.skip(f"<{fmt.entry}> without <{fmt.locs[0]}>")
            return
        loc_field = next(name for name in fmt.locs if fields.get(name))
        date = next((fields[name] for name in fmt.dates if fields.get(name)), None)
        self._out.add(
            loc,
            date,
            relative=fmt.relative,
            index=fmt.kind == "index",
            base=self._field_bases.get(loc_field),
        )


class _TextSink:
    """A plain-text sitemap: one absolute URL per UTF-8 line; blank lines are ignored."""

    def __init__(self, out: _Collector) -> None:
        self._out = out
        out.result.kind = "text"
        self._rest = b""
        self._overlong = False
        self._line_number = 0

    def feed(self, data: bytes, final: bool) -> bool:
        """Parse the complete lines in ``data``; ``False`` once the URL limit stopped parsing."""
        try:
            start = 0
            while (end := data.find(b"\n", start)) >= 0:
                self._line(data[start:end])
                start = end + 1
            tail = data[start:]
            if self._overlong or len(self._rest) + len(tail) > _MAX_VALUE:
                self._overlong, self._rest = True, b""
            else:
                self._rest += tail
            if final and (self._rest or self._overlong):
                self._line(b"")
        except _Stop as stop:
            if stop.reason:
                self._out.result.errors.append(stop.reason)
            return False
        return True

    def _line(self, piece: bytes) -> None:
        raw = self._rest + piece if self._rest else piece
        self._rest = b""
        self._line_number += 1
        if self._overlong or len(raw) > _MAX_VALUE:
            self._overlong = False
            self._out.skip(f"bad line {self._line_number}: longer than {_MAX_VALUE} bytes")
            return
        raw = raw.strip()
        if not raw:
            return
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._out.skip(f"bad line {self._line_number}: not UTF-8")
            return
        self._out.add(text)


class _Body:
    """The body as chunks of at most 64 KiB, inflated if gzip, cut after ``max_bytes``.

    ``complete`` turns false when the body was cut or its gzip stream is corrupt or truncated,
    in which case the reason is in ``errors``.
    """

    def __init__(self, body: bytes, max_bytes: int, errors: list[str]) -> None:
        self._body = body
        self._max_bytes = max(max_bytes, 0)
        self._errors = errors
        self.complete = True

    def __iter__(self) -> Iterator[bytes]:
        if self._body[:2] == _GZIP_MAGIC:
            return self._inflated()
        return self._plain()

    def _cut(self, reason: str) -> None:
        self._errors.append(reason)
        self.complete = False

    def _plain(self) -> Iterator[bytes]:
        body, limit = self._body, self._max_bytes
        for start in range(0, min(len(body), limit), _CHUNK):
            yield body[start : min(start + _CHUNK, limit)]
        if len(body) > limit:
            self._cut(f"truncated at {limit} bytes")

    def _inflated(self) -> Iterator[bytes]:
        body, limit = self._body, self._max_bytes
        produced = 0
        offset = 0
        inflater = zlib.decompressobj(wbits=31)
        pending = b""
        full = False  # a full chunk out may leave output inside zlib with no input left over
        try:
            while True:
                if not pending and not full:
                    if offset >= len(body):
                        break
                    pending = body[offset : offset + _CHUNK]
                    offset += len(pending)
                out = inflater.decompress(pending, _CHUNK)
                pending = inflater.unconsumed_tail
                full = len(out) == _CHUNK
                if produced + len(out) > limit:
                    yield out[: limit - produced]
                    self._cut(f"truncated at {limit} bytes")
                    return
                produced += len(out)
                if out:
                    yield out
                if inflater.eof:
                    offset -= len(inflater.unused_data)
                    if body[offset : offset + 2] != _GZIP_MAGIC:
                        break  # what follows the last member (padding, junk) is ignored
                    inflater = zlib.decompressobj(wbits=31)
                    pending, full = b"", False
        except zlib.error as exc:
            self._cut(f"corrupt gzip: {exc}")
            return
        if not inflater.eof:
            self._cut("truncated gzip stream")


class SitemapReader:
    """One sitemap document fetched from ``url``, read a 64 KiB chunk at a time.

    Iterating :meth:`batches` yields ``(urls, sitemaps)`` pairs of at most ``size`` entries
    together, as they are parsed; once it is exhausted, ``kind`` and ``errors`` say what the
    document was and what was skipped (see :func:`parse_sitemap` for the rules). Never raises,
    whatever ``body`` holds. Memory: the body (which the caller holds anyway), the parser's
    state, and one chunk's entries.

    >>> reader = SitemapReader(
    ...     b"<urlset><url><loc>https://a.test/1</loc></url><url><loc>https://a.test/2</loc>"
    ...     b"</url><url><loc>https://a.test/3</loc></url></urlset>",
    ...     "https://a.test/sitemap.xml",
    ... )
    >>> [[u.loc for u in urls] for urls, _ in reader.batches(2)], reader.kind
    ([['https://a.test/1', 'https://a.test/2'], ['https://a.test/3']], 'urlset')
    """

    def __init__(
        self,
        body: bytes,
        url: str,
        *,
        max_urls: int = MAX_SITEMAP_URLS,
        max_bytes: int = MAX_SITEMAP_BYTES,
    ) -> None:
        self._result = Sitemap(urls=[], sitemaps=[], errors=[], kind="invalid")
        self._out = _Collector(self._result, url, max_urls)
        self._chunks = _Body(body, max_bytes, self._result.errors)

    @property
    def kind(self) -> str:
        return self._result.kind

    @property
    def errors(self) -> list[str]:
        return self._result.errors

    @property
    def count(self) -> int:
        """Entries (pages and child sitemaps) read so far."""
        return self._out.count

    def batches(self, size: int) -> Iterator[tuple[list[SitemapUrl], list[str]]]:
        """The entries as they are parsed, at most ``size`` (>= 1) in each pair."""
        for _ in self._parse():
            yield from self._take(size, final=False)
        yield from self._take(size, final=True)

    def _take(self, size: int, *, final: bool) -> Iterator[tuple[list[SitemapUrl], list[str]]]:
        result = self._result
        while len(result.urls) + len(result.sitemaps) >= (1 if final else size):
            urls, sitemaps = (
                result.urls[:size],
                result.sitemaps[: size - min(size, len(result.urls))],
            )
            del result.urls[: len(urls)]
            del result.sitemaps[: len(sitemaps)]
            yield urls, sitemaps

    def _parse(self) -> Iterator[None]:
        """Feed the chunks to the parser, pausing after each one."""
        result, chunks = self._result, self._chunks
        feed: Callable[[bytes, bool], bool] | None = None
        head = b""
        for chunk in chunks:
            if feed is None:
                # Find the first significant byte: a BOM or white space before an XML
                # declaration would make expat reject it.
                head += chunk
                if len(head) < len(_BOM_UTF8) and head == _BOM_UTF8[: len(head)]:
                    continue
                head = head.removeprefix(_BOM_UTF8).lstrip(_WHITESPACE)
                if not head:
                    continue
                is_xml = head[:1] == b"<" or head[:2] in (b"\xff\xfe", b"\xfe\xff")
                feed = (_XmlSink(self._out) if is_xml else _TextSink(self._out)).feed
                chunk, head = head, b""
            if not feed(chunk, False):
                break
            yield
        else:
            if feed is None:
                if chunks.complete:
                    result.errors.append("empty body")
            elif chunks.complete:
                feed(b"", True)
        self._out.finish()


def parse_sitemap(
    body: bytes,
    url: str,
    *,
    max_urls: int = MAX_SITEMAP_URLS,
    max_bytes: int = MAX_SITEMAP_BYTES,
) -> Sitemap:
    """Parse one sitemap document fetched from ``url``; never raises, whatever ``body`` holds.

    The format is detected by content: gzip by its magic bytes, XML by a leading ``<`` (after an
    optional BOM and white space), plain text otherwise; the XML root element tells a urlset,
    a sitemap index, RSS (2.0 or 1.0) or Atom (1.0 or 0.3) apart. Every URL is returned as
    written (feed links resolved against ``url``); the caller normalizes them. At most
    ``max_urls`` entries are kept and at most ``max_bytes`` of (decompressed) body are read;
    past either limit parsing stops and the reason is recorded. All entries are held at once:
    a large sitemap is read with :class:`SitemapReader`, a batch at a time.

    >>> sitemap = parse_sitemap(
    ...     b"<urlset><url><loc> HTTP://Example.com/a?b=1&amp;a=2 </loc>"
    ...     b"<lastmod>2024-05-06</lastmod></url></urlset>",
    ...     "https://example.com/sitemap.xml",
    ... )
    >>> sitemap.kind, [(u.loc, u.lastmod.isoformat()) for u in sitemap.urls]
    ('urlset', [('HTTP://Example.com/a?b=1&a=2', '2024-05-06T00:00:00+00:00')])
    """
    reader = SitemapReader(body, url, max_urls=max_urls, max_bytes=max_bytes)
    result = Sitemap(urls=[], sitemaps=[], errors=reader.errors, kind="invalid")
    for urls, sitemaps in reader.batches(max(1, max_urls)):
        result.urls += urls
        result.sitemaps += sitemaps
    result.kind = reader.kind
    return result
