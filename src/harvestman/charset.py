"""Bytes of an HTML page to text: which encoding, and decoding that never fails.

The order follows what browsers do (WHATWG HTML "determining the character encoding"), with one
change a crawler can afford and a browser cannot: a label is only believed when the bytes agree
with it, because a crawler sees every misconfigured server on the web and has no user to press
"reload in another encoding".

1. A byte-order mark (UTF-8, UTF-16LE, UTF-16BE) wins over everything, as in browsers.
2. The HTTP ``charset`` label, when it names a WHATWG encoding and the body decodes with it
   without error. A single-byte label (windows-1252, ISO-8859-x, KOI8-R, ...) is checked
   differently, since every byte sequence is valid in it: it loses to UTF-8 when the body is
   valid UTF-8 containing non-ASCII bytes (a UTF-8 page served under a server-wide default
   ``ISO-8859-1``; real single-byte text is almost never valid UTF-8 by chance).
3. A ``<meta charset>`` or ``<meta http-equiv=content-type content="...; charset=...">`` found
   by the HTML Standard's prescan of the first 1,024 bytes (§13.2.3.2, as written: comments
   skipped, other tags' attributes read as the algorithm reads them, so a ``<meta`` inside an
   attribute value does not count and ``http-equiv="Content-Type "`` is no pragma; UTF-16
   labels read as UTF-8, ``x-user-defined`` as windows-1252); else the first such ``<meta>``
   anywhere in the page, read as the tokenizer reads (script and style contents are text),
   which is where the parser "changes the encoding" of a document whose encoding is still
   tentative. Under the same conditions as the header.
4. UTF-8, strict; or "mostly UTF-8": valid non-ASCII characters outnumber the invalid sequences
   four to one (a UTF-8 page with a stray windows-1252 byte), decoded with U+FFFD for the damage,
   which is what a browser shows for a UTF-8 page with a broken byte.
5. ``charset_normalizer`` on a bounded window (16 KiB, markup removed, around the first byte that
   is not UTF-8), limited to the WHATWG encodings less the Mac and DOS code pages, preferring
   windows-1252 among the readings with the least "chaos". This is slow (up to milliseconds),
   hence last.
6. windows-1252, which decodes every byte (WHATWG maps its five unassigned bytes to the C1
   controls of the same value).

A header that says UTF-8 over a windows-1252 body ("wrong charset") fails step 2 and is then read
by the page's ``<meta>`` label or by detection. A body that is complete except for a multi-byte
character cut at the very end (a truncated download) still counts as decoding with its label;
the cut character becomes U+FFFD.

Labels are resolved with the WHATWG Encoding Standard table, so ``iso-8859-1``, ``latin1`` and
``us-ascii`` mean windows-1252, ``shift_jis`` means windows-31J, ``gb2312`` means GBK (decoded
as GB18030), and labels outside the standard (``utf-7``, ``base64``, ...) are ignored. Returned
encoding names are the standard's names, lower-cased (``"utf-8"``, ``"windows-1252"``,
``"shift_jis"``, ``"euc-jp"``).

>>> decode_html("café".encode("cp1252"), "iso-8859-1")
('café', 'windows-1252')
>>> decode_html(b'<meta charset="utf-8">\\xc3\\xa9', None)
('<meta charset="utf-8">é', 'utf-8')
"""

from __future__ import annotations

import codecs
import re
from typing import Final

__all__ = ["decode_html", "encoding_for_label", "later_meta", "prescan"]

# WHATWG Encoding Standard: encoding name -> (Python codec, labels). "replacement" and
# "x-user-defined" are left out on purpose: a page that names them gets the next step instead.
_ENCODINGS: Final[dict[str, tuple[str, str]]] = {
    "utf-8": ("utf-8", "unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8"),
    "ibm866": ("cp866", "866 cp866 csibm866 ibm866"),
    "iso-8859-2": (
        "iso8859-2",
        "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 iso_8859-2:1987 l2 latin2",
    ),
    "iso-8859-3": (
        "iso8859-3",
        "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 iso_8859-3:1988 l3 latin3",
    ),
    "iso-8859-4": (
        "iso8859-4",
        "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 iso_8859-4:1988 l4 latin4",
    ),
    "iso-8859-5": (
        "iso8859-5",
        "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 iso_8859-5 "
        "iso_8859-5:1988",
    ),
    "iso-8859-6": (
        "iso8859-6",
        "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 iso-8859-6 "
        "iso-8859-6-e iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 iso_8859-6:1987",
    ),
    "iso-8859-7": (
        "iso8859-7",
        "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 iso8859-7 "
        "iso88597 iso_8859-7 iso_8859-7:1987 sun_eu_greek",
    ),
    "iso-8859-8": (
        "iso8859-8",
        "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 iso8859-8 "
        "iso88598 iso_8859-8 iso_8859-8:1988 visual",
    ),
    "iso-8859-8-i": ("iso8859-8", "csiso88598i iso-8859-8-i logical"),
    "iso-8859-10": (
        "iso8859-10",
        "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6",
    ),
    "iso-8859-13": ("iso8859-13", "iso-8859-13 iso8859-13 iso885913"),
    "iso-8859-14": ("iso8859-14", "iso-8859-14 iso8859-14 iso885914"),
    "iso-8859-15": (
        "iso8859-15",
        "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9",
    ),
    "iso-8859-16": ("iso8859-16", "iso-8859-16"),
    "koi8-r": ("koi8-r", "cskoi8r koi koi8 koi8-r koi8_r"),
    "koi8-u": ("koi8-u", "koi8-ru koi8-u"),
    "macintosh": ("mac-roman", "csmacintosh mac macintosh x-mac-roman"),
    "windows-874": ("cp874", "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874"),
    "windows-1250": ("cp1250", "cp1250 windows-1250 x-cp1250"),
    "windows-1251": ("cp1251", "cp1251 windows-1251 x-cp1251"),
    "windows-1252": (
        "cp1252",
        "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1 "
        "iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252",
    ),
    "windows-1253": ("cp1253", "cp1253 windows-1253 x-cp1253"),
    "windows-1254": (
        "cp1254",
        "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 "
        "iso_8859-9:1989 l5 latin5 windows-1254 x-cp1254",
    ),
    "windows-1255": ("cp1255", "cp1255 windows-1255 x-cp1255"),
    "windows-1256": ("cp1256", "cp1256 windows-1256 x-cp1256"),
    "windows-1257": ("cp1257", "cp1257 windows-1257 x-cp1257"),
    "windows-1258": ("cp1258", "cp1258 windows-1258 x-cp1258"),
    "x-mac-cyrillic": ("mac-cyrillic", "x-mac-cyrillic x-mac-ukrainian"),
    "gbk": (
        "gb18030",
        "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk",
    ),
    "gb18030": ("gb18030", "gb18030"),
    "big5": ("big5hkscs", "big5 big5-hkscs cn-big5 csbig5 x-x-big5"),
    "euc-jp": ("euc_jp", "cseucpkdfmtjapanese euc-jp x-euc-jp"),
    "iso-2022-jp": ("iso2022_jp", "csiso2022jp iso-2022-jp"),
    "shift_jis": (
        "cp932",
        "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
    ),
    "euc-kr": (
        "cp949",
        "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 "
        "ksc5601 ksc_5601 windows-949",
    ),
    "utf-16be": ("utf-16-be", "unicodefffe utf-16be"),
    "utf-16le": (
        "utf-16-le",
        "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le",
    ),
}

_LABELS: Final[dict[str, str]] = {
    label: name for name, (_, labels) in _ENCODINGS.items() for label in labels.split()
}
_CODEC: Final[dict[str, str]] = {name: codec for name, (codec, _) in _ENCODINGS.items()}
_MULTI_BYTE: Final = frozenset(
    {"utf-8", "gbk", "gb18030", "big5", "euc-jp", "iso-2022-jp", "shift_jis", "euc-kr"}
    | {"utf-16be", "utf-16le"}
)
# Python codec (canonical name) -> WHATWG name, for what charset_normalizer reports. Where two
# names share a codec, the first listed here wins.
_NAME_OF_CODEC: Final[dict[str, str]] = {}
for _name in ("gb18030", "iso-8859-8", *_ENCODINGS):
    _NAME_OF_CODEC.setdefault(codecs.lookup(_CODEC[_name]).name, _name)
# Detection candidates: the standard's encodings but UTF-16 (ASCII markup in it is not ASCII
# bytes) and the Mac and DOS code pages, which a detector picks for short Latin or Cyrillic
# samples far more often than servers send them.
_DETECTION_CODECS: Final = sorted(
    {_CODEC[name] for name in _ENCODINGS}
    - {"utf-16-be", "utf-16-le", "mac-roman", "mac-cyrillic", "cp866"}
)

# windows-1252 as WHATWG defines it: Python's cp1252 leaves 0x81, 0x8D, 0x8F, 0x90 and 0x9D
# undefined, the standard maps them to U+0081 ... so decoding cannot fail.
_WINDOWS_1252_TABLE: Final = "".join(
    bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in range(256)
)

_BOMS: Final = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_BE, "utf-16be"),
    (codecs.BOM_UTF16_LE, "utf-16le"),
)

_PRESCAN_BYTES: Final = 1024  # HTML §13.2.3.2: the first 1024 bytes
_DETECTION_WINDOW: Final = 16384
_DETECTION_LEAD: Final = 4096
_MOSTLY_UTF8_RATIO: Final = 4

# The prescan (HTML §13.2.3.2) in pieces: C-speed scans between the decisions it makes.
_IS_LETTER: Final = re.compile(rb"[A-Za-z]").match
_TAG_NAME_END: Final = re.compile(rb"[\t\n\f\r >]").search
_SPACE_OR_SLASH: Final = (b"\t", b"\n", b"\f", b"\r", b" ", b"/")
_SPACES: Final = re.compile(rb"[\t\n\f\r ]*").match
_SPACES_OR_SLASH: Final = re.compile(rb"[\t\n\f\r /]*").match
_NAME_REST: Final = re.compile(rb"[^\t\n\f\r /=>]*").match
_UNQUOTED_END: Final = re.compile(rb"[^\t\n\f\r >]*").match
_CONTENT_VALUE_END: Final = re.compile(rb"[^\t\n\f\r ;]*").match
_META_CHARSET_SEARCH: Final = re.compile(rb"<meta[\t\n\f\r /][^<]*charset", re.I).search
# Elements whose contents the tokenizer reads as text (scripting on: <noscript> too).
_RAW_TEXT: Final = frozenset(
    {b"script", b"style", b"title", b"textarea", b"xmp", b"iframe", b"noembed", b"noframes"}
    | {b"noscript", b"plaintext"}
)
# The prescan's common case in one match: tags the prescan reads past (start and end tags with
# plain attributes, doctypes, comments), then a <meta charset> with nothing after its label.
# What it matches, the prescan reads the same way; what it does not, the prescan reads.
_PLAIN_HEAD: Final = re.compile(
    rb"""(?:[^<]*+(?:<!(?=--).*?-->|<!(?!--)[^>]*+>"""
    rb"""|</?+(?!meta[\t\n\f\r /])[A-Za-z][^\t\n\f\r >]*+"""
    rb"""(?:[\t\n\f\r ]++[A-Za-z][A-Za-z0-9_:.-]*+(?:="[^"]*+"|='[^']*+')?+)*+[\t\n\f\r /]*+>))*+"""
    rb"""[^<]*+<meta[\t\n\f\r ]++charset=(?:"([^"]*+)"|'([^']*+)'|([^\t\n\f\r >"']++))"""
    rb"""[\t\n\f\r /]*+>""",
    re.S | re.I,
).match
_MARKUP: Final = re.compile(rb"<(script|style)\b.*?</\1\s*>|<!--.*?-->|<[^>]*>", re.S | re.I)


def encoding_for_label(label: str | bytes | None) -> str | None:
    """The WHATWG encoding name a charset label stands for, or ``None`` if it names none.

    >>> encoding_for_label(" Latin1 "), encoding_for_label("SJIS"), encoding_for_label("utf-7")
    ('windows-1252', 'shift_jis', None)
    """
    if label is None:
        return None
    if isinstance(label, bytes):
        label = label.decode("latin-1")
    return _LABELS.get(label.strip(" \t\n\f\r\"'").lower())


def decode_html(body: bytes, declared: str | None = None) -> tuple[str, str]:
    """Return (text, encoding used) for the bytes of an HTML page; never raises.

    ``declared`` is the ``charset`` parameter of the HTTP ``Content-Type`` header, if any. The
    order is: BOM; the declared charset when it is a known encoding and the body decodes with
    it; a ``<meta charset>`` / ``<meta http-equiv=content-type>`` found by the prescan of the
    first 1,024 bytes, else anywhere in the page (:func:`later_meta`); UTF-8
    (strict, or mostly valid with U+FFFD for the damage); ``charset_normalizer`` detection on a
    bounded window; windows-1252. The module docstring gives the reasons.
    """
    if not isinstance(body, bytes):
        body = bytes(body)
    for bom, name in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(_CODEC[name], errors="replace"), name

    header = encoding_for_label(declared) if isinstance(declared, str) else None
    if header is not None:
        checked = _decode_checked(body, header)
        if checked is not None:
            return checked

    meta = prescan(body[:_PRESCAN_BYTES])
    if meta is None:
        # No label yet: the encoding is "tentative", and the parser changes it when it meets
        # a <meta> naming one, however far into the page (after a long comment or script).
        meta = later_meta(body)
    if meta is not None and meta != header:
        checked = _decode_checked(body, meta)
        if checked is not None:
            return checked

    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        first_error = exc.start
    truncated = _decode_truncated(body, "utf-8")
    if truncated is not None:
        return truncated, "utf-8"
    text = body.decode("utf-8", errors="replace")
    damaged = text.count("\ufffd")
    non_ascii = len(text) - len(text.encode("ascii", errors="ignore"))
    if non_ascii - damaged >= _MOSTLY_UTF8_RATIO * damaged:
        return text, "utf-8"

    detected = _detect(body, first_error)
    if detected is not None and detected != "windows-1252":
        return body.decode(_CODEC[detected], errors="replace"), detected
    return _decode_windows_1252(body), "windows-1252"


def _decode_checked(body: bytes, name: str) -> tuple[str, str] | None:
    """Decode with a label's encoding if the bytes agree with it (see the module docstring)."""
    if name == "windows-1252":
        text: str | None = _decode_windows_1252(body)
    else:
        text = _decode_strict(body, _CODEC[name])
    if text is None:
        return None
    if name not in _MULTI_BYTE and not body.isascii():
        try:
            return body.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            pass
    return text, name


def _decode_strict(body: bytes, codec: str) -> str | None:
    """``body`` decoded without error (a multi-byte character cut at the end aside), else None."""
    try:
        return body.decode(codec)
    except UnicodeDecodeError:
        return _decode_truncated(body, codec)


def _decode_truncated(body: bytes, codec: str) -> str | None:
    """Decode a body that is valid but for an incomplete character at its very end."""
    decoder = codecs.getincrementaldecoder(codec)()
    try:
        text = decoder.decode(body, final=False)
    except UnicodeDecodeError:
        return None
    pending = decoder.getstate()[0]
    return text + "\ufffd" if pending else None


def _decode_windows_1252(body: bytes) -> str:
    return codecs.charmap_decode(body, "strict", _WINDOWS_1252_TABLE)[0]


class _EndOfInput(Exception):
    """The bytes ran out inside a construct: the prescan gives up (HTML §13.2.3.2)."""


def prescan(data: bytes) -> str | None:
    """HTML §13.2.3.2 "prescan a byte stream to determine its encoding", as written.

    Returns the WHATWG name of the encoding the first ``<meta charset>`` (or ``<meta
    http-equiv=content-type content="...; charset=...">``) names, or ``None``. UTF-16 labels
    give UTF-8 and ``x-user-defined`` windows-1252, as the standard says. The caller passes
    the first 1,024 bytes; the bytes running out inside a tag, a comment or a quoted value
    give ``None``.

    >>> prescan(b'<p title="x><meta charset=koi8-r>"><meta charset="euc-jp">')
    'euc-jp'
    >>> prescan(b'<meta http-equiv="Content-Type " content="text/html; charset=iso-8859-2">')
    """
    plain = _PLAIN_HEAD(data)
    if plain is not None:
        label = plain.group(1) or plain.group(2) or plain.group(3) or b""
        charset = _get_an_encoding(label)
        if charset is not None:  # else the prescan goes on to the next <meta>
            return "utf-8" if charset in ("utf-16be", "utf-16le") else charset
    try:
        return _scan(data, raw_text=False)
    except _EndOfInput:
        return None


def later_meta(body: bytes) -> str | None:
    """What the HTML parser's "change the encoding" would switch to: the first ``<meta>``
    naming an encoding anywhere in ``body``, read as the tokenizer reads (the contents of
    ``<script>``, ``<style>``, ``<title>``, ``<textarea>`` and the other raw-text elements are
    text, not tags), for a document whose encoding is still tentative. ``None`` if none."""
    if _META_CHARSET_SEARCH(body) is None:  # no "<meta ... charset": the common case, in C
        return None
    try:
        return _scan(body, raw_text=True)
    except _EndOfInput:
        return None


def _scan(data: bytes, *, raw_text: bool) -> str | None:
    """The prescan's loop over ``data``; ``raw_text``: skip raw-text elements' contents."""
    size = len(data)
    position = 0
    while True:
        position = data.find(b"<", position)
        if position < 0:
            return None
        if data.startswith(b"<!--", position):
            # The "--" of "<!--" may end it too: "<!-->" is a whole comment.
            end = data.find(b"-->", position + 2)
            if end < 0:
                raise _EndOfInput
            position = end + 3
            continue
        after = data[position + 1 : position + 2]
        if (
            data[position + 1 : position + 5].lower() == b"meta"
            and data[position + 5 : position + 6] in _SPACE_OR_SLASH
        ):
            found, position = _meta(data, position + 6)
            if found is not None:
                return found
        elif _IS_LETTER(after) or (after == b"/" and _IS_LETTER(data, position + 2)):
            # Up to white space or ">", quotes and all; then its attributes.
            name_end = _TAG_NAME_END(data, position + 1)
            if name_end is None:
                raise _EndOfInput
            name = data[position + 1 : name_end.start()].lower()
            position = name_end.start()
            while True:
                attribute = _attribute(data, position)
                if attribute is None:
                    break
                position = attribute[2]
            if raw_text and name in _RAW_TEXT:
                end_tag = re.compile(b"</" + name + rb"[\t\n\f\r />]", re.I).search(data, position)
                if end_tag is None:
                    return None
                position = end_tag.start()
                continue
        elif after in (b"!", b"/", b"?"):
            end = data.find(b">", position + 1)
            if end < 0:
                raise _EndOfInput
            position = end
        position += 1
        if position >= size:
            return None


def _meta(data: bytes, position: int) -> tuple[str | None, int]:
    """The attributes of a ``<meta`` from ``position`` and the encoding they name, if any."""
    seen: set[bytes] = set()
    got_pragma = False
    need_pragma: bool | None = None
    charset: str | None = None
    charset_failed = False
    while True:
        attribute = _attribute(data, position)
        if attribute is None:
            break
        name, value, position = attribute
        if name in seen:
            continue
        seen.add(name)
        if name == b"http-equiv":
            got_pragma = got_pragma or value == b"content-type"
        elif name == b"content":
            found = _charset_in_content(value)
            if found is not None and charset is None and not charset_failed:
                charset, need_pragma = found, True
        elif name == b"charset":
            charset = _get_an_encoding(value)
            charset_failed = charset is None
            need_pragma = False
    if need_pragma is None or (need_pragma and not got_pragma) or charset is None:
        return None, position
    if charset in ("utf-16be", "utf-16le"):  # a document read this far is not UTF-16
        charset = "utf-8"
    return charset, position


def _attribute(data: bytes, position: int) -> tuple[bytes, bytes, int] | None:
    """HTML's "get an attribute" at ``position``: (name, value, position after), or ``None``
    at the ``>`` that ends the tag. Names and values are ASCII lower-cased."""
    position = _end(_SPACES_OR_SLASH(data, position))
    if position >= len(data):
        raise _EndOfInput
    if data[position] == 0x3E:  # ">"
        return None
    # The first character is part of the name whatever it is ("=" or "<" too).
    end = _end(_NAME_REST(data, position + 1))
    name = data[position:end].lower()
    position = end
    if position >= len(data):
        raise _EndOfInput
    if data[position] in b"/>":
        return name, b"", position
    if data[position] != 0x3D:  # white space: "=" may follow it
        position = _end(_SPACES(data, position))
        if position >= len(data):
            raise _EndOfInput
        if data[position] != 0x3D:
            return name, b"", position
    position = _end(_SPACES(data, position + 1))
    if position >= len(data):
        raise _EndOfInput
    quote = data[position]
    if quote in b"\"'":
        end = data.find(bytes([quote]), position + 1)
        if end < 0:
            raise _EndOfInput
        return name, data[position + 1 : end].lower(), end + 1
    if quote == 0x3E:
        return name, b"", position
    end = _end(_UNQUOTED_END(data, position))
    if end >= len(data):
        raise _EndOfInput
    return name, data[position:end].lower(), end


def _end(match: re.Match[bytes] | None) -> int:
    """Where a match of a pattern that always matches (``[...]*``) ends."""
    assert match is not None
    return match.end()


def _charset_in_content(content: bytes) -> str | None:
    """HTML's "algorithm for extracting a character encoding from a meta element"."""
    position = 0
    while True:
        position = content.find(b"charset", position)
        if position < 0:
            return None
        position = _end(_SPACES(content, position + 7))
        if content[position : position + 1] != b"=":
            continue
        position = _end(_SPACES(content, position + 1))
        first = content[position : position + 1]
        if not first:
            return None
        if first in (b'"', b"'"):
            end = content.find(first, position + 1)
            if end < 0:
                return None
            return _get_an_encoding(content[position + 1 : end])
        end = _end(_CONTENT_VALUE_END(content, position))
        return _get_an_encoding(content[position:end])


def _get_an_encoding(label: bytes) -> str | None:
    """The Encoding Standard's "get an encoding", with what the prescan makes of the result."""
    text = label.decode("latin-1").strip("\t\n\f\r ").lower()
    if text == "x-user-defined":
        return "windows-1252"
    return _LABELS.get(text)


def _detect(body: bytes, first_error: int) -> str | None:
    """Guess the encoding of ``body`` from a window around its first non-UTF-8 byte."""
    start = max(0, first_error - _DETECTION_LEAD)
    window = body[start : start + _DETECTION_WINDOW]
    sample = _MARKUP.sub(b" ", window)
    if sample.isascii():  # the evidence sits in attributes or scripts: keep them
        sample = window
    import charset_normalizer  # here: ~10 ms of every process's start, for the rare page

    try:
        results = charset_normalizer.from_bytes(
            sample, cp_isolation=_DETECTION_CODECS, preemptive_behaviour=False
        )
    except Exception:  # a detector failure must not cost the page; the fallback decodes it
        return None
    best = results.best()
    if best is None:
        return None
    # The web's default legacy encoding wins among the equally plausible readings.
    for match in results:
        if match.chaos > best.chaos:
            break
        if "cp1252" in match.could_be_from_charset:
            return "windows-1252"
    try:
        return _NAME_OF_CODEC.get(codecs.lookup(best.encoding).name)
    except LookupError:
        return None
