"""Site-specific parsers as plugins: what they promise, how they are found, run and counted.

A site parser knows one site's layout and turns its pages into :class:`Record` objects. It is a
class (or an instance) with a ``name``, a ``version``, the ``hosts`` it handles and a ``parse``
method (:class:`SiteParser`). It is registered either by an installed distribution, under the
entry-points group ``harvestman.parsers``::

    [project.entry-points."harvestman.parsers"]
    acme = "acme_parsers.shop:AcmeShopParser"

or by a setting listing dotted paths (``"acme_parsers.shop:AcmeShopParser"``).
:meth:`ParserRegistry.load` imports them; a plugin that fails to import, to instantiate or to
meet the contract is recorded in :attr:`ParserRegistry.failures` with its reason and skipped.
:meth:`ParserRegistry.parse` runs the parsers whose host patterns match a page, each on its
own: one that raises or returns something that is not a list of records is recorded as a
:class:`ParserFailure` and the others still run. Every record is stamped with the name and
version of the parser that made it, and the registry counts per host and parser how often a
parse found records (:class:`ParseStats`), so a site whose layout changed shows as a drop in
its success rate.

Several versions of one parser may be loaded (same ``name``, another ``version``): one of them
parses each page, picked by the registry's rollouts (:mod:`harvestman.extract.rollouts`; the
first loaded version when there is none), so a new version can run on a share of a domain's
pages beside the old one and their success rates be compared.
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import pkgutil
import re
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from importlib.metadata import entry_points as find_entry_points
from typing import Final, NamedTuple, Protocol, cast, runtime_checkable
from urllib.parse import urlsplit

import orjson

from harvestman.charset import decode_html
from harvestman.extract.rollouts import RolloutTable
from harvestman.parse import Page
from harvestman.records import ParserFailure, ParserRollout, ParserRun, Record, positional_key

__all__ = [
    "PARSERS_GROUP",
    "LoadFailure",
    "ParseResult",
    "ParseStats",
    "ParserFailure",
    "ParserRegistry",
    "ParserRun",
    "Record",
    "SiteParser",
    "StatsKey",
    "positional_key",
]

PARSERS_GROUP: Final = "harvestman.parsers"
_HOST_CACHE_SIZE: Final = 4096
_MAX_TRACEBACK: Final = 8000
# The store's column sizes (parsed_records.parser, .parser_version, .kind, .record_key).
_MAX_NAME: Final = 100
_MAX_VERSION: Final = 50
_MAX_KIND: Final = 50
_MAX_KEY: Final = 200
_logger = logging.getLogger(__name__)


@runtime_checkable
class SiteParser(Protocol):
    """The contract of a site-specific parser.

    ``name`` identifies the parser in the store and the stats (unique among loaded parsers);
    ``version`` is bumped when its output changes. ``hosts`` are the hosts it handles: a
    string is a glob matched case-insensitively against the URL's host name (no port):
    ``"shop.example.com"``, ``"*.example.com"`` (subdomains only; list ``"example.com"`` too
    for the bare name); a compiled regex must match the whole host name.

    ``parse`` gets the page's decoded HTML, its final URL and the crawler's :class:`Page`.
    It returns the records found (``[]``: a page it handles but on which it found nothing,
    which counts against its success rate), or ``None`` for a page it does not handle (the
    host's home page for a product parser, say), which is not counted. It may raise: the
    failure is recorded and the crawl goes on. A class registered by path or entry point is
    instantiated without arguments.
    """

    name: str
    version: str
    hosts: Sequence[str | re.Pattern[str]]

    def parse(self, page_html: str, url: str, page: Page) -> list[Record] | None: ...


@dataclass(frozen=True, slots=True)
class LoadFailure:
    """A plugin that could not be loaded: where it was named, and why it was skipped.

    ``source`` is ``"entry point acme = acme_parsers.shop:AcmeShopParser"`` or
    ``"setting acme_parsers.shop:AcmeShopParser"``; ``reason`` e.g.
    ``"ModuleNotFoundError: No module named 'acme_parsers'"``.
    """

    source: str
    reason: str


@dataclass(slots=True)
class ParseResult:
    """What the matching parsers made of one page: records in parser order, runs, failures."""

    records: list[Record] = field(default_factory=list)
    runs: list[ParserRun] = field(default_factory=list)
    failures: list[ParserFailure] = field(default_factory=list)


class StatsKey(NamedTuple):
    """Stats are kept per host, parser and version (a new version starts a new line)."""

    host: str
    parser: str
    version: str


@dataclass(slots=True)
class ParseStats:
    """Counts for one :class:`StatsKey`; ``attempts == successes + empty + errors``."""

    attempts: int = 0
    successes: int = 0
    empty: int = 0
    errors: int = 0
    records: int = 0
    seconds: float = 0.0

    @property
    def success_rate(self) -> float | None:
        """``successes / attempts``, ``None`` before any attempt."""
        return self.successes / self.attempts if self.attempts else None

    def add(self, other: ParseStats) -> None:
        self.attempts += other.attempts
        self.successes += other.successes
        self.empty += other.empty
        self.errors += other.errors
        self.records += other.records
        self.seconds += other.seconds


class _InvalidRecord(Exception):
    pass


class ParserRegistry:
    """The loaded site parsers: which run on a page, running them, and their success counts.

    Build it with :meth:`load` (settings paths and entry points) or directly from parser
    objects. Parsers that do not meet the :class:`SiteParser` contract, or whose name is
    already taken by another parser, are recorded in :attr:`failures` and skipped. ``clock``
    (seconds, monotonic) times each parser run. Safe to call from several threads.
    """

    def __init__(
        self,
        parsers: Iterable[object] = (),
        *,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.failures: list[LoadFailure] = []
        self.clock = clock
        self._parsers: list[tuple[SiteParser, tuple[Callable[[str], object], ...]]] = []
        self._by_name: dict[str, object] = {}
        self._versions: dict[str, list[SiteParser]] = {}
        self._multi: frozenset[str] = frozenset()  # names with several versions loaded
        self.rollouts = RolloutTable.of(())
        self._for_host: dict[str, tuple[SiteParser, ...]] = {}
        self._lock = threading.Lock()
        self._stats: dict[StatsKey, ParseStats] = {}
        self._pending: dict[StatsKey, ParseStats] = {}
        for parser in parsers:
            self.add(parser, f"object {type(parser).__name__}")

    @classmethod
    def load(
        cls,
        paths: Sequence[str] = (),
        *,
        entry_points: bool = True,
        group: str = PARSERS_GROUP,
        clock: Callable[[], float] = time.perf_counter,
    ) -> ParserRegistry:
        """The parsers named by ``paths`` (``"package.module:ParserClass"``), then those of the
        installed distributions' ``group`` entry points (unless ``entry_points`` is false).

        Never raises because of a plugin: each broken one becomes a :class:`LoadFailure`
        (also logged as a warning). The same class named twice (a setting and an entry point)
        is loaded once.
        """
        registry = cls(clock=clock)
        candidates: list[tuple[str, Callable[[], object]]] = [
            (f"setting {path}", functools.partial(pkgutil.resolve_name, path)) for path in paths
        ]
        if entry_points:
            candidates += [
                (f"entry point {point.name} = {point.value}", point.load)
                for point in find_entry_points(group=group)
            ]
        for source, resolve in candidates:
            try:
                found = resolve()
                parser = found() if isinstance(found, type) else found
            except Exception as exc:  # an import or constructor error of a plugin
                registry._failed(source, f"{type(exc).__name__}: {exc}")
                continue
            registry.add(parser, source)
        return registry

    def add(self, parser: object, source: str) -> bool:
        """Register ``parser`` (named by ``source`` in a failure); whether it was taken."""
        reason = _contract_breach(parser)
        if reason is not None:
            self._failed(source, reason)
            return False
        parser = cast(SiteParser, parser)
        versions = self._versions.setdefault(parser.name, [])
        taken = next((known for known in versions if known.version == parser.version), None)
        if taken is not None:
            if type(taken) is type(parser):
                return False  # the same parser named twice: keep the first quietly
            self._failed(source, f"the name {parser.name!r} is taken by {type(taken).__name__}")
            return False
        # Another version of a loaded parser is kept: the rollouts pick one per page.
        versions.append(parser)
        if len(versions) > 1:
            self._multi = self._multi | {parser.name}
        self._by_name.setdefault(parser.name, parser)
        self._parsers.append((parser, tuple(map(_host_matcher, parser.hosts))))
        self._for_host.clear()
        return True

    @property
    def versioned(self) -> frozenset[str]:
        """The names of parsers loaded in several versions (rollouts apply to them)."""
        return self._multi

    def set_rollouts(self, rollouts: Iterable[ParserRollout]) -> None:
        """Replace the rollouts (a later one for the same parser and domain wins)."""
        self.rollouts = RolloutTable.of(rollouts)

    @property
    def parsers(self) -> tuple[SiteParser, ...]:
        """The loaded parsers, in loading order."""
        return tuple(parser for parser, _ in self._parsers)

    def __len__(self) -> int:
        return len(self._parsers)

    def parsers_for(self, url: str) -> tuple[SiteParser, ...]:
        """The parsers whose host patterns match the host name of ``url``, in loading order."""
        host = _host_name(url)
        found = self._for_host.get(host)
        if found is None:
            found = tuple(
                parser for parser, matchers in self._parsers if any(m(host) for m in matchers)
            )
            if len(self._for_host) >= _HOST_CACHE_SIZE:
                self._for_host.clear()
            self._for_host[host] = found
        return found

    def parse(
        self, html: bytes | str, url: str, page: Page, *, charset: str | None = None
    ) -> ParseResult:
        """Run every parser matching ``url``'s host on the page; never raises for a parser.

        A bytes ``html`` is decoded once (:func:`harvestman.charset.decode_html` with
        ``charset``, the HTTP label) and only when some parser matches. Records come back
        stamped with their parser's name and version; the run of each parser is counted in
        the stats under ``(host, parser, version)``.
        """
        result = ParseResult()
        parsers = self.parsers_for(url)
        if not parsers:
            return result
        host = _host_name(url)
        if self._multi:
            parsers = tuple(self._one_version_each(parsers, url, host))
        text = html if isinstance(html, str) else decode_html(bytes(html), charset)[0]
        for parser in parsers:
            name, version = parser.name, parser.version
            started = self.clock()
            try:
                returned = parser.parse(text, url, page)
                records = None if returned is None else _checked(returned, name, version)
            except Exception as exc:  # the plugin's bug, recorded; the other parsers still run
                seconds = self.clock() - started
                kind = "InvalidRecord" if isinstance(exc, _InvalidRecord) else type(exc).__name__
                result.failures.append(
                    ParserFailure(
                        name, version, url, f"{kind}: {exc}"[:2000],
                        traceback.format_exc()[-_MAX_TRACEBACK:],
                    )
                )  # fmt: skip
                run = ParserRun(name, version, "error", 0, seconds)
            else:
                seconds = self.clock() - started
                if records is None:
                    continue
                result.records += records
                run = ParserRun(name, version, "ok" if records else "empty", len(records), seconds)
            result.runs.append(run)
            self._count(StatsKey(host, name, version), run)
        return result

    def _one_version_each(
        self, parsers: tuple[SiteParser, ...], url: str, host: str
    ) -> list[SiteParser]:
        """``parsers`` with one version of each name, the one its rollout picks for ``url``."""
        chosen: list[SiteParser] = []
        done: set[str] = set()
        for parser in parsers:
            name = parser.name
            if name not in self._multi:
                chosen.append(parser)
            elif name not in done:
                done.add(name)
                versions = [p for p in parsers if p.name == name]
                chosen.append(self.rollouts.choose(name, versions, url, host))
        return chosen

    def stats(self) -> dict[StatsKey, ParseStats]:
        """A copy of the counts since the registry was built."""
        with self._lock:
            return {key: replace(value) for key, value in self._stats.items()}

    def take_pending_stats(self) -> dict[StatsKey, ParseStats]:
        """The counts since the previous call (to add to the store's totals), then reset."""
        with self._lock:
            pending, self._pending = self._pending, {}
        return pending

    def _count(self, key: StatsKey, run: ParserRun) -> None:
        delta = ParseStats(
            attempts=1,
            successes=int(run.outcome == "ok"),
            empty=int(run.outcome == "empty"),
            errors=int(run.outcome == "error"),
            records=run.records,
            seconds=run.seconds,
        )
        with self._lock:
            for table in (self._stats, self._pending):
                entry = table.get(key)
                if entry is None:
                    table[key] = replace(delta)
                else:
                    entry.add(delta)

    def _failed(self, source: str, reason: str) -> None:
        _logger.warning("site parser skipped: %s: %s", source, reason)
        self.failures.append(LoadFailure(source, reason[:2000]))


def _contract_breach(parser: object) -> str | None:
    """Why ``parser`` does not meet :class:`SiteParser`, or ``None``."""
    name = getattr(parser, "name", None)
    if not isinstance(name, str) or not name.strip():
        return "no name: a parser needs a non-empty str name"
    version = getattr(parser, "version", None)
    if not isinstance(version, str) or not version.strip():
        return f"{name}: no version: a parser needs a non-empty str version"
    if len(name) > _MAX_NAME or len(version) > _MAX_VERSION:
        return f"{name[:_MAX_NAME]}: name or version too long (at most {_MAX_NAME}, {_MAX_VERSION})"
    hosts = getattr(parser, "hosts", None)
    if isinstance(hosts, str | bytes) or not isinstance(hosts, Sequence) or not hosts:
        return f"{name}: hosts must be a non-empty list of patterns, not {hosts!r}"[:300]
    for pattern in hosts:
        if not isinstance(pattern, str | re.Pattern) or not getattr(pattern, "pattern", pattern):
            return f"{name}: host pattern {pattern!r} is not a glob string or a compiled regex"
    if not callable(getattr(parser, "parse", None)):
        return f"{name}: no parse method"
    return None


def _host_matcher(pattern: str | re.Pattern[str]) -> Callable[[str], object]:
    """A test of a host name against ``pattern``; its answer is truthy when it matches."""
    if isinstance(pattern, re.Pattern):
        return pattern.fullmatch
    glob = pattern.strip().lower()
    if not any(char in glob for char in "*?["):
        return glob.__eq__
    return re.compile(fnmatch.translate(glob)).match  # translate() anchors the end


def _host_name(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


def _checked(returned: object, name: str, version: str) -> list[Record]:
    """``returned`` as a list of stamped records, or :class:`_InvalidRecord` saying why not."""
    if not isinstance(returned, list | tuple):
        raise _InvalidRecord(f"parse returned {type(returned).__name__}, not a list of Record")
    records = []
    keys: dict[str, int] = {}
    for index, record in enumerate(returned):
        if not isinstance(record, Record):
            raise _InvalidRecord(f"record {index} is a {type(record).__name__}, not a Record")
        if not isinstance(record.kind, str) or not record.kind or len(record.kind) > _MAX_KIND:
            raise _InvalidRecord(f"record {index}: kind must be a str of 1 to {_MAX_KIND} chars")
        if not isinstance(record.key, str) or len(record.key) > _MAX_KEY:
            raise _InvalidRecord(f"record {index}: key must be a str of at most {_MAX_KEY} chars")
        key = record.key or positional_key(index)
        if key in keys:
            raise _InvalidRecord(f"record {index}: key {key!r} repeats record {keys[key]}")
        keys[key] = index
        if not isinstance(record.data, dict):
            raise _InvalidRecord(f"record {index}: data is not a dict")
        stamped = replace(record, parser=name, parser_version=version)
        try:
            stamped.data_json()
        except (TypeError, orjson.JSONEncodeError) as exc:
            raise _InvalidRecord(f"record {index}: data is not JSON-serializable ({exc})") from exc
        records.append(stamped)
    return records
