"""Seeds from a file, streamed into the frontier: memory bounded by a chunk, not the file.

A seeds file may hold millions of URLs. Its lines are read lazily, ``seeds_chunk_size`` at a
time; each chunk is normalized (a bad line is handed to ``on_rejected`` with its reason, the
rest go on) and written with the store's bulk add (ON CONFLICT DO NOTHING on the URL hash: a
resume adds nothing twice). The crawl's record keeps a bounded digest of the seeds, which is
all the scope and the network guard need: the first ``crawl_seeds_kept`` seeds and, for every
distinct origin, its first seed (so every seed host joins the scope and a localhost or
IP-literal seed origin is admitted), at most ``crawl_seed_origins_max`` origins.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Protocol, TextIO

from harvestman.config import Settings
from harvestman.crawl.frontier import priority_for
from harvestman.errors import ConfigError, UrlError
from harvestman.records import NewUrl
from harvestman.store import CrawlRecords, FrontierStore
from harvestman.urls import UrlNormalizer, host_key, url_hash

log = logging.getLogger(__name__)

Rejected = Callable[[str, str], None]


class SeedStore(Protocol):
    """What loading seeds needs of a store: its crawls and its frontier (``SqlStore`` has both)."""

    @property
    def crawls(self) -> CrawlRecords: ...
    @property
    def frontier(self) -> FrontierStore: ...


def seed_lines(path: Path) -> Iterator[str]:
    """The seed lines of ``path``, read one at a time (blank lines and ``#`` comments skipped).

    The file is opened now (an unreadable one is a ConfigError at once) and read as the lines
    are taken; a line that is not UTF-8 comes with its bad bytes replaced, for the normalizer
    to reject with its reason.
    """
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ConfigError(f"cannot read seeds file {path}: {exc}") from None
    return _lines(handle, path)


def _lines(handle: TextIO, path: Path) -> Iterator[str]:
    with handle:
        try:
            for line in handle:
                seed = line.strip()
                if seed and not seed.startswith("#"):
                    yield seed
        except OSError as exc:
            raise ConfigError(f"cannot read seeds file {path}: {exc}") from None


def chunks(items: Iterable[str], size: int) -> Iterator[list[str]]:
    """``items`` in lists of ``size`` (the last one shorter), taken lazily."""
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


@dataclass
class SeedReport:
    """What a load did: URLs handed to the frontier, lines rejected, origins seen."""

    added: int = 0
    rejected: int = 0
    origins: int = 0
    out_of_scope: int = 0  # seeds whose origin came past crawl_seed_origins_max


class SeedLoader:
    """Streams seeds into crawl ``crawl_name``'s frontier (see the module's docstring).

    ``priority`` None: a seed's own priority (``priority_for(..., is_seed=True)``).
    """

    def __init__(
        self,
        settings: Settings,
        store: SeedStore,
        *,
        priority: int | None = None,
        on_rejected: Rejected | None = None,
    ) -> None:
        self.store = store
        self.crawl_name = settings.crawl_name
        self.chunk_size = settings.seeds_chunk_size
        self.kept_max = settings.crawl_seeds_kept
        self.origins_max = settings.crawl_seed_origins_max
        self.priority = priority
        self.on_rejected = on_rejected
        self.normalizer = UrlNormalizer.from_settings(settings)
        self.report = SeedReport()
        self._origins: set[str] = set()
        self._kept = 0

    async def load(self, seeds: Iterable[str], now: float) -> SeedReport:
        """Add ``seeds`` chunk by chunk; returns the running report.

        One chunk is written while the next is normalized (the store's thread and the event
        loop's overlap): at most two chunks are held at a time.
        """
        crawl_id: int | None = None
        writing: asyncio.Task[None] | None = None
        try:
            for chunk in chunks(seeds, self.chunk_size):
                rows, digest = self._rows(chunk)
                if writing is not None:
                    await writing
                    writing = None
                if not rows:
                    continue
                if crawl_id is None or digest:
                    # The record first, the rows after: a worker that leases a row has its
                    # host in scope already.
                    crawl_id = await self.store.crawls.ensure_crawl(self.crawl_name, digest)
                writing = asyncio.create_task(self.store.frontier.add_seeds(crawl_id, rows, now))
                self.report.added += len(rows)
            if writing is not None:
                await writing
        finally:
            if writing is not None and not writing.done():
                writing.cancel()
        if self.report.out_of_scope:
            log.warning(
                "%d seeds of origins beyond crawl_seed_origins_max (%d) are queued, but their "
                "hosts are not in the crawl's scope (their links are not followed)",
                self.report.out_of_scope,
                self.origins_max,
            )
        return self.report

    def _rows(self, chunk: list[str]) -> tuple[list[NewUrl], list[str]]:
        """The chunk's frontier rows and the seeds the crawl's record gains from it."""
        normalize, origins = self.normalizer.normalize, self._origins
        rows: list[NewUrl] = []
        digest: list[str] = []
        for line in chunk:
            try:
                url = normalize(line)
            except UrlError as exc:
                self.report.rejected += 1
                if self.on_rejected is not None:
                    self.on_rejected(line, exc.reason)
                continue
            host = host_key(url)
            origin = url.partition(":")[0] + "://" + host  # scheme too: the guard admits it
            if origin not in origins:
                if len(origins) < self.origins_max:
                    origins.add(origin)
                    digest.append(url)
                else:
                    self.report.out_of_scope += 1
            elif self._kept < self.kept_max:
                digest.append(url)
            if self._kept < self.kept_max:
                self._kept += 1
            priority = (
                priority_for(url, 0, is_seed=True) if self.priority is None else self.priority
            )
            row = NewUrl(url, url_hash(url), host, 0, priority)
            row.via = "seed"
            rows.append(row)
        self.report.origins = len(origins)
        return rows, digest
