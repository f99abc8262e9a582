"""Garbage detection: is a fetched page content, or a block page, a challenge or an empty shell?

A verdict is ``ok``, ``soft`` or ``hard``, with a stable ``reason`` token and, when the page is
an anti-bot vendor's, the ``vendor`` (``cloudflare``, ``akamai``, ``imperva``, ``datadome``,
``perimeterx``, ``aws_waf``, ``sucuri``, ``google``, ``amazon``: see
:mod:`harvestman.blockpages`); :attr:`Verdict.label` is ``"reason:vendor"``.

=============  ======  ===================================================================
reason         status  what it is
=============  ======  ===================================================================
bot_check      hard    a bot wall that blocks: Cloudflare "Attention Required!" / "Sorry,
                       you have been blocked", Imperva's incident page, "Pardon Our
                       Interruption", an interactive (Turnstile) challenge
captcha        hard    a vendor's CAPTCHA: DataDome, HUMAN "Press & Hold", AWS WAF, Google's
                       /sorry page, Amazon's and Walmart's robot checks
rate_limited   hard    Cloudflare error 1015, "You are being rate limited", "Too Many
                       Requests" (a Retry-After longer than the cooldown holds the host longer)
access_denied  hard    "Access Denied" (Cloudflare 1020, Akamai, Sucuri, a server's own page)
forbidden      hard    "403 Forbidden" served as a page, or any 403 that says nothing else
js_challenge   soft    a challenge that a browser passes by running its script: Cloudflare's
                       managed and legacy challenges (``_cf_chl_opt``, ``jschl``, header
                       ``cf-mitigated: challenge``), AWS WAF's (202, ``x-amzn-waf-action:
                       challenge``), DataDome's device check; "Checking your browser"
needs_js       soft    "Please enable JavaScript", "JavaScript is required" (in the text, or
                       in the ``<noscript>`` of a page with scripts and no text)
only_scripts   soft    an app shell: scripts, and no text for them to have rendered yet
too_small      soft    a body under ``min_bytes`` without a real paragraph
no_text        soft    no paragraph text and little text at all
=============  ======  ===================================================================

*Hard* means the host refuses us: the caller puts the host into cooldown. *Soft* means the
page is rejected but the host is not at fault; :attr:`Verdict.needs_render` tells which soft
verdicts a browser may turn into content (``js_challenge``, ``needs_js``, ``only_scripts``):
those go to the renderer when there is one. "Checking your browser" is soft because the page
itself says that the check is automatic: a headless browser that runs the script gets the
content, and a cooldown would only postpone the same answer. A challenge that a renderer does
not pass comes back from it as a captcha (hard) or unchanged (recorded as ``needs_js``).

A phrase counts only on a short page (at most 2,000 characters of visible text) and only in
its ``<title>`` or its first 400 characters of text, where block pages put it: an article that
mentions "access denied" is kept, and so is a short article (three paragraphs of 25 words)
headed by a phrase. The price is a short page that opens with a phrase (a news
brief headed "Access denied for 3,000 users") being taken for a block page. A vendor's marks
(:func:`harvestman.blockpages.identify`) are looked for on the same short pages, in the first
32 KB of the body: a page with more text costs a length check, as before. A title alone
("Just a moment...") is no challenge; the scripts vendors inject into normal pages are no mark.

Statuses: 2xx pages are judged in full. Of the error statuses, those anti-bot services answer
with (401, 403, 405, 429, 503) are judged for a vendor's mark or a block phrase only, and a 403
that says nothing else is ``forbidden``; other statuses are ``ok`` (the fetch layer records
them as they are: a bare 429 is retried after its Retry-After, the host not cooled down).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from selectolax.lexbor import LexborHTMLParser

from harvestman.blockpages import HEAD_BYTES, BlockMark, header_value, identify, served_by
from harvestman.charset import decode_html
from harvestman.mediatypes import looks_like_html, parse_content_type
from harvestman.parse import _HIDDEN, _visible_text

__all__ = [
    "DEFAULT_SIGNATURES",
    "MIN_WORDS",
    "PHRASE_LEAD",
    "PHRASE_TEXT_LIMIT",
    "RENDERABLE_REASONS",
    "SENTENCE_WORDS",
    "Signature",
    "Validator",
    "Verdict",
    "VerdictStatus",
    "count_words",
    "validate_response",
]

PHRASE_TEXT_LIMIT: Final = 2_000
"""A page with more visible text than this is never judged by its phrases."""
PHRASE_LEAD: Final = 400
"""Phrases count in the title or in this many first characters of the visible text."""
MIN_WORDS: Final = 20
"""A page with at least this many words of visible text is content, whatever its size."""
SENTENCE_WORDS: Final = 5
"""A ``<p>`` with at least this many words is a real paragraph (not "Loading...")."""
ARTICLE_PARAGRAPHS: Final = 3
ARTICLE_PARAGRAPH_WORDS: Final = 25
"""A 2xx page with this many ``<p>`` of at least this many words is an article: the built-in
phrases do not judge it (an article on fixing "Access Denied" errors is kept); a vendor's
marks and the caller's own phrases still do. Block pages say their one thing in a paragraph
or two."""

RENDERABLE_REASONS: Final = frozenset({"js_challenge", "needs_js", "only_scripts"})

_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
_NO_CONTENT: Final = frozenset({204, 205})
# Error statuses that anti-bot services answer with (AWS WAF's CAPTCHA is a 405, Google's
# /sorry a 429, Cloudflare's challenges a 403 or 503): their bodies are judged for a vendor.
REFUSAL_STATUSES: Final = frozenset({401, 403, 405, 429, 503})
_TITLE: Final = re.compile(rb"<title\b[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)
_TITLE_SCAN: Final = 65_536  # block pages put their title near the top
_REASON: Final = re.compile(r"[a-z0-9_]+")
# Scripts written without spaces between words: Thai, Lao, Myanmar, Khmer, kana, CJK ideographs.
_UNSPACED: Final = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\uff66-\uff9f]"
)


class VerdictStatus(StrEnum):
    """``ok``: content; ``soft``: rejected, the host not at fault; ``hard``: the host refuses us."""

    OK = "ok"
    SOFT = "soft"
    HARD = "hard"


@dataclass(slots=True, frozen=True)
class Verdict:
    """What :func:`validate_response` concluded about one response.

    ``reason`` is ``None`` for ``ok`` and a stable token otherwise (see the module docstring);
    ``detail`` is human text: the phrase matched, or the size or word count that failed.
    """

    status: VerdictStatus
    reason: str | None
    detail: str | None = None
    vendor: str | None = None

    @property
    def label(self) -> str | None:
        """The reason with the vendor that served the page: ``"bot_check:cloudflare"``."""
        if self.reason is None or self.vendor is None:
            return self.reason
        return f"{self.reason}:{self.vendor}"

    @property
    def needs_render(self) -> bool:
        """Whether a browser may turn this rejected page into content (a soft JS verdict)."""
        return self.status is VerdictStatus.SOFT and self.reason in RENDERABLE_REASONS


_OK: Final = Verdict(VerdictStatus.OK, None)


@dataclass(slots=True, frozen=True)
class Signature:
    """A phrase that marks a page as a block or challenge page.

    ``phrase`` is matched case-insensitively (white space collapsed) in the title and the
    lead of a short page's visible text. ``Signature.parse`` reads the ``status:reason:phrase``
    form a setting holds:

    >>> signature = Signature.parse("hard:bot_check:Pardon  Our Interruption")
    >>> signature.phrase, signature.status, signature.reason
    ('pardon our interruption', <VerdictStatus.HARD: 'hard'>, 'bot_check')
    """

    phrase: str
    status: VerdictStatus
    reason: str

    def __post_init__(self) -> None:
        phrase = " ".join(self.phrase.lower().split())
        if not phrase:
            raise ValueError("a signature needs a phrase")
        if self.status is VerdictStatus.OK:
            raise ValueError("a signature's status is soft or hard")
        if not _REASON.fullmatch(self.reason):
            raise ValueError(f"a reason is a lower-case token, not {self.reason!r}")
        object.__setattr__(self, "phrase", phrase)

    @classmethod
    def parse(cls, spec: str) -> Signature:
        """``"soft:needs_js:please turn on javascript"`` -> a Signature; ValueError if malformed."""
        status, _, rest = spec.partition(":")
        reason, _, phrase = rest.partition(":")
        try:
            verdict_status = VerdictStatus(status.strip().lower())
        except ValueError:
            raise ValueError(f"{spec!r}: the status is 'soft' or 'hard'") from None
        return cls(phrase, verdict_status, reason.strip())


def _signatures(status: VerdictStatus, reason: str, *phrases: str) -> list[Signature]:
    return [Signature(phrase, status, reason) for phrase in phrases]


_HARD, _SOFT = VerdictStatus.HARD, VerdictStatus.SOFT
DEFAULT_SIGNATURES: Final = tuple(
    # Hard first: a block page may also ask for JavaScript or cookies; "403 Forbidden" pages
    # often add "you don't have permission to access". Rate limits first of all: Cloudflare's
    # 1015 page is titled "Access denied" too.
    _signatures(
        _HARD, "rate_limited", "you are being rate limited", "error 1015", "too many requests"
    )
    + _signatures(
        _HARD,
        "bot_check",
        "you have been blocked",
        "attention required! | cloudflare",
        "complete the security check to access",
        "pardon our interruption",
        "confirm you are a human",
        "verify you are a human",
        "verify you are human",
        "unusual traffic from your computer network",
        "incapsula incident id",
    )
    + _signatures(
        _HARD, "forbidden", "403 forbidden", "403 - forbidden", "403: forbidden", "error 403"
    )
    + _signatures(
        _HARD,
        "access_denied",
        "access denied",
        "access is denied",
        "access to this page has been denied",
        "you don't have permission to access",
        "you do not have permission to access",
    )
    + _signatures(
        _SOFT,
        "js_challenge",
        "checking your browser",
        "checking if the site connection is secure",
        "verifying you are human",
        "ddos protection by",
        "please wait while we verify",
    )
    + _signatures(
        _SOFT,
        "needs_js",
        "enable javascript",
        "javascript is required",
        "javascript is disabled",
        "javascript must be enabled",
        "requires javascript",
        "turn on javascript",
        "javascript needs to be enabled",
        "enable js",
    )
)
_NEEDS_JS: Final = tuple(s for s in DEFAULT_SIGNATURES if s.reason == "needs_js")


class Validator:
    """The configured garbage filter the crawler holds; :meth:`validate` judges one response.

    ``min_bytes``: bodies under this size must carry a real paragraph (the spec's 500 bytes).
    ``extra_patterns``: more :class:`Signature` s (or ``status:reason:phrase`` strings), checked
    before the built-in ones. Settings are resolved by the caller; the object is immutable
    and shared by all tasks.
    """

    __slots__ = ("extra_phrases", "min_bytes", "signatures")

    def __init__(
        self, min_bytes: int = 500, extra_patterns: Iterable[Signature | str] = ()
    ) -> None:
        if min_bytes < 0:
            raise ValueError(f"min_bytes must not be negative, not {min_bytes}")
        self.min_bytes = min_bytes
        extra = [p if isinstance(p, Signature) else Signature.parse(p) for p in extra_patterns]
        self.extra_phrases = frozenset(signature.phrase for signature in extra)
        self.signatures: tuple[Signature, ...] = (*extra, *DEFAULT_SIGNATURES)

    def validate(
        self, status: int, headers: Mapping[str, str], body: bytes, text: str | None = None
    ) -> Verdict:
        """Judge a response; ``text`` is its visible text when the caller already has it.

        Only 2xx responses with an HTML body are judged (``Content-Type`` ``text/html`` or
        ``application/xhtml+xml``, or untyped and sniffed as HTML; 204 and 205 have no body);
        anything else is ``ok``: the fetch layer records it as it is. ``text`` must be the
        page's visible text as :func:`harvestman.parse.parse_html` makes it (``Page.text``);
        without it the body is parsed here. The first rule that matches decides:

        1. Phrases (the signatures, in order): when the visible text has at most
           ``PHRASE_TEXT_LIMIT`` (2,000) characters and a phrase is in the ``<title>`` or the
           first ``PHRASE_LEAD`` (400) characters of the text -> that signature's verdict.
        2. At least ``MIN_WORDS`` (20) words of visible text (as :func:`count_words` counts
           them: Chinese or Japanese text has no spaces) -> ``ok``.
        3. A real paragraph, a ``<p>`` of at least ``SENTENCE_WORDS`` (5) words -> ``ok``: a
           short note is a page, even under ``min_bytes``.
        4. A ``<script>`` -> soft ``needs_js`` if a ``<noscript>`` asks for JavaScript, else
           soft ``only_scripts``.
        5. A body under ``min_bytes`` -> soft ``too_small``.
        6. No ``<p>`` with any text -> soft ``no_text``.
        7. Otherwise ``ok`` (a page of ``min_bytes`` or more with a short paragraph).

        So a 300-byte page with a paragraph of a sentence is kept, and a 200-byte empty shell
        is ``too_small``. With ``text`` given, a page of more than 2,000 characters of text
        costs a length check; only pages of fewer than 20 words are parsed again.
        """
        if status in _NO_CONTENT:
            return _OK
        if not 200 <= status < 300:
            if status not in REFUSAL_STATUSES:
                return _OK
            return self._judge_refusal(status, headers, body)
        content_type = headers.get("Content-Type")
        if content_type is None:
            content_type = header_value(headers, "content-type")
        mime, charset = parse_content_type(content_type)
        if not (mime in _HTML_TYPES if mime else looks_like_html(body)):
            return _OK
        title: str | None = None
        if text is None:
            parsed = LexborHTMLParser(decode_html(body, charset)[0])
            title_node = parsed.css_first("title")
            title = title_node.text() if title_node is not None else ""
            text = _text_of(parsed)
        if len(text) > PHRASE_TEXT_LIMIT:
            return _OK
        if title is None:
            title = _title_of(body)
        phrased = self._match(" ".join(title.split()), text[:PHRASE_LEAD])
        if (
            phrased is not None
            and phrased.detail not in self.extra_phrases
            and _reads_as_article(body, charset)
        ):
            phrased = None
        verdict = self._attribute(phrased, headers, body)
        if verdict is not None:
            return verdict
        words = count_words(text)
        if words >= MIN_WORDS:
            return _OK
        # Parsed (again) for its scripts, read before they are stripped: only short pages get here.
        tree = LexborHTMLParser(decode_html(body, charset)[0])
        scripts = _scripts_of(tree)
        tree.strip_tags(_HIDDEN)
        return self._judge_structure(tree, scripts, len(body), words)

    def _judge_refusal(self, status: int, headers: Mapping[str, str], body: bytes) -> Verdict:
        """An error response that anti-bot services use: a vendor's mark or a block phrase
        decides; a 403 without either is a plain refusal (hard ``forbidden``). A soft verdict
        stands only for a challenge (a browser passes it); "enable JavaScript" on a 403 page
        is still a refusal."""
        phrased: Verdict | None = None
        mime, charset = parse_content_type(header_value(headers, "content-type"))
        if body and (mime in _HTML_TYPES if mime else looks_like_html(body)):
            tree = LexborHTMLParser(decode_html(body[:_TITLE_SCAN], charset)[0])
            title_node = tree.css_first("title")
            title = title_node.text() if title_node is not None else ""
            text = _text_of(tree)
            if len(text) <= PHRASE_TEXT_LIMIT:
                phrased = self._match(" ".join(title.split()), text[:PHRASE_LEAD])
        verdict = self._attribute(phrased, headers, body)
        if verdict is not None and (
            verdict.status is VerdictStatus.HARD or verdict.reason == "js_challenge"
        ):
            return verdict
        if status == 403:
            return Verdict(VerdictStatus.HARD, "forbidden", "HTTP 403", served_by(headers))
        return _OK

    def _match(self, title: str, lead: str) -> Verdict | None:
        haystack = f"{title}\n{lead}".lower()
        for signature in self.signatures:
            if signature.phrase in haystack:
                return Verdict(signature.status, signature.reason, signature.phrase)
        return None

    def _attribute(
        self, phrased: Verdict | None, headers: Mapping[str, str], body: bytes
    ) -> Verdict | None:
        """The phrases' verdict weighed with the vendor's mark on the body and headers; the
        caller's own signatures (``extra_patterns``) decide over the marks."""
        mark = identify(headers, body[:HEAD_BYTES].lower())
        if phrased is not None and mark is not None and phrased.detail in self.extra_phrases:
            return replace(phrased, vendor=mark.vendor)
        return _attributed(phrased, mark, headers)

    def _judge_structure(
        self, tree: LexborHTMLParser, scripts: _Scripts, size: int, words: int
    ) -> Verdict:
        """Rules 3-7 for a page of fewer than ``MIN_WORDS`` words (``tree`` already stripped)."""
        paragraph_words = [count_words(node.text(separator=" ")) for node in tree.css("p")]
        if any(count >= SENTENCE_WORDS for count in paragraph_words):
            return _OK
        if scripts.product or (scripts.server_rendered and words >= SENTENCE_WORDS):
            return _OK
        script_count, noscript = scripts.count, scripts.noscript
        if script_count:
            for signature in _NEEDS_JS:
                if signature.phrase in noscript:
                    return Verdict(
                        VerdictStatus.SOFT, "needs_js", f"<noscript>: {signature.phrase}"
                    )
            return Verdict(
                VerdictStatus.SOFT,
                "only_scripts",
                f"{script_count} scripts, {words} words of text",
            )
        if size < self.min_bytes:
            return Verdict(
                VerdictStatus.SOFT, "too_small", f"{size} bytes < {self.min_bytes}, {words} words"
            )
        if not any(paragraph_words):
            return Verdict(VerdictStatus.SOFT, "no_text", f"{words} words, no paragraph text")
        return _OK


def validate_response(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    min_bytes: int = 500,
    text: str | None = None,
) -> Verdict:
    """Judge one response with the built-in signatures: see :meth:`Validator.validate`.

    >>> verdict = validate_response(200, {"Content-Type": "text/html"}, b"<title>Access Denied")
    >>> verdict.status, verdict.reason, verdict.detail, verdict.vendor
    (<VerdictStatus.HARD: 'hard'>, 'access_denied', 'access denied', None)
    >>> validate_response(403, {"Server": "cloudflare"}, b"<title>Access Denied</title>").label
    'access_denied:cloudflare'
    >>> validate_response(404, {}, b"<title>Access Denied</title>").status
    <VerdictStatus.OK: 'ok'>
    """
    return Validator(min_bytes=min_bytes).validate(status, headers, body, text)


def count_words(text: str) -> int:
    """Runs of non-space characters, plus one per two characters of a script written without
    spaces (Chinese, Japanese, Thai...), whose sentence would otherwise count as one word.

    >>> count_words("Closed on Monday."), count_words("これは日本語のページです。")
    (3, 7)
    """
    words = len(text.split())
    if not text.isascii():
        words += (len(text) - len(_UNSPACED.sub("", text))) // 2
    return words


def _attributed(
    phrased: Verdict | None, mark: BlockMark | None, headers: Mapping[str, str]
) -> Verdict | None:
    """The verdict of a page's phrases and of a vendor's mark on it, with the vendor.

    The harder one decides (a CAPTCHA that also says "checking your browser" is a CAPTCHA);
    of two equal ones, the phrase's detail is kept when they agree on the reason, else the
    mark (it knows the vendor's page). A phrase alone is credited to the vendor that served
    the page (``Server: cloudflare``) when it is a refusal or a challenge.
    """
    if mark is None:
        if phrased is None or not (
            phrased.status is VerdictStatus.HARD or phrased.reason == "js_challenge"
        ):
            return phrased
        vendor = served_by(headers)
        return phrased if vendor is None else replace(phrased, vendor=vendor)
    marked = Verdict(
        VerdictStatus.HARD if mark.hard else VerdictStatus.SOFT,
        mark.reason,
        mark.detail,
        mark.vendor,
    )
    if phrased is None or (mark.hard and phrased.status is VerdictStatus.SOFT):
        return marked
    if phrased.status is not marked.status or phrased.reason == marked.reason:
        return replace(phrased, vendor=mark.vendor)  # a hard phrase on a vendor's challenge
    return marked


@dataclass(slots=True, frozen=True)
class _Scripts:
    """What a page's scripts say about it, read before they are stripped.

    ``noscript``: the ``<noscript>`` text (lower-case, collapsed); ``server_rendered``: a
    framework's hydration payload (Next.js, Nuxt), so the text beside it is the page's;
    ``product``: structured data (JSON-LD or microdata) describes a schema.org Product.
    """

    count: int
    noscript: str
    server_rendered: bool
    product: bool


_HYDRATION: Final = "script#__NEXT_DATA__, script#__NUXT_DATA__, [data-server-rendered]"
_JSON_LD: Final = 'script[type="application/ld+json"]'
_PRODUCT_TYPE: Final = re.compile(r'"@type"\s*:\s*(?:\[[^\]]*)?"(?:https?://schema\.org/)?Product"')


def _scripts_of(tree: LexborHTMLParser) -> _Scripts:
    """The page's scripts, its ``<noscript>`` text and its hydration and product data."""
    noscript = " ".join(node.text(separator=" ") for node in tree.css("noscript"))
    product = tree.css_first('[itemtype$="schema.org/Product"]') is not None or any(
        _PRODUCT_TYPE.search(node.text()) for node in tree.css(_JSON_LD)
    )
    return _Scripts(
        len(tree.css("script")),
        " ".join(noscript.lower().split()),
        tree.css_first(_HYDRATION) is not None,
        product,
    )


def _reads_as_article(body: bytes, charset: str | None) -> bool:
    """Whether the page has ``ARTICLE_PARAGRAPHS`` paragraphs of ``ARTICLE_PARAGRAPH_WORDS``
    words (parsed again: only short pages whose title or lead holds a phrase get here)."""
    tree = LexborHTMLParser(decode_html(body, charset)[0])
    long_paragraphs = 0
    for node in tree.css("p"):
        if count_words(node.text(separator=" ")) >= ARTICLE_PARAGRAPH_WORDS:
            long_paragraphs += 1
            if long_paragraphs >= ARTICLE_PARAGRAPHS:
                return True
    return False


def _text_of(tree: LexborHTMLParser) -> str:
    """The visible text exactly as :func:`harvestman.parse.parse_html` makes it; strips ``tree``."""
    tree.strip_tags(_HIDDEN)
    body = tree.body
    if body is None:
        return ""
    return _visible_text(body.text(separator=" ", strip=True, skip_empty=True))


def _title_of(body: bytes) -> str:
    """The ``<title>`` text from the raw body (the caller gave the text, not the tree)."""
    match = _TITLE.search(body, 0, _TITLE_SCAN)
    if match is None:
        return ""
    return html.unescape(match.group(1).decode("utf-8", "replace"))
