"""The search box: what a user types, parsed into terms no input can turn into FTS syntax.

The language is small and the same on both stores:

- words are required (AND): ``red shoes``;
- ``"a quoted phrase"`` must appear as written;
- ``a OR b`` (upper-case ``OR``) accepts either side;
- ``-word`` or ``-"a phrase"`` excludes pages that contain it.

Everything else is text: ``AND``, ``NOT``, ``NEAR(``, ``*``, ``:``, ``^`` and unbalanced quotes are
matched as the words they contain (or ignored when they contain none), never read as operators.
A term without a letter or digit matches nothing and is dropped, so a query of punctuation alone is
empty, and an empty query finds nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice

from harvestman.errors import QueryError

MAX_TERMS = 16  # bounds the work of one query: more terms are ignored
MAX_TERM_CHARS = 200
MAX_QUERY_CHARS = 1000
MARK_START, MARK_END = "\x02", "\x03"
"""What a snippet wraps a matched word in. Control characters, so they never collide with page
text: the API turns them into ``<mark>`` after escaping, the terminal into a style."""

_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_WORD = re.compile(r"\w+")
_CHUNK = re.compile(r"\S+")
_CONTROLS = dict.fromkeys(range(32), " ")
_NO_MARKS = dict.fromkeys((ord(MARK_START), ord(MARK_END)), " ")
SNIPPET_SCAN_CHARS = 100_000  # the indexes read no further into a text (migration 0006)


def phrase_words(phrase: str) -> list[str]:
    """The words of a phrase (runs of word characters), as both stores' parsers split it.

    >>> phrase_words("heat-pump, 2 kW"), has_several_words("heat pump")
    (['heat', 'pump', '2', 'kW'], True)
    """
    return _WORD.findall(phrase)


def has_several_words(phrase: str) -> bool:
    """Whether a phrase asks for words as neighbours (a single word does not)."""
    return len(_WORD.findall(phrase)) > 1


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query: every group must match (one of its phrases), no excluded phrase may.

    >>> parse_query('solar OR wind "heat pump" -diesel')
    Query(groups=(('solar', 'wind'), ('heat pump',)), excluded=('diesel',))
    """

    groups: tuple[tuple[str, ...], ...]
    excluded: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        """True when nothing is required: such a query finds nothing."""
        return not self.groups

    @property
    def words(self) -> tuple[str, ...]:
        """The words a matching page contains, lower-cased, for highlighting."""
        seen: dict[str, None] = {}
        for group in self.groups:
            for phrase in group:
                seen.update((w.casefold(), None) for w in _WORD.findall(phrase))
        return tuple(seen)


def parse_query(q: str) -> Query:
    """Parse a search box's text; never raises and never returns operator syntax.

    >>> parse_query('AND NEAR( * "x')
    Query(groups=(('AND',), ('NEAR',), ('x',)), excluded=())
    >>> parse_query('!!! -- ""').is_empty
    True
    """
    # A lone surrogate (JSON allows "\ud800") cannot be encoded for the database, nor a NUL
    # stored by PostgreSQL: neither is a word.
    q = q.encode("utf-8", "replace").decode("utf-8").translate(_CONTROLS)
    groups: list[list[str]] = []
    excluded: list[str] = []
    join_next = False
    terms = 0
    for match in islice(_TOKEN.finditer(q), 4 * MAX_TERMS):
        negated_quote, quoted, bare = match.groups()
        if bare == "OR":
            join_next = bool(groups)
            continue
        negated = bool(negated_quote) or (bare is not None and bare.startswith("-"))
        phrase = _clean(quoted if quoted is not None else bare.lstrip("-"))
        if not phrase or terms >= MAX_TERMS:
            join_next = False
            continue
        terms += 1
        if negated:
            excluded.append(phrase)
        elif join_next:
            groups[-1].append(phrase)
        else:
            groups.append([phrase])
        join_next = False
    return Query(tuple(tuple(g) for g in groups), tuple(excluded))


def require_query(q: str) -> Query:
    """``q`` parsed, or :class:`~harvestman.errors.QueryError` saying why it cannot find
    anything: what the API and the CLI call before searching, so a user learns why.

    >>> require_query("-diesel")
    Traceback (most recent call last):
    harvestman.errors.QueryError: the query only excludes words: add a word to look for
    """
    if len(q) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is longer than {MAX_QUERY_CHARS} characters")
    query = parse_query(q)
    if query.is_empty:
        if query.excluded:
            raise QueryError("the query only excludes words: add a word to look for")
        raise QueryError("the query has no word to look for (punctuation alone is ignored)")
    return query


def _clean(term: str) -> str:
    """The term's words joined by spaces ('' when it has none).

    Both stores tokenize a phrase themselves (FTS5's unicode61, PostgreSQL's parser), so the
    words are kept with what joins them inside (``e-mail``, ``don't``) and only the edges lose
    punctuation: a term of punctuation alone would otherwise be an empty phrase, which makes
    FTS5 match nothing at all.
    """
    term = term[:MAX_TERM_CHARS]
    if not any(ch.isalnum() for ch in term):
        return ""
    return " ".join(term.split()).strip("\"'()[]{}*^:+,;.!?<>=~&|\\/")


def snippet(text: str | None, words: tuple[str, ...], *, max_words: int = 24) -> str:
    """About ``max_words`` words of ``text`` around the densest cluster of ``words``.

    Matched words are wrapped in :data:`MARK_START` / :data:`MARK_END`; an ellipsis marks a
    cut. Without a match the text's beginning is returned. The same on both stores.

    >>> snippet("one two three four five six", ("four",), max_words=3)
    '… two three \\x02four\\x03 …'
    """
    if not text:
        return ""
    pattern = _words_pattern(words)
    anchor = 0
    if pattern is not None:
        hits = list(islice(pattern.finditer(text, 0, SNIPPET_SCAN_CHARS), 256))
        if hits:
            anchor = _densest(hits, span=max_words * 6)
    lo, hi = max(0, anchor - 120), min(len(text), anchor + max_words * 24)
    spans = [m.span() for m in _CHUNK.finditer(text, lo, hi)]
    # Drop the words the slice cut in two.
    if spans and lo > 0 and spans[0][0] == lo and not text[lo - 1].isspace():
        spans.pop(0)
    if spans and hi < len(text) and spans[-1][1] == hi and not text[hi].isspace():
        spans.pop()
    if not spans:
        return ""
    at = next((i for i, (_, end) in enumerate(spans) if end > anchor), len(spans) - 1)
    chosen = spans[max(0, at - 2) :][:max_words]
    # A page's own control characters must not pass for marks.
    out = " ".join(text[start:end] for start, end in chosen).translate(_NO_MARKS)
    if pattern is not None:
        out = pattern.sub(lambda m: f"{MARK_START}{m.group(0)}{MARK_END}", out)
    if _CHUNK.search(text, 0, chosen[0][0]):
        out = "… " + out
    if _CHUNK.search(text, chosen[-1][1]):
        out += " …"
    return out


def _words_pattern(words: tuple[str, ...]) -> re.Pattern[str] | None:
    if not words:
        return None
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def _densest(hits: list[re.Match[str]], span: int) -> int:
    """The start of the match beginning the window of ``span`` characters with most words."""
    best, best_score = hits[0].start(), (0, 0)
    end = 0
    for i, hit in enumerate(hits):
        end = max(end, i)
        while end + 1 < len(hits) and hits[end + 1].start() - hit.start() <= span:
            end += 1
        window = hits[i : end + 1]
        score = (len({m.group(0).casefold() for m in window}), len(window))
        if score > best_score:
            best, best_score = hit.start(), score
    return best
