"""The main text of a page (the article, without navigation and boilerplate), with trafilatura.

trafilatura parses the page with lxml, prunes what its rules and link-density tests call
boilerplate (navigation, sidebars, share boxes, newsletter sign-ups, comments, footers) and
reads the title, author and publication date from the page's metadata. It costs milliseconds
of CPU per page (``bench/bench_maintext.py``: ~2-4 ms for a 4-8 KB article, ~7 ms for 18 KB,
~13 ms for a 140 KB news page), five to twenty-five times what
:func:`harvestman.parse.parse_html` costs on the same page, so sources opt in to it.

Measured against the alternatives on the fixtures of ``tests/fixtures/maintext``: resiliparse
is ~10x faster but keeps the comments, the byline and the "subscribe" links and reads no
metadata; readability-lxml costs as much (twice as much on the heavy page), keeps a newsletter
box and reads no metadata either. trafilatura was the only one to return the article alone.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from trafilatura import bare_extraction
from trafilatura.settings import Document, Extractor

from harvestman.charset import decode_html

__all__ = ["MainText", "MainTextExtractor", "extract_main_text"]

Focus = Literal["precision", "balanced", "recall"]

# Where a page declares its language: <html lang>, then <meta http-equiv=content-language>,
# then og:locale (attributes in either order). Only the primary subtag is kept.
_HTML_LANG: Final = re.compile(
    r"<html\b[^>]*?\slang\s*=\s*[\"']?\s*([a-z]{2,3})(?![a-z])", re.IGNORECASE
)
_META_LANG: Final = re.compile(
    r"<meta\b(?=[^>]*?(?:http-equiv\s*=\s*[\"']?content-language|property\s*=\s*[\"']?og:locale))"
    r"[^>]*?\scontent\s*=\s*[\"']?\s*([a-z]{2,3})(?![a-z])",
    re.IGNORECASE,
)
# A language declaration sits in the head; no need to scan a long body for it.
_HEAD_CHARS: Final = 65_536
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
# Authors read from a byline or a review often keep the dash or bar that introduced them.
_AUTHOR_STRIP: Final = " \t\n-–—|·,:;"


@dataclass(frozen=True, slots=True)
class MainText:
    """What :func:`extract_main_text` found on one page.

    ``text`` is the main content as plain text, one block (paragraph, heading, list item, table
    row) per line, list items as ``- item`` and table rows as ``| cell | cell |``; ``""`` when
    the page holds nothing article-like (a login form, a link index) or could not be read.
    ``title``, ``author`` (several joined by ``"; "``) and ``date`` (the publication date,
    never after the day of extraction) come from the page's metadata (JSON-LD, ``<meta>``,
    bylines, ``<time>``) and are ``None`` when not found. ``language`` is the lower-case primary
    language subtag the page declares (``"en"`` from ``<html lang="en-GB">``, else
    ``<meta http-equiv="content-language">``, else ``og:locale``), not a guess from the text.
    ``comments`` holds the readers' comments, one block per line, when the extractor was asked
    for them (``include_comments``), else ``""``. ``error`` is ``None`` unless the extractor
    itself failed on the input: then the text is ``""`` and ``error`` says why
    (``"too_large: 9000000 characters"``).
    """

    text: str
    title: str | None = None
    author: str | None = None
    date: dt.date | None = None
    language: str | None = None
    comments: str = ""
    error: str | None = None


class MainTextExtractor:
    """Extracts the main text of pages with fixed options (resolve settings once, then call).

    ``focus``: ``"precision"`` (default) drops doubtful blocks, so a page without an article
    gives ``""`` rather than its menu, and a headline or standfirst in the article's header is
    left to ``title``; ``"balanced"`` and ``"recall"`` keep more. ``fallback`` runs
    trafilatura's second opinion (readability and jusText) when its own result is short: a few
    ms more per page for a little more recall, off by default. ``include_tables`` keeps table
    rows (product specifications); ``include_comments`` fills :attr:`MainText.comments`. A
    page longer than ``max_chars`` characters is not extracted (its ``error`` says so): the
    cost grows with the page, and 2 MB of HTML is past any article. ``clock`` (epoch seconds)
    bounds the publication date: a date after today is a misreading. Safe to call from
    several threads (each call works on its own copy of the options).
    """

    def __init__(
        self,
        *,
        focus: Focus = "precision",
        fallback: bool = False,
        include_tables: bool = True,
        include_comments: bool = False,
        max_chars: int = 2_000_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_chars = max_chars
        self.clock = clock
        self._options = Extractor(
            output_format="python",
            fast=not fallback,
            precision=focus == "precision",
            recall=focus == "recall",
            comments=include_comments,
            tables=include_tables,
            with_metadata=True,
        )

    def extract(self, html: bytes | str, url: str, *, charset: str | None = None) -> MainText:
        """The main text of ``html`` fetched from ``url``; never raises on the content.

        A bytes ``html`` is decoded with :func:`harvestman.charset.decode_html` (``charset``:
        the HTTP ``Content-Type`` label), so the page is read as the rest of the crawler reads
        it, and trafilatura never sees compressed bytes it would inflate itself.
        """
        try:
            source = html if isinstance(html, str) else decode_html(bytes(html), charset)[0]
            if len(source) > self.max_chars:
                return MainText("", error=f"too_large: {len(source)} characters")
            source = _encodable(source)
            language = _declared_language(source)
            document = bare_extraction(source, options=self._page_options(url))
        except Exception as exc:  # a library bug on odd input must not end the page's processing
            return MainText("", error=f"{type(exc).__name__}: {exc}"[:500])
        if not isinstance(document, Document):  # None: trafilatura's "no main content"
            return MainText("", language=language)
        author = (document.author or "").strip(_AUTHOR_STRIP) or None
        return MainText(
            text=_trimmed(document.text),
            title=document.title or None,
            author=author,
            date=_iso_date(document.date),
            language=language,
            comments=_trimmed(document.comments),
        )

    def _page_options(self, url: str) -> Extractor:
        options = copy.copy(self._options)  # 6 µs; building an Extractor costs 45
        options.url = options.source = url
        today = dt.datetime.fromtimestamp(self.clock(), dt.UTC).date()
        options.date_params = {
            "original_date": True,
            # The extensive search guesses from any date-like text ("© 2024" -> 2024-01-01).
            "extensive_search": False,
            "max_date": today.isoformat(),
        }
        return options


_DEFAULT: Final = MainTextExtractor()


def extract_main_text(html: bytes | str, url: str, *, charset: str | None = None) -> MainText:
    """The main text of a page, with the default options of :class:`MainTextExtractor`.

    Never raises on the content of ``html``.

    >>> page = ("<html lang='en'><body><nav><a href='/'>Home</a></nav><article><h1>A</h1>"
    ...         + "<p>" + "The river rose again this winter, as it did last year. " * 8 + "</p>"
    ...         + "</article></body></html>")
    >>> found = extract_main_text(page, "https://news.example/a")
    >>> found.text.splitlines()[1][:20], "Home" in found.text, found.language
    ('The river rose again', False, 'en')
    """
    return _DEFAULT.extract(html, url, charset=charset)


def _trimmed(text: str | None) -> str:
    """``text`` without the space that ends each table row (``"| a | b | "``)."""
    if not text:
        return ""
    if " \n" in text or text.endswith(" "):
        return "\n".join(line.rstrip() for line in text.splitlines())
    return text


def _encodable(text: str) -> str:
    """``text`` without lone surrogates (U+FFFD instead), which would make lxml stop there."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def _declared_language(text: str) -> str | None:
    head = text[:_HEAD_CHARS]
    match = _HTML_LANG.search(head) or _META_LANG.search(head)
    return match.group(1).lower() if match else None


def _iso_date(value: str | None) -> dt.date | None:
    if not value:
        return None
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        return None
