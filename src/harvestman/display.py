"""What a person sees in the terminal: the live progress display and the summary tables."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from harvestman.records import CrawlCounts

if TYPE_CHECKING:
    from harvestman.crawl.crawler import Crawler


class CrawlProgress:
    """A live panel: pages, pages/s, frontier size, errors, robots denials, elapsed."""

    def __init__(self, crawler: Crawler, console: Console, refresh: float = 0.5) -> None:
        self.crawler = crawler
        self.console = console
        self.refresh = refresh
        self._live = Live(console=console, auto_refresh=False, transient=False)
        self._task: asyncio.Task[None] | None = None
        self._counts: CrawlCounts | None = None

    def start(self) -> None:
        self._live.start()
        self._task = asyncio.create_task(self._loop(), name="progress")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._live.update(self._render(), refresh=True)
        self._live.stop()

    async def _loop(self) -> None:
        tick = 0
        while True:
            if tick % 4 == 0 and self.crawler.crawl_id:
                # The store's own count, every other second: the frontier's true size.
                with contextlib.suppress(Exception):
                    self._counts = await self.crawler.store.crawls.counts(self.crawler.crawl_id)
            self._live.update(self._render(), refresh=True)
            tick += 1
            await asyncio.sleep(self.refresh)

    def _render(self) -> Table:
        stats = self.crawler.stats
        pending = "…"
        if self._counts is not None:
            by = self._counts.by_status
            pending = f"{by.get('pending', 0) + by.get('in_progress', 0):,}"
        table = Table.grid(padding=(0, 2))
        for _ in range(6):
            table.add_column(justify="right")
        table.add_row(
            "[bold]pages[/bold]", "[bold]pages/s[/bold]", "[bold]frontier[/bold]",
            "[bold]errors[/bold]", "[bold]robots denied[/bold]", "[bold]elapsed[/bold]",
        )  # fmt: skip
        table.add_row(
            f"{stats['fetch/pages']:,}",
            f"{stats.rate('fetch/pages'):,.1f}",
            pending,
            f"{stats['fetch/failed']:,}",
            f"{stats['robots/denied']:,}",
            _duration(stats.elapsed),
        )
        return table


def summary_table(crawler: Crawler, counts: CrawlCounts) -> Group:
    """The end-of-crawl summary: this run's figures and the store's totals."""
    stats = crawler.stats
    run = Table(title="this run", show_header=False, title_justify="left")
    run.add_column()
    run.add_column(justify="right")
    elapsed = stats.elapsed
    pages = stats["fetch/pages"]
    run.add_row("pages fetched", f"{pages:,}")
    run.add_row("failed", f"{stats['fetch/failed']:,}")
    run.add_row("retries", f"{stats['fetch/retries']:,}")
    run.add_row("robots denied", f"{stats['robots/denied']:,}")
    run.add_row("new URLs found", f"{stats['frontier/discovered']:,}")
    run.add_row("elapsed", _duration(elapsed))
    run.add_row("pages/s", f"{pages / elapsed if elapsed > 0 else 0:,.1f}")
    statuses = stats.by_prefix("fetch/status")
    if statuses:  # every response, retried ones too: a 503 asked for three times counts 3
        run.add_row(
            "HTTP responses", ", ".join(f"{code}: {n:,}" for code, n in sorted(statuses.items()))
        )
    errors = stats.by_prefix("fetch/error")
    if errors:
        run.add_row("errors", ", ".join(f"{name}: {n:,}" for name, n in sorted(errors.items())))
    if stats["parse/processes_started"]:  # parse_processes: where the pages were analyzed
        run.add_row(
            "page processes",
            f"{stats['parse/in_processes']:,} pages, {stats['parse/inline_behind']:,} inline "
            f"(process behind), {stats['parse/processes_lost']:,} lost",
        )
    total = Table(title="store", show_header=False, title_justify="left")
    total.add_column()
    total.add_column(justify="right")
    for status in ("completed", "failed", "blocked", "pending", "in_progress"):
        total.add_row(status, f"{counts.by_status.get(status, 0):,}")
    total.add_row("pages stored", f"{counts.pages:,}")
    parts: list[Any] = [run, total]
    if crawler.stopped_early:
        parts.append("[yellow]stopped early: run the same command again to resume[/yellow]")
    return Group(*parts)


def render_report(report: dict[str, Any]) -> Group:
    """Tables for ``harvestman stats``."""
    parts: list[Any] = []
    for title, key in (
        ("URLs by status", "urls"),
        ("HTTP statuses", "status_codes"),
        ("errors", "errors"),
        ("top hosts", "hosts"),
    ):
        values = report.get(key) or {}
        table = Table(title=title, show_header=False, title_justify="left")
        table.add_column()
        table.add_column(justify="right")
        for name, n in values.items():
            # A page row without a status: the fetch got no answer (as the dashboard says).
            label = "no answer" if key == "status_codes" and name == "none" else str(name)
            table.add_row(label, f"{n:,}")
        parts.append(table)
    parts.append(f"pages stored: {report.get('pages', 0):,}")
    if report.get("parsers"):
        parts.append(parser_stats_table(report["parsers"]))
        parts.append(f"records stored by site parsers: {report.get('records', 0):,}")
    return Group(*parts)


# A last day this much below the days before it is marked: the site's layout may have changed.
DROP_MARK = 0.2


def parser_stats_table(lines: list[dict[str, Any]]) -> Table:
    """Site parsers' success per host: overall, on the last day with attempts, and before it."""
    table = Table(title="site parsers (pages with records / pages handled)", title_justify="left")
    for column in ("host", "parser", "version", "pages", "ok", "empty", "errors", "rate",
                   "last day", "before"):  # fmt: skip
        labels = ("host", "parser", "version")
        table.add_column(column, justify="left" if column in labels else "right")
    for line in lines:
        last = _percent(line["last_day_rate"])
        if line["drop"] is not None and line["drop"] >= DROP_MARK:
            last = f"[red]{last} ↓[/red]"
        table.add_row(
            line["host"], line["parser"], line["version"], f"{line['attempts']:,}",
            f"{line['successes']:,}", f"{line['empty']:,}", f"{line['errors']:,}",
            _percent(line["success_rate"]), last, _percent(line["earlier_rate"]),
        )  # fmt: skip
    return table


def _percent(rate: float | None) -> str:
    return "" if rate is None else f"{rate:.0%}"


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def render_status(report: dict[str, Any]) -> Group:
    """Tables for ``harvestman status``: frontier, workers, hosts."""
    urls = Table(title=f"crawl {report['crawl']!r}", show_header=False, title_justify="left")
    urls.add_column()
    urls.add_column(justify="right")
    for status in ("pending", "in_progress", "completed", "failed", "blocked"):
        urls.add_row(status, f"{report['urls'].get(status, 0):,}")
    urls.add_row("pages stored", f"{report['pages']:,}")
    urls.add_row("pages/s (all workers)", f"{report['pages_per_second']:,.1f}")
    return Group(urls, _workers_table(report), _hosts_table(report))


def _workers_table(report: dict[str, Any]) -> Table | str:
    """The live workers; a line when there is none (an empty box with headers says less)."""
    title = f"live workers ({report['workers_source']})"
    if not report["workers"]:
        return f"{title}: none (a crawl or worker shows here while it runs)"
    workers = Table(title=title, title_justify="left")
    for column in ("worker", "host", "pages", "pages/s", "current host"):
        workers.add_column(column)
    for w in report["workers"]:
        workers.add_row(
            str(w.get("worker_id", "")), str(w.get("hostname", "")), f"{w.get('pages', 0):,}",
            f"{w.get('rate', 0.0):,.1f}", str(w.get("current_host") or ""),
        )  # fmt: skip
    return workers


def _hosts_table(report: dict[str, Any]) -> Table:
    hosts = Table(title="hosts", title_justify="left")
    for column in ("host", "pending", "leased", "done", "failed", "delay", "next allowed in"):
        hosts.add_column(column)
    now = time.time()
    for h in report["hosts"]:
        gate = h.get("next_allowed_at")
        hosts.add_row(
            h["host"], f"{h.get('pending', 0):,}", f"{h.get('in_progress', 0):,}",
            f"{h.get('completed', 0):,}", f"{h.get('failed', 0):,}",
            "" if h.get("crawl_delay") is None else f"{h['crawl_delay']:g} s",
            "" if gate is None or gate <= now else f"{gate - now:.1f} s",
        )  # fmt: skip
    return hosts
