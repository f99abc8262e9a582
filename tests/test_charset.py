"""decode_html: which encoding a page is read with, and that reading it never fails."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harvestman import charset
from harvestman.charset import decode_html, encoding_for_label, prescan

FRENCH = "<p>Café “déjà vu” — naïve façade, crème brûlée à l’œuvre.</p>"
GERMAN = "<p>Grüße aus München: schöne Straße, Äpfel und Öl für Jürgen.</p>"
JAPANESE = "<p>日本語のテキストです。これは文字コードのテストのページです。</p>" * 8
KNOWN_NAMES = {
    "utf-8",
    "utf-16le",
    "utf-16be",
    "windows-1252",
    "shift_jis",
    "euc-jp",
    "gbk",
    "gb18030",
    "big5",
    "euc-kr",
    "iso-2022-jp",
    "ibm866",
    "koi8-r",
    "koi8-u",
    "macintosh",
    "x-mac-cyrillic",
    "iso-8859-8-i",
    *(f"iso-8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)),
    *(f"windows-{n}" for n in (874, 1250, 1251, 1253, 1254, 1255, 1256, 1257, 1258)),
}


def test_utf8_declared_in_the_header_is_used() -> None:
    assert decode_html(FRENCH.encode(), "utf-8") == (FRENCH, "utf-8")


@pytest.mark.parametrize("label", ["windows-1252", "ISO-8859-1", "latin1", "us-ascii", "cp1252"])
def test_latin_labels_mean_windows_1252(label: str) -> None:
    # 0x93/0x94 are curly quotes in windows-1252 but C1 controls in real ISO-8859-1: browsers
    # (and we) read every one of these labels as windows-1252.
    assert decode_html(FRENCH.encode("cp1252"), label) == (FRENCH, "windows-1252")


def test_windows_1252_without_header_or_meta_is_detected() -> None:
    assert decode_html(GERMAN.encode("cp1252")) == (GERMAN, "windows-1252")


def test_windows_1252_named_by_meta_only() -> None:
    html = '<meta charset="windows-1252">' + FRENCH
    assert decode_html(html.encode("cp1252")) == (html, "windows-1252")


def test_shift_jis_named_by_meta_charset() -> None:
    html = "<html><head><meta charset=Shift_JIS></head><body>" + JAPANESE
    assert decode_html(html.encode("shift_jis")) == (html, "shift_jis")


def test_euc_jp_named_by_meta_http_equiv() -> None:
    html = (
        '<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=euc-jp">'
        "<title>テスト</title>" + JAPANESE
    )
    assert decode_html(html.encode("euc_jp")) == (html, "euc-jp")


def test_shift_jis_without_any_label_is_detected() -> None:
    html = "<html><body>" + JAPANESE + "</body></html>"
    assert decode_html(html.encode("shift_jis")) == (html, "shift_jis")


@pytest.mark.parametrize(
    ("bom", "codec", "name"),
    [
        (codecs.BOM_UTF8, "utf-8", "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16le"),
        (codecs.BOM_UTF16_BE, "utf-16-be", "utf-16be"),
    ],
)
def test_a_byte_order_mark_beats_header_and_meta(bom: bytes, codec: str, name: str) -> None:
    html = '<meta charset="shift_jis">' + FRENCH
    assert decode_html(bom + html.encode(codec), "windows-1252") == (html, name)


def test_wrong_utf8_header_yields_to_the_meta_label() -> None:
    html = '<meta http-equiv="content-type" content="text/html;charset=ISO-8859-1">' + FRENCH
    assert decode_html(html.encode("cp1252"), "utf-8") == (html, "windows-1252")


def test_wrong_utf8_header_without_meta_yields_to_detection() -> None:
    assert decode_html(GERMAN.encode("cp1252"), "utf-8") == (GERMAN, "windows-1252")


def test_wrong_utf8_header_over_euc_jp_with_meta() -> None:
    html = '<meta charset="EUC-JP">' + JAPANESE
    assert decode_html(html.encode("euc_jp"), "UTF-8") == (html, "euc-jp")


def test_utf8_body_under_a_server_default_latin1_header_is_utf8() -> None:
    # A single-byte label cannot be checked by decoding; valid non-ASCII UTF-8 wins over it.
    assert decode_html(FRENCH.encode(), "iso-8859-1") == (FRENCH, "utf-8")


def test_ascii_body_keeps_the_declared_single_byte_label() -> None:
    assert decode_html(b"<p>plain</p>", "iso-8859-1") == ("<p>plain</p>", "windows-1252")


def test_header_beats_meta_when_the_body_agrees_with_it() -> None:
    html = '<meta charset="shift_jis">' + FRENCH
    assert decode_html(html.encode(), "utf-8") == (html, "utf-8")


def test_mostly_utf8_with_a_stray_windows_1252_byte_stays_utf8() -> None:
    body = FRENCH.encode() + b" caf\xe9 " + FRENCH.encode()
    assert decode_html(body, "utf-8") == (FRENCH + " caf\ufffd " + FRENCH, "utf-8")


def test_a_multibyte_character_cut_at_the_end_counts_as_utf8() -> None:
    body = "<p>日本</p>語".encode()[:-1]
    assert decode_html(body, "utf-8") == ("<p>日本</p>\ufffd", "utf-8")


def test_windows_1252_unassigned_bytes_map_to_c1_controls() -> None:
    assert decode_html(b"<p>\x81\x8d\x8f\x90\x9d \x80</p>", "windows-1252") == (
        "<p>\x81\x8d\x8f\x90\x9d €</p>",
        "windows-1252",
    )


@pytest.mark.parametrize("label", ["utf-7", "base64", "rot13", "x-user-defined", "bogus", ""])
def test_labels_outside_the_encoding_standard_are_ignored(label: str) -> None:
    assert decode_html("<p>+AGE- é</p>".encode(), label) == ("<p>+AGE- é</p>", "utf-8")


def test_meta_inside_a_comment_is_ignored() -> None:
    html = '<!-- <meta charset="shift_jis"> --><meta charset="euc-jp">' + JAPANESE
    assert decode_html(html.encode("euc_jp")) == (html, "euc-jp")


def test_meta_beyond_the_prescan_is_read_as_the_parser_reads_it() -> None:
    """Past the 1,024 bytes the prescan reads, the parser still changes the encoding when it
    meets the <meta> (HTML "change the encoding"); this test once said the opposite."""
    meta = '<meta charset="koi8-r"><p>plain ASCII</p>'
    assert decode_html(meta.encode()) == (meta, "koi8-r")
    late = "<!--" + "x" * 2048 + "-->" + meta
    assert decode_html(late.encode()) == (late, "koi8-r")


def test_meta_naming_utf16_means_utf8() -> None:
    html = '<meta charset="utf-16">' + FRENCH
    assert decode_html(html.encode()) == (html, "utf-8")


def test_empty_body() -> None:
    assert decode_html(b"") == ("", "utf-8")


def test_bytearray_and_memoryview_are_accepted() -> None:
    assert decode_html(bytearray(b"<p>x</p>")) == ("<p>x</p>", "utf-8")
    assert decode_html(memoryview(b"<p>x</p>"), "utf-8") == ("<p>x</p>", "utf-8")


def test_binary_garbage_decodes_to_something() -> None:
    text, name = decode_html(bytes(range(256)) * 4)
    assert name in KNOWN_NAMES
    assert len(text) > 0


@pytest.mark.parametrize(
    ("label", "name"),
    [
        (" Latin1 ", "windows-1252"),
        ('"utf8"', "utf-8"),
        ("SJIS", "shift_jis"),
        ("windows-31j", "shift_jis"),
        ("gb2312", "gbk"),
        ("ks_c_5601-1987", "euc-kr"),
        ("tis-620", "windows-874"),
        ("iso-8859-9", "windows-1254"),
        (b"EUC-JP", "euc-jp"),
        ("utf-7", None),
        ("hz-gb-2312", None),
        (None, None),
    ],
)
def test_encoding_for_label(label: str | bytes | None, name: str | None) -> None:
    assert encoding_for_label(label) == name


@settings(max_examples=150, deadline=None)
@given(body=st.binary(max_size=600), declared=st.one_of(st.none(), st.text(max_size=20)))
def test_decoding_never_raises(body: bytes, declared: str | None) -> None:
    text, name = decode_html(body, declared)
    assert isinstance(text, str)
    assert name in KNOWN_NAMES


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=300))
def test_utf8_round_trips_whatever_the_text(text: str) -> None:
    assume(not text.startswith("\ufeff"))
    body = text.encode("utf-8", errors="replace")
    assert decode_html(body, "utf-8") == (body.decode("utf-8"), "utf-8")


HEAD_PIECES = st.sampled_from(
    [
        "<!DOCTYPE html>",
        "<!doctype html >",
        "<!-->",
        "<!--->",
        "<!-- x -->",
        "<!-- <meta charset=koi8-r> -->",
        "<!-- a > b -->",
        "<html>",
        '<html lang="en">',
        "<HTML LANG='de' class=x>",
        "<head>",
        "</title>",
        "<title>",
        "<br/>",
        '<link rel="stylesheet" href="/a>b.css" />',
        '<a b c="d">',
        '<a b="c"d>',
        "<a\tb = 'c'>",
        "<a/b='c'>",
        '<meta name="viewport" content="width=device-width">',
        '<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-2">',
        '<meta content="text/html; charset=shift_jis" http-equiv="content-type">',
        '<META CHARSET="UTF-8">',
        '<meta charset="utf-8">',
        "<meta charset='windows-1251' />",
        "<meta charset=euc-jp>",
        "<meta charset=utf-8/>",
        '<meta charset="utf-8" name="x">',
        '<meta charset="">',
        "<meta charset=>",
        '<meta charset="bogus">',
        '<meta charset="utf-16le">',
        '<meta charset=" x-user-defined ">',
        '<meta charset = "koi8-r">',
        "<meta/charset=gbk>",
        '<meta charset="utf-8',
        "<metax charset=koi8-r>",
        "</meta charset=koi8-r>",
        '<p title="x><meta charset=koi8-r>">',
        "<?xml version='1.0'?>",
        "</ x>",
        "<a<meta charset=gbk>",
        "text ",
        "\n  ",
        "<",
        ">",
        '"',
        "\u00c0",
    ]
)


@settings(max_examples=1500, deadline=None)
@given(pieces=st.lists(HEAD_PIECES, max_size=8), cut=st.integers(0, 300))
def test_the_prescans_quick_reading_is_the_prescans(pieces: list[str], cut: int) -> None:
    """The prescan reads a plain head (tags, then <meta charset>) in one match; on any head it
    must find what the step-by-step prescan finds, the bytes cut anywhere."""
    data = "".join(pieces).encode("utf-8")
    for head in (data, data[:cut]):
        try:
            expected = charset._scan(head, raw_text=False)
        except charset._EndOfInput:
            expected = None
        assert prescan(head) == expected
