"""Encodings are found as browsers find them: html5lib-tests' ``encoding/`` suite.

The cases are ``tests1.dat``, ``tests2.dat`` and ``test-yahoo-jp.dat`` of html5lib-tests'
``encoding/`` directory as shipped in the ``html5lib`` 1.1 sdist on PyPI
(``html5lib/tests/testdata/encoding/``, SHA-256 of the sdist
``b2e5b40261e20f354d198eae92afc10d750afb487ed5e50f9c4eaf07c184146f``), copied to
``tests/fixtures/html5lib-encoding/``. Each case is a document and the encoding a browser
whose default is windows-1252 decodes it with. Every case runs through
``charset.decode_html(body, None)``, the path a crawl takes for a page without a header label:

- the text must be the browser's text (what people see is what is stored), and
- the label must be the one the browser finds (a BOM, the prescan of the first 1,024 bytes,
  the ``<meta>`` the parser meets later), else windows-1252, the browser's default.

Two deliberate differences, each asserted as such: a ``<meta>`` that only a script writes
(``document.write``) needs JavaScript, which a crawler without a renderer does not run; and
``test-yahoo-jp.dat``'s document is UTF-8 bytes under ``<meta charset=euc-jp>`` (the file was
re-encoded): a browser shows mojibake, Harvestman believes a label only when the bytes decode
with it (see ``harvestman.charset``) and keeps the Japanese text.
"""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvestman import charset
from harvestman.charset import decode_html, encoding_for_label, later_meta, prescan

DATA = Path(__file__).parent / "fixtures" / "html5lib-encoding"
FILES = ("tests1.dat", "tests2.dat", "test-yahoo-jp.dat")


def cases_of(name: str) -> list[tuple[bytes, str]]:
    cases = []
    for chunk in (DATA / name).read_bytes().split(b"#data\n")[1:]:
        body, _, rest = chunk.partition(b"\n#encoding\n")
        cases.append((body, rest.split(b"\n")[0].decode().strip()))
    return cases


CASES = [(name, n, *case) for name in FILES for n, case in enumerate(cases_of(name))]
NEEDS_SCRIPT = {("tests1.dat", 54)}  # document.write('<meta charset="ISO-8859-' + '2">')
BYTES_DISAGREE = {("test-yahoo-jp.dat", 0)}


def browser_text(body: bytes, label: str) -> str:
    name = encoding_for_label(label)
    assert name is not None
    for bom, _ in charset._BOMS:
        if body.startswith(bom):
            body = body[len(bom) :]
    if name == "windows-1252":
        return charset._decode_windows_1252(body)
    return body.decode(charset._CODEC[name], errors="replace")


def label_found(body: bytes) -> str:
    for bom, name in charset._BOMS:
        if body.startswith(bom):
            return name
    return prescan(body[:1024]) or later_meta(body) or "windows-1252"


def test_the_suites_are_the_cited_files() -> None:
    assert [sum(1 for case in CASES if case[0] == name) for name in FILES] == [60, 22, 1]


@pytest.mark.parametrize(
    ("name", "n", "body", "label"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES]
)
def test_a_page_is_decoded_as_the_browser_decodes_it(
    name: str, n: int, body: bytes, label: str
) -> None:
    text, _ = decode_html(body, None)
    if (name, n) in BYTES_DISAGREE:
        assert text == body.decode("utf-8")
        with pytest.raises(UnicodeDecodeError):
            body.decode(charset._CODEC[encoding_for_label(label) or ""])
        return
    assert text == browser_text(body, label)


@pytest.mark.parametrize(
    ("name", "n", "body", "label"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES]
)
def test_the_label_is_the_one_the_browser_finds(name: str, n: int, body: bytes, label: str) -> None:
    found = label_found(body)
    if (name, n) in NEEDS_SCRIPT:
        assert found == "windows-1252" != encoding_for_label(label)
        return
    assert found == encoding_for_label(label)


# The examples, with text that shows the difference (the suite's bodies are ASCII).
POLISH = "Zażółć gęślą jaźń"


def test_a_meta_after_a_long_comment_changes_the_encoding() -> None:
    page = "<!--" + "x" * 3000 + '--><meta charset="iso-8859-2"><p>' + POLISH + "</p>"
    text, name = decode_html(page.encode("iso-8859-2"), None)
    assert (name, text) == ("iso-8859-2", page)


def test_a_meta_after_a_long_script_changes_the_encoding() -> None:
    # Past the prescan's 1,024 bytes the page is read as the tokenizer reads it: the string
    # in the script is text, not a tag (the prescan itself would take it, as browsers do).
    script = "<script>" + " " * 2000 + "var s = '<meta charset=koi8-r>';</script>"
    page = script + '<meta charset="windows-1250"><p>' + POLISH + "</p>"
    text, name = decode_html(page.encode("cp1250"), None)
    assert (name, text) == ("windows-1250", page)


@pytest.mark.parametrize(
    "head",
    [
        # A "<meta" inside another tag's attribute value is no tag.
        '<p title="x>\n<meta charset=iso-8859-2>">',
        # "Content-Type " (a trailing space) is no pragma.
        '<meta http-equiv="Content-Type " content="text/html; charset=iso-8859-2">',
        # An unbalanced quote in content= gives nothing.
        '<meta http-equiv="Content-Type" content="text/html; charset=\'iso-8859-2">',
    ],
)
def test_what_the_prescan_refuses_is_read_as_windows_1252(head: str) -> None:
    page = head + "<p>Caf\u00e9 \u00bd \u00e6</p>"  # bytes that read differently in 8859-2
    body = page.encode("cp1252")
    assert decode_html(body, None) == (page, "windows-1252")
    assert prescan(body) is None


@pytest.mark.parametrize(
    ("meta", "codec", "name"),
    [
        ('<meta charset="x-user-defined">', "cp1252", "windows-1252"),
        ('<meta charset="latin1">', "cp1252", "windows-1252"),
        ('<meta charset="iso-8859-1">', "cp1252", "windows-1252"),
        ('<meta charset="gb2312">', "gb18030", "gbk"),
        ('<meta charset="utf-16">', "utf-8", "utf-8"),
        ('<meta charset="Shift_JIS">', "cp932", "shift_jis"),
        (
            '<meta http-equiv="content-type" content="text/html; charset=EUC-JP">',
            "euc_jp",
            "euc-jp",
        ),
    ],
)
def test_what_already_worked_still_works(meta: str, codec: str, name: str) -> None:
    words = {"cp1252": "Café", "gb18030": "中文网页", "utf-8": "Café"}.get(codec, "日本語です")
    page = meta + "<p>" + words + "</p>"
    assert decode_html(page.encode(codec), None) == (page, name)


def test_a_bom_comes_first() -> None:
    page = '<meta charset="iso-8859-2"><p>' + POLISH + "</p>"
    assert decode_html(codecs.BOM_UTF8 + page.encode(), None) == (page, "utf-8")


HTMLISH = st.lists(
    st.sampled_from([*"<>!-/=\"' \t\nmetaMETAcharsetCHARSET;:xyz", "<meta ", "charset=", "-->"]),
    max_size=40,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(head=HTMLISH, tail=st.binary(max_size=40))
def test_the_prescan_never_raises(head: str, tail: bytes) -> None:
    body = head.encode() + tail
    prescan(body)
    later_meta(body + b"<meta charset=utf-8>")
    decode_html(body, None)
