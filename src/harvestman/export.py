"""Exports of what a crawl stored: JSONL and CSV, streamed in constant memory."""

from __future__ import annotations

import csv
import io
from typing import IO, Any

import orjson

from harvestman.records import Outcome
from harvestman.store import SqlStore

FORMATS = ("jsonl", "csv")

# The exported fields of a page, in order (CSV columns).
FIELDS = (
    "url", "final_url", "status_code", "title", "description", "content_type", "content_length",
    "charset", "content_hash", "canonical", "lang", "links_count", "depth", "crawl_duration_ms",
    "fetched_at", "error_class", "error",
)  # fmt: skip


def _exported(row: dict[str, Any]) -> dict[str, Any]:
    record = {name: row.get(name) for name in FIELDS}
    record["status"] = row.get("status_code")  # the short name users look for
    return record


def export_pages(store: SqlStore, crawl_id: int, fmt: str, out: IO[bytes]) -> int:
    """Write every stored page of ``crawl_id`` to ``out``; return how many."""
    count = 0
    if fmt == "jsonl":
        for row in store.iter_pages(crawl_id):
            out.write(orjson.dumps(_exported(row)) + b"\n")
            count += 1
        return count
    if fmt == "csv":
        text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
        writer = csv.DictWriter(text, fieldnames=[*FIELDS, "status"])
        writer.writeheader()
        for row in store.iter_pages(crawl_id):
            writer.writerow(_exported(row))
            count += 1
        text.detach()  # leave `out` open for the caller
        return count
    raise ValueError(f"unknown export format {fmt!r}")


def page_summary(outcome: Outcome) -> bytes | None:
    """The JSONL line ``crawl --output`` writes for a stored outcome (None: no page)."""
    page = outcome.page
    if page is None:
        return None
    return (
        orjson.dumps(
            {
                "url": page.url,
                "final_url": page.final_url,
                "status": page.status_code,
                "title": page.title,
                "description": page.description,
                "content_type": page.content_type,
                "content_length": page.content_length,
                "content_hash": page.content_hash,
                "links_count": page.links_count,
                "depth": outcome.request.depth,
                "fetched_at": page.fetched_at,
                "error_class": page.error_class,
                "error": page.error,
            }
        )
        + b"\n"
    )
