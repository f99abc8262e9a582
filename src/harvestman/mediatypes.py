"""Media types of responses: the ``Content-Type`` header's parts, and HTML sniffed from a body.

Kept apart from :mod:`harvestman.crawl.fetch` (which re-exports both) so that what judges a body
(validation, the page processes) does not load the HTTP client.
"""

from __future__ import annotations

__all__ = ["looks_like_html", "parse_content_type"]

# The tags of the WHATWG MIME sniffing algorithm (§7.1) that mark an untyped resource as HTML.
_HTML_SNIFF_TAGS = (
    b"<!doctype html",
    b"<html",
    b"<head",
    b"<script",
    b"<iframe",
    b"<h1",
    b"<div",
    b"<font",
    b"<table",
    b"<a",
    b"<style",
    b"<title",
    b"<b",
    b"<body",
    b"<br",
    b"<p",
    b"<!--",
)


def looks_like_html(body: bytes) -> bool:
    """Whether an untyped body starts like HTML (WHATWG sniffing: a known tag, then space or >).

    >>> looks_like_html(b"\\xef\\xbb\\xbf\\n<HTML lang=en>"), looks_like_html(b"<bogus>")
    (True, False)
    """
    head = body[:512].removeprefix(b"\xef\xbb\xbf").lstrip(b"\t\n\x0c\r ").lower()
    for tag in _HTML_SNIFF_TAGS:
        if head.startswith(tag):
            after = head[len(tag) : len(tag) + 1]
            if after in (b" ", b">") or (tag == b"<!--" and after):
                return True
    return False


def parse_content_type(value: str | None) -> tuple[str, str | None]:
    """Split a Content-Type header into the lower-case MIME type and the charset parameter.

    >>> parse_content_type('Text/HTML; Charset="ISO-8859-1"')
    ('text/html', 'iso-8859-1')
    >>> parse_content_type(None)
    ('', None)
    """
    if not value:
        return "", None
    mime, _, params = value.partition(";")
    charset = None
    if params:
        for param in params.split(";"):
            name, _, val = param.partition("=")
            if name.strip().lower() == "charset":
                charset = val.strip().strip("\"'").strip().lower() or None
                break
    return mime.strip().lower(), charset
