"""The URLs this process has already sent to the frontier: a bounded cache, not the truth.

The store's unique index on ``(crawl_id, url_hash)`` decides what is new; this cache only
spares it the links a crawl meets again and again (nav bars, footers, pages linking to each
other). It keeps 60 bits of each normalized URL's own string hash (which a set lookup of the
string computes anyway, once per string), not the string nor its SHA-256: a link found here
is not hashed again, and most links of a page are found here. Full, the default 400,000 keys
take 31 MB, where 250,000 strings took 28 (tracemalloc's peak, on URLs like the 200,000-page
benchmark's, 34 characters), and hold that crawl's URLs whole: with 250,000 strings, 1.27
million links went to the store for its 202,000 rows.
Two URLs share a key with a chance of 2^-60 a pair, so a new URL is taken for one already
seen (and not sent to the store) with a chance of at most capacity / 2^60 a link: about 3 in
10^13 for the default.

Two generations bound it: new URLs go into the young set; when that holds half the capacity
it becomes the old one and the previous old set is dropped. A URL met in the old set moves to
the young one, so what a crawl keeps meeting stays (an approximate LRU at the cost of a set
lookup). At most ``capacity`` URLs are held, whatever the crawl's size; what fell out goes to
the store again, which ignores it.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["SeenCache"]

# A key under 2^60 is a two-digit int: 32 bytes, where 64 bits would take 48.
_KEY_BITS = (1 << 60) - 1


class SeenCache:
    """At most ``capacity`` recently seen URLs (0: none, every URL goes to the store).

    >>> cache = SeenCache(4)
    >>> cache.fresh(["a", "b", "a"]), cache.fresh(["b", "c"])
    (['a', 'b'], ['c'])
    >>> "b" in cache, len(cache) <= 4
    (True, True)
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._generation = max(1, capacity // 2)
        self._young: set[int] = set()
        self._old: set[int] = set()

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def __contains__(self, url: object) -> bool:
        key = hash(url) & _KEY_BITS
        return key in self._young or key in self._old

    def add(self, url: str) -> None:
        if self.capacity:
            self._young.add(hash(url) & _KEY_BITS)
            if len(self._young) >= self._generation:
                self._age()

    def fresh(self, urls: Iterable[str]) -> list[str]:
        """The URLs not seen before, in order, each once; all of them are then seen."""
        if not self.capacity:
            return list(dict.fromkeys(urls))
        young, old = self._young, self._old
        found: list[str] = []
        for url in urls:
            key = hash(url) & _KEY_BITS
            if key in young:
                continue
            young.add(key)
            if key not in old:
                found.append(url)
        if len(young) >= self._generation:
            self._age()
        return found

    def _age(self) -> None:
        self._old = self._young
        self._young = set()
