"""SimHash fingerprints of page text, and a per-host index that finds near-duplicates.

A page's fingerprint is a 64-bit SimHash (Charikar) of its word 3-grams: two texts that share
most of their 3-grams have fingerprints a few bits apart, unrelated texts about 32 bits apart.
A page within Hamming distance 3 of an earlier page of the same host is a near-duplicate of
it. :class:`NearDuplicateIndex` finds such a page among thousands in a few dictionary
look-ups (four 16-bit bands: two fingerprints at most 3 bits apart agree on at least one
band), and forgets the least recently used pages past its cap.

The fingerprint runs for every page, so it is computed by a compiled kernel
(``harvestman._simhash``, built from ``_simhash.c`` at install time): about 5 µs for an 8 KB
sample. Where it could not be built (no C compiler), the numpy version (simhash_numpy.py,
imported only then) gives the same values in a few dozen array operations; per-word Python
work would cost more than the whole budget (2,500 words x 30 ns), and inside a crawl the numpy
calls cost 150-200 µs a page (cache-cold dispatch), which is why the kernel exists.
Fingerprints are stable: the same text gives the same value on every machine and in every
process, so they can be stored and compared later; a database keeps them in a signed 64-bit
column through :func:`to_signed64`.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

try:
    from harvestman._simhash import simhash64_utf8 as _kernel
except ImportError:  # built without a C compiler: the numpy version (simhash_numpy.py)
    _kernel = None

__all__ = [
    "COMPILED",
    "MAX_DISTANCE",
    "NearDuplicateIndex",
    "from_signed64",
    "hamming",
    "simhash64",
    "to_signed64",
]

MAX_DISTANCE: Final = 3
"""The largest Hamming distance at which two pages are near-duplicates (and that the 4-band
index can guarantee to find)."""

_BANDS: Final = 4
_BAND_BITS: Final = 16
_BAND_MASK: Final = (1 << _BAND_BITS) - 1
_MASK64: Final = (1 << 64) - 1

COMPILED: Final = _kernel is not None
"""Whether :func:`simhash64` runs the compiled kernel (else its numpy version)."""


def simhash64(text: str) -> int:
    """The 64-bit SimHash of ``text``: an unsigned int in ``[0, 2**64)``.

    Words are runs of ASCII letters and digits and of non-ASCII characters (any other
    character separates them), with ASCII letters lower-cased: case, punctuation and spacing
    do not matter. A word is identified by its first and last 8 UTF-8 bytes (exactly, up to 16
    bytes). The features are the word 3-grams, each hashed to 64 bits and mixed by the
    splitmix64 finalizer; bit ``i`` of the fingerprint is set when more than half of the
    features have it set. A text of one or two words is one feature; a text without words
    is ``0``.

    >>> simhash64("The quick brown fox") == simhash64("the QUICK, brown... fox!")
    True
    >>> simhash64(""), simhash64("?!")
    (0, 0)
    """
    data = text.encode("utf-8", "surrogatepass")
    if _kernel is not None:
        return int(_kernel(data))
    return _simhash64_numpy(data)


def _simhash64_numpy(utf8: bytes) -> int:
    """:func:`simhash64` of UTF-8 text in numpy: the reference the compiled kernel matches.

    numpy is imported here, on first use, not with this module: it is 22 MB of a crawl's
    resident memory (its libraries and OpenBLAS's threads) that the kernel never needs.
    """
    from harvestman.simhash_numpy import simhash64_numpy

    return simhash64_numpy(utf8)


def sample_text(text: str, max_chars: int = 8192) -> str:
    """At most ``max_chars`` of ``text`` to fingerprint: all of a short text; of a longer one,
    three windows (its start, middle and end) cut at word boundaries.

    SimHash costs time in proportion to the text; near-duplicates still share nearly every
    shingle of these windows, while a page that differs only past its opening is not taken for
    a copy of another (as a prefix alone would).

    >>> sample_text("a b c", 100)
    'a b c'
    >>> len(sample_text("word " * 10_000, 300)) <= 300
    True
    """
    if len(text) <= max_chars:
        return text
    size = max_chars // 3
    windows = []
    for start in (0, (len(text) - size) // 2, len(text) - size):
        window = text[start : start + size]
        if start:  # begin on a word boundary
            window = window[window.find(" ") + 1 :]
        if start + size < len(text):  # end on one
            window = window[: window.rfind(" ")]
        windows.append(window)
    return " ".join(windows)


def hamming(a: int, b: int) -> int:
    """The number of bits in which two fingerprints differ.

    >>> hamming(0b1011, 0b0001), hamming(-1, 0)
    (2, 64)
    """
    return ((a ^ b) & _MASK64).bit_count()


def to_signed64(value: int) -> int:
    """An unsigned 64-bit fingerprint as the signed value of the same 64 bits (for a BIGINT).

    >>> to_signed64(2**64 - 1), to_signed64(5)
    (-1, 5)
    """
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


def from_signed64(value: int) -> int:
    """The inverse of :func:`to_signed64`.

    >>> from_signed64(-1) == 2**64 - 1, from_signed64(to_signed64(2**63)) == 2**63
    (True, True)
    """
    return value & _MASK64


class NearDuplicateIndex:
    """The fingerprints of one host's pages; finds an earlier page near a new one.

    Holds at most ``max_docs`` pages; past that the least recently used one (added or found
    as a near-duplicate the longest time ago) is forgotten. Memory is about 300 bytes per
    page plus the ``doc_id`` strings. ``max_distance`` (at most 3, the default) is the largest
    Hamming distance that counts as near.

    >>> index = NearDuplicateIndex(max_docs=100)
    >>> a = simhash64("one two three four five six seven eight nine ten " * 20)
    >>> index.add("a", a), index.add("b", a ^ 0b101), index.add("c", a ^ 0xFFFF0000)
    (None, 'a', None)
    """

    __slots__ = ("_bands", "_docs", "max_distance", "max_docs")

    def __init__(self, max_docs: int = 10_000, max_distance: int = MAX_DISTANCE) -> None:
        if max_docs < 1:
            raise ValueError(f"max_docs must be at least 1, not {max_docs}")
        if not 0 <= max_distance <= MAX_DISTANCE:
            raise ValueError(f"max_distance must be within 0..{MAX_DISTANCE}, not {max_distance}")
        self.max_docs = max_docs
        self.max_distance = max_distance
        self._docs: OrderedDict[str, int] = OrderedDict()  # doc_id -> fingerprint, LRU first
        # One dict per band: band value -> the doc_id, or a list of them when several share it
        # (a list per page would double the memory of an index where most bands are unique).
        self._bands: tuple[dict[int, str | list[str]], ...] = tuple({} for _ in range(_BANDS))

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    def add(self, doc_id: str, fingerprint: int) -> str | None:
        """The id of an earlier page within ``max_distance`` of ``fingerprint``, else ``None``.

        With a match, the page is not added (its original stands for it) and the original
        becomes the most recently used; the nearest match is returned (among equally near
        ones, the first found). Without one, the page is added, forgetting the least recently
        used page when the index is full. Adding a ``doc_id`` that is already indexed (a
        re-crawl) replaces its fingerprint: a page is never its own duplicate.
        """
        fingerprint &= _MASK64
        if doc_id in self._docs:
            self._remove(doc_id)
        match = self._nearest(fingerprint)
        if match is not None:
            self._docs.move_to_end(match)
            return match
        self._docs[doc_id] = fingerprint
        for band, value in zip(self._bands, _band_values(fingerprint), strict=True):
            held = band.get(value)
            if held is None:
                band[value] = doc_id
            elif isinstance(held, str):
                band[value] = [held, doc_id]
            else:
                held.append(doc_id)
        if len(self._docs) > self.max_docs:
            self._remove(next(iter(self._docs)))
        return None

    def find(self, fingerprint: int) -> str | None:
        """The nearest indexed page within ``max_distance``, without adding or touching it."""
        return self._nearest(fingerprint & _MASK64)

    def discard(self, doc_id: str) -> None:
        """Forget ``doc_id`` if it is indexed."""
        if doc_id in self._docs:
            self._remove(doc_id)

    def _nearest(self, fingerprint: int) -> str | None:
        docs = self._docs
        best: str | None = None
        best_distance = self.max_distance + 1
        for band, value in zip(self._bands, _band_values(fingerprint), strict=True):
            held = band.get(value)
            if held is None:
                continue
            for candidate in (held,) if isinstance(held, str) else held:
                distance = (docs[candidate] ^ fingerprint).bit_count()
                if distance < best_distance:
                    best, best_distance = candidate, distance
                    if distance == 0:
                        return best
        return best

    def _remove(self, doc_id: str) -> None:
        fingerprint = self._docs.pop(doc_id)
        for band, value in zip(self._bands, _band_values(fingerprint), strict=True):
            held = band[value]
            if isinstance(held, str):
                del band[value]
            else:
                held.remove(doc_id)
                if len(held) == 1:
                    band[value] = held[0]


def _band_values(fingerprint: int) -> tuple[int, int, int, int]:
    return (
        fingerprint & _BAND_MASK,
        (fingerprint >> 16) & _BAND_MASK,
        (fingerprint >> 32) & _BAND_MASK,
        fingerprint >> 48,
    )
