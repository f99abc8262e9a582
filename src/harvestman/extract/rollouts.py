"""Parser rollouts: a new version of a site parser on a share of a domain's pages.

Several versions of one parser (same ``name``) may be loaded. Without a rollout only the first
loaded runs. A :class:`~harvestman.records.ParserRollout` names the candidate version and its
share of a domain's pages; the first other loaded version (the stable one) parses the rest. A
page's side is fixed by a hash of the parser's name and the page's URL, the same in every
process and every crawl, and a page on the candidate's side stays there while the share
grows, so per-version success rates compare like with like and a promotion only adds pages.

>>> in_share("acme", "https://a.test/p/1", 0.0), in_share("acme", "https://a.test/p/1", 1.0)
(False, True)
>>> table = RolloutTable.of([ParserRollout("acme", "2", 0.25, "shop.test")])
>>> table.rollout("acme", "www.shop.test").version, table.rollout("acme", "other.test")
('2', None)
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Final, Protocol, TypeVar

from harvestman.records import EVERY_DOMAIN, ParserRollout, parse_rollout

__all__ = ["EVERY_DOMAIN", "RolloutTable", "in_share", "parse_rollout"]

_SCALE: Final = float(2**64)


class _Versioned(Protocol):
    @property
    def version(self) -> str: ...


P = TypeVar("P", bound=_Versioned)


def in_share(parser: str, url: str, share: float) -> bool:
    """Whether ``url`` falls in the first ``share`` of ``parser``'s pages (by hash)."""
    if share <= 0.0:
        return False
    if share >= 1.0:
        return True
    digest = hashlib.sha256(f"{parser}\0{url}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE < share


class RolloutTable:
    """Rollouts by parser and domain; a host takes the rollout of its own name, else of its
    nearest parent domain (``shop.test`` for ``www.shop.test``), else ``"*"``'s."""

    def __init__(self, rollouts: dict[tuple[str, str], ParserRollout]) -> None:
        self._rollouts = rollouts
        self._parsers = {parser for parser, _ in rollouts}

    @classmethod
    def of(cls, rollouts: Iterable[ParserRollout]) -> RolloutTable:
        """The table of ``rollouts``; a later one for the same parser and domain wins."""
        return cls({(r.parser, r.domain): r for r in rollouts})

    def __bool__(self) -> bool:
        return bool(self._rollouts)

    def rollout(self, parser: str, host: str) -> ParserRollout | None:
        if parser not in self._parsers:
            return None
        name = host
        while True:
            found = self._rollouts.get((parser, name))
            if found is not None:
                return found
            dot = name.find(".")
            if dot < 0:
                return self._rollouts.get((parser, EVERY_DOMAIN))
            name = name[dot + 1 :]

    def choose(self, name: str, versions: Sequence[P], url: str, host: str) -> P:
        """The version of parser ``name`` (``versions`` in loading order) that parses ``url``."""
        rollout = self.rollout(name, host)
        if rollout is None:
            return versions[0]
        candidate = next((v for v in versions if v.version == rollout.version), None)
        stable = next((v for v in versions if v.version != rollout.version), versions[0])
        if candidate is not None and in_share(name, url, rollout.share):
            return candidate
        return stable
