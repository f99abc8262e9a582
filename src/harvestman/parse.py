"""HTML to :class:`Page`: title, description, canonical, links, feeds, visible text, hashes.

This runs for every fetched page, so it costs one Lexbor parse (selectolax's only backend since
1.0; Modest was removed), one CSS query for all the elements it reads, one C-level text walk
and one normalization per distinct href. Malformed input never raises: Lexbor builds a tree
from anything, as a browser does, and the Page holds whatever could be found.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import re
from dataclasses import dataclass
from typing import Final

from selectolax.lexbor import LexborHTMLParser, LexborNode

from harvestman.charset import decode_html
from harvestman.errors import UrlError
from harvestman.urls import UrlNormalizer

__all__ = ["Page", "parse_html"]


@dataclass(slots=True)
class Page:
    """What the crawler keeps of one HTML page.

    ``url`` is the normalized URL of the page (its links resolve against it unless a ``<base>``
    says otherwise). ``links`` are normalized absolute http(s) URLs in page order without
    duplicates; the page's own URL is among them only when the page links to itself with more
    than a fragment. ``content_hash`` is the SHA-256 hex digest of ``text`` in UTF-8, so two
    fetches of a page whose visible text did not change have the same hash whatever their
    markup. ``encoding`` is the WHATWG name of the encoding a bytes body was decoded with (see
    :func:`harvestman.charset.decode_html`).
    """

    url: str
    title: str | None
    description: str | None
    canonical: str | None
    links: list[str]
    feeds: list[str]
    text: str
    content_hash: str
    nofollow: bool
    noindex: bool
    lang: str | None
    encoding: str | None = None  # what bytes were decoded with; None for a str body


_UTF8_BOM: Final = codecs.BOM_UTF8
_DEFAULT_NORMALIZER: Final = UrlNormalizer()
# One query, answered in document order, for every element the parser reads.
_ELEMENTS: Final = "a[href], area[href], link[href], base[href], meta[name], title"
_LINK_RELS: Final = frozenset({"canonical", "alternate", "next", "prev"})
# rel="alternate stylesheet" and rel="alternate icon" name a style sheet or an image.
_NOT_PAGE_RELS: Final = frozenset({"stylesheet", "icon"})
_FEED_TYPES: Final = frozenset({"application/rss+xml", "application/atom+xml"})
_ROBOTS_META_NAMES: Final = frozenset({"robots", "harvestman"})
# Elements a browser does not render as text (the user agent style sheet hides them, or their
# content is raw text that is never shown). Neither <head> nor <template> needs removing: the
# text is <body>'s, a head element that the parser had to put in <body> is in this list, and a
# template's content lives outside the tree.
_HIDDEN: Final = ["title", "script", "style", "noscript", "noembed", "noframes", "iframe"]
_DIRECTIVE_SEPARATOR: Final = re.compile(r"[\s,]+")
# re finds a two-space run faster than str's "in" does in text full of single spaces.
_DOUBLE_SPACE: Final = re.compile("  ").search
# The characters str.split() splits on, besides the ASCII space and the line feed.
_ASCII_SPACES: Final = "\t\r\x0b\x0c\x1c\x1d\x1e\x1f"
_UNICODE_SPACES: Final = (
    "\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def parse_html(
    body: bytes | str,
    url: str,
    *,
    charset: str | None = None,
    normalizer: UrlNormalizer | None = None,
    max_links: int | None = None,
) -> Page:
    """Parse an HTML page fetched from ``url`` into a :class:`Page`.

    ``body`` as bytes is decoded with :func:`harvestman.charset.decode_html`, ``charset`` being
    the label of the HTTP ``Content-Type`` header. Links come from ``<a href>``, ``<area href>``
    and ``<link rel=canonical|alternate|next|prev href>`` (rel tokens matched case-insensitively;
    ``alternate stylesheet`` and ``alternate icon`` are not pages), resolved against the first
    ``<base href>`` (itself resolved against ``url``) or else ``url``, and normalized with
    ``normalizer`` (default: one with the default settings). A link that does not
    normalize (``mailto:``, ``javascript:``, any other scheme, a bad host, too long) is dropped
    silently, as is an empty or fragment-only href that points back at the page itself.
    ``max_links`` stops link collection after that many distinct links (``None``: no limit).

    Never raises on the content of ``body``. Raises :class:`~harvestman.errors.UrlError` when
    ``url`` itself cannot be normalized.

    >>> page = parse_html(b'<title> Hi </title><a href="/b#x">b</a>', "http://example.com/a")
    >>> page.title, page.links, page.text
    ('Hi', ['http://example.com/b'], 'b')
    """
    if normalizer is None:
        normalizer = _DEFAULT_NORMALIZER
    normalize = normalizer.normalize
    page_url = normalize(url)
    encoding: str | None = None
    source: str | bytes = body
    if not isinstance(body, str):
        raw = bytes(body)
        text, encoding = decode_html(raw, charset)
        # Lexbor reads UTF-8 bytes as they are; handing it the text would encode it back.
        lossless = encoding == "utf-8" and "\ufffd" not in text and not raw.startswith(_UTF8_BOM)
        source = raw if lossless else text
    tree = LexborHTMLParser(source)

    title: str | None = None
    description: str | None = None
    base_href: str | None = None
    nofollow = noindex = False
    hrefs: list[str] = []
    canonical_hrefs: list[str] = []
    feed_hrefs: list[str] = []
    for node in tree.css(_ELEMENTS):
        tag = node.tag
        attributes = node.attributes
        if tag == "a" or tag == "area":
            href = attributes.get("href")
            if href is not None:
                hrefs.append(href)
        elif tag == "link":
            href = attributes.get("href")
            rel = attributes.get("rel")
            if href is None or not rel:
                continue
            rels = set(rel.lower().split())
            if "canonical" in rels:
                canonical_hrefs.append(href)
            if "alternate" in rels and _media_type(attributes.get("type")) in _FEED_TYPES:
                feed_hrefs.append(href)
            if rels & _LINK_RELS and not rels & _NOT_PAGE_RELS:
                hrefs.append(href)
        elif tag == "meta":
            name = (attributes.get("name") or "").strip().lower()
            content = attributes.get("content")
            if not content:
                continue
            if name == "description":
                if description is None:
                    description = _collapse(content) or None
            elif name in _ROBOTS_META_NAMES:
                directives = set(_DIRECTIVE_SEPARATOR.split(content.lower()))
                if "none" in directives:
                    nofollow = noindex = True
                nofollow = nofollow or "nofollow" in directives
                noindex = noindex or "noindex" in directives
        elif tag == "title":
            if title is None and not _is_in_svg(node):
                title = _collapse(node.text()) or None
        elif base_href is None:  # base
            base_href = attributes.get("href")

    base = page_url
    if base_href is not None:
        with contextlib.suppress(UrlError):  # a broken <base> is ignored, as browsers do
            base = normalize(base_href, page_url)
    drop_in_page = base == page_url
    links = _resolve(hrefs, normalizer, base, drop_in_page, max_links)
    canonical = next(iter(_resolve(canonical_hrefs, normalizer, base, drop_in_page, 1)), None)
    feeds = _resolve(feed_hrefs, normalizer, base, drop_in_page, None)

    root = tree.root
    lang = None
    if root is not None:
        lang = (root.attributes.get("lang") or "").strip() or None

    tree.strip_tags(_HIDDEN)
    text_root = tree.body
    text = (
        ""
        if text_root is None
        else _visible_text(text_root.text(separator=" ", strip=True, skip_empty=True))
    )

    return Page(
        url=page_url,
        title=title,
        description=description,
        canonical=canonical,
        links=links,
        feeds=feeds,
        text=text,
        content_hash=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        nofollow=nofollow,
        noindex=noindex,
        lang=lang,
        encoding=encoding,
    )


def _resolve(
    hrefs: list[str],
    normalizer: UrlNormalizer,
    base: str,
    drop_in_page: bool,
    limit: int | None,
) -> list[str]:
    """The normalized URLs of ``hrefs``, without failures or duplicates, in order, up to ``limit``.

    With ``drop_in_page`` (the base is the page itself), an empty or fragment-only href is an
    in-page reference, not a link. (Plain loops: this runs for every href of every page.)
    """
    if drop_in_page:
        hrefs = [
            href
            for href in hrefs
            if (href and href[0] != "#" and not href[0].isspace())
            or not _is_in_page_reference(href)
        ]
    seen: dict[str, None] = {}
    for url in normalizer.normalize_each(hrefs, base):
        if url is not None:
            seen[url] = None
            if limit is not None and len(seen) >= limit:
                break
    return list(seen)


def _is_in_page_reference(href: str) -> bool:
    """``""`` or ``"#section"``: a reference to (a part of) the current document."""
    stripped = href.strip()
    return not stripped or stripped[0] == "#"


def _is_in_svg(node: LexborNode) -> bool:
    """Whether ``node`` sits in an ``<svg>`` (whose ``<title>`` is a tooltip, not the page's)."""
    parent = node.parent
    while parent is not None and parent.tag != "head":
        if parent.tag == "svg":
            return True
        parent = parent.parent
    return False


def _media_type(content_type: str | None) -> str:
    """``"application/rss+xml"`` from ``"Application/RSS+XML; charset=utf-8"``."""
    if not content_type:
        return ""
    return content_type.partition(";")[0].strip().lower()


def _collapse(text: str) -> str:
    """Runs of white space become one space; no leading or trailing space."""
    return " ".join(text.split())


def _visible_text(joined: str) -> str:
    """``" ".join(joined.split())``, computed without splitting the text into words.

    ``joined`` is the text nodes, each stripped, joined by spaces; what white space is left sits
    inside text nodes, mostly as line breaks and indentation of the HTML source. Turning every
    other white space character into a line break and splitting on those touches a few hundred
    lines instead of thousands of words (30 µs instead of 80 for a 14,000-character text).
    """
    text = joined
    for char in _ASCII_SPACES:
        if char in text:
            text = text.replace(char, "\n")
    if not text.isascii():
        for char in _UNICODE_SPACES:
            if char in text:
                text = text.replace(char, "\n")
    text = (
        " ".join(filter(None, map(str.strip, text.split("\n")))) if "\n" in text else text.strip()
    )
    if _DOUBLE_SPACE(text):  # spaces in a row inside one line of the source: rare
        return " ".join(text.split())
    return text
