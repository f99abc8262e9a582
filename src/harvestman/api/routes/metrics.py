"""``GET /metrics``: Prometheus text, from the store and the scheduler at scrape time.

Each scrape builds its families afresh in a registry of its own (no process-global state),
so two apps in one process never share a metric.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from harvestman.api.context import context_of
from harvestman.api.params import User
from harvestman.api.routes.scheduler import scheduler_metrics
from harvestman.records import UrlStatus
from harvestman.store.lifecycle.backups import BackupSummary

router = APIRouter(tags=["metrics"])


class _Snapshot(Collector):
    def __init__(
        self,
        crawl: dict[str, Any],
        scheduler: dict[str, Any],
        workers: int,
        backups: BackupSummary,
        parsers: list[dict[str, Any]] | None = None,
    ) -> None:
        self.crawl = crawl
        self.scheduler = scheduler
        self.workers = workers
        self.backups = backups
        self.parsers = parsers or []

    def collect(self) -> Iterator[Metric]:
        crawl, sched = self.crawl, self.scheduler
        yield CounterMetricFamily(
            "harvestman_pages_fetched", "Pages fetched and stored", value=crawl["pages"]
        )
        yield GaugeMetricFamily(
            "harvestman_pages_per_second",
            "Pages per second over the last minute",
            value=crawl["pages_per_second"],
        )
        rate = crawl["success_rate"]
        yield GaugeMetricFamily(
            "harvestman_fetch_success_rate",
            "Share of pages with a 2xx or 304 status",
            value=0.0 if rate is None else rate,
        )
        codes = CounterMetricFamily(
            "harvestman_http_status", "Pages by HTTP status code", labels=["code"]
        )
        for code, n in sorted(crawl["status_codes"].items()):
            codes.add_metric([code], n)
        yield codes
        yield GaugeMetricFamily(
            "harvestman_frontier_size", "URLs pending in the frontier", value=crawl["frontier_size"]
        )
        yield CounterMetricFamily(
            "harvestman_robots_denials",
            "URLs blocked by robots.txt",
            value=crawl["urls"].get(UrlStatus.BLOCKED.value, 0),
        )
        yield GaugeMetricFamily(
            "harvestman_active_workers", "Workers with a recent heartbeat", value=self.workers
        )
        jobs = GaugeMetricFamily("harvestman_scheduler_jobs", "Jobs by state", labels=["state"])
        for state, n in sorted(sched.get("jobs", {}).items()):
            if state != "total":
                jobs.add_metric([state], n)
        yield jobs
        executions = sched.get("executions", {})
        runs = CounterMetricFamily(
            "harvestman_scheduler_executions", "Kept executions by status", labels=["status"]
        )
        for status, n in sorted(executions.get("by_status", {}).items()):
            runs.add_metric([status], n)
        yield runs
        success = executions.get("success_rate")
        yield GaugeMetricFamily(
            "harvestman_scheduler_success_rate",
            "Completed share of finished executions",
            value=0.0 if success is None else success,
        )
        yield CounterMetricFamily(
            "harvestman_scheduler_stale_locks_cleared",
            "Stale job locks cleared by this instance",
            value=sched.get("stale_locks_cleared", 0),
        )
        yield GaugeMetricFamily(
            "harvestman_scheduler_last_poll_ms",
            "Duration of the last scheduler poll",
            value=sched.get("last_poll_ms", 0.0),
        )
        # From the store's record of scheduled backups: the same on every instance.
        yield GaugeMetricFamily(
            "harvestman_backup_last_success_timestamp",
            "When the last good scheduled backup finished (epoch seconds; 0: never)",
            value=self.backups.last_success,
        )
        yield CounterMetricFamily(
            "harvestman_backup_failures",
            "Scheduled backups that failed (written, verified or recorded)",
            value=self.backups.failures,
        )
        yield from _parser_health(self.parsers)


def _parser_health(lines: list[dict[str, Any]]) -> Iterator[Metric]:
    """Site parsers' success ratios on their last day with attempts, per domain, and the
    baselines the ParserSuccessRateHalved alert holds them against (deploy/)."""
    labels = ["parser", "version", "domain"]
    ratio = GaugeMetricFamily(
        "harvestman_parser_success_ratio",
        "Pages a site parser found records on, of those it parsed, on its last day",
        labels=labels,
    )
    attempts = GaugeMetricFamily(
        "harvestman_parser_attempts", "Pages a site parser parsed on its last day", labels=labels
    )
    baseline = GaugeMetricFamily(
        "harvestman_parser_baseline_ratio",
        "The success ratio a parser's is held against: its previous day or previous version",
        labels=[*labels, "baseline"],
    )
    for line in lines:
        key = [line["parser"], line["version"], line["domain"]]
        ratio.add_metric(key, line["success_ratio"])
        attempts.add_metric(key, line["attempts"])
        for name in ("previous_day", "previous_version"):
            if line[name] is not None:
                baseline.add_metric([*key, name], line[name])
    yield ratio
    yield attempts
    yield baseline


@router.get("/metrics", response_class=Response)
async def metrics(request: Request, _: User) -> Response:
    ctx = context_of(request)
    now = time.time()
    crawl = await ctx.read(ctx.sql_store.reports.crawl_stats, None, now)
    sched = await scheduler_metrics(ctx)
    rows = await ctx.sql_store.registry.worker_rows()
    workers = sum(1 for r in rows if r["heartbeat_at"] >= now - 30.0)
    backups = await ctx.read(ctx.sql_store.maintenance.backup_summary)
    parsers = await ctx.read(ctx.sql_store.reports.parser_health, now)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(crawl, sched, workers, backups, parsers))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
