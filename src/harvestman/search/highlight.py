"""A snippet's marks (:data:`~harvestman.search.query.MARK_START` / ``MARK_END``) in the form each
reader takes: HTML for the API, plain text with the marked spans for JSON lines and the terminal.

>>> to_html("a <b> \\x02c\\x03")
'a &lt;b&gt; <mark>c</mark>'
>>> to_plain("a \\x02bc\\x03 d")
('a bc d', [(2, 4)])
"""

from __future__ import annotations

import html
import re

from harvestman.search.query import MARK_END, MARK_START

_MARKED = re.compile(f"{MARK_START}([^{MARK_END}]*){MARK_END}")


def to_html(snippet: str) -> str:
    """The snippet escaped for HTML, its marks as ``<mark>`` elements."""
    escaped = html.escape(snippet, quote=False)
    return escaped.replace(MARK_START, "<mark>").replace(MARK_END, "</mark>")


def to_plain(snippet: str) -> tuple[str, list[tuple[int, int]]]:
    """The snippet without marks, and the ``[start, end)`` character spans they marked."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    at = length = 0
    for match in _MARKED.finditer(snippet):
        parts.append(snippet[at : match.start()])
        length += match.start() - at
        parts.append(match.group(1))
        spans.append((length, length + len(match.group(1))))
        length += len(match.group(1))
        at = match.end()
    parts.append(snippet[at:])
    return "".join(parts), spans
