"""Exports of what a crawl stored: JSONL and CSV, streamed in constant memory."""

from __future__ import annotations

import csv
import io
from collections.abc import Collection
from datetime import UTC, datetime
from decimal import Decimal
from operator import attrgetter
from typing import IO, Any, Final

import orjson

from harvestman.records import Outcome
from harvestman.store import SqlStore

FORMATS = ("jsonl", "csv", "es")
WHAT = ("pages", "products", "records")
# What a fetched URL was (``urls.kind``); robots.txt fetches are kept per host, never as pages.
KINDS = ("page", "sitemap", "feed")
PAGES_ONLY: tuple[str, ...] = ("page",)


def parse_kinds(value: str) -> tuple[str, ...]:
    """``--kind``'s comma-separated list, checked against :data:`KINDS`.

    >>> parse_kinds("page, feed"), parse_kinds("page,page")
    (('page', 'feed'), ('page',))
    >>> parse_kinds("robots")
    Traceback (most recent call last):
    ValueError: unknown kind 'robots': choose from page, sitemap, feed
    """
    kinds = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}: choose from {', '.join(KINDS)}")
    if not kinds:
        raise ValueError(f"no kind given: choose from {', '.join(KINDS)}")
    return kinds


# The exported fields of a page, in order (CSV columns).
FIELDS = (
    "url", "final_url", "status_code", "title", "description", "content_type", "content_length",
    "charset", "content_hash", "canonical", "lang", "links_count", "depth", "kind",
    "crawl_duration_ms", "fetched_at", "error_class", "error",
)  # fmt: skip


def iso_time(timestamp: float | None) -> str | None:
    """A stored Unix time as ISO 8601 in UTC, to the millisecond.

    >>> iso_time(0.25), iso_time(None)
    ('1970-01-01T00:00:00.250+00:00', None)
    """
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds")


def page_line(row: dict[str, Any]) -> dict[str, Any]:
    """A page as ``export`` and ``crawl --output`` both write it: :data:`FIELDS`, in order, with
    ``fetched_at`` in ISO 8601 (one shape, so a file from either reads the same)."""
    record = {name: row.get(name) for name in FIELDS}
    record["fetched_at"] = iso_time(record["fetched_at"])
    return record


PRODUCT_FIELDS = (
    "page_url", "product_url", "name", "description", "price", "currency", "availability",
    "rating", "review_count", "brand", "category", "sku", "gtin", "source", "parser",
    "updated_at", "mpn", "condition", "low_price", "high_price", "offer_count", "best_rating",
    "worst_rating", "rating_count", "sources", "confidence",
)  # fmt: skip
_PRODUCT_DECIMALS = ("price", "rating", "low_price", "high_price", "best_rating", "worst_rating")


def _exported_product(row: dict[str, Any]) -> dict[str, Any]:
    record = {name: row.get(name) for name in PRODUCT_FIELDS}
    for name in _PRODUCT_DECIMALS:  # Decimal -> exact string, never a float; no pad zeros
        value = record[name]
        if value is not None:
            record[name] = format(Decimal(value).normalize(), "f")
    record["sources"] = orjson.loads(record["sources"]) if record["sources"] else []
    record["images"] = row.get("images", [])
    return record


# The exported fields of a site parser's record; ``data`` is its JSON object (text in CSV).
RECORD_FIELDS = (
    "page_url", "host", "parser", "parser_version", "record_key", "kind", "data",
    "first_seen_at", "last_seen_at", "updated_at",
)  # fmt: skip


def _exported_record(row: dict[str, Any]) -> dict[str, Any]:
    record = {name: row.get(name) for name in RECORD_FIELDS}
    record["data"] = orjson.Fragment(row["data"])  # stored as JSON: written as it is
    return record


def _document_id(what: str, row: dict[str, Any]) -> str:
    """A stable Elasticsearch ``_id``: the same row exported twice overwrites itself."""
    if what == "pages":
        return str(row["url_hash"])
    if what == "products":
        return f"{row['url_hash']}-{row['position']}"
    return f"{row['url_hash']}-{row['parser']}-{row['record_key']}"


def export_pages(
    store: SqlStore,
    crawl_id: int,
    fmt: str,
    out: IO[bytes],
    *,
    what: str = "pages",
    kinds: Collection[str] = PAGES_ONLY,
) -> int:
    """Write every stored page (product, or site parser record) of ``crawl_id`` to ``out``;
    return how many. Pages are those of ``kinds`` (pages only by default: sitemaps and feeds
    are fetched and stored too, but are not what a page export is for).

    ``es`` is Elasticsearch's bulk NDJSON: an ``index`` action line (with a stable ``_id``)
    before each document; products then have typed fields (numeric prices, ISO 8601 times:
    ``harvestman.elastic``, whose mapping the CLI writes beside the file).
    """
    fields: tuple[str, ...]  # each export's own columns
    if what == "products":
        rows, convert, fields = (
            store.exports.iter_products(crawl_id),
            _exported_product,
            PRODUCT_FIELDS,
        )
    elif what == "records":
        rows, convert, fields = (
            store.exports.iter_records(crawl_id),
            _exported_record,
            RECORD_FIELDS,
        )
    elif what == "pages":
        rows, convert, fields = store.exports.iter_pages(crawl_id, kinds=kinds), page_line, FIELDS
    else:
        raise ValueError(f"unknown export {what!r}: one of {', '.join(WHAT)}")
    count = 0
    if fmt in ("jsonl", "es"):
        index = f"harvestman-{what}"
        if fmt == "es" and what == "products":
            from harvestman import elastic

            for row in rows:
                out.write(orjson.dumps(elastic.action(row)) + b"\n")
                out.write(orjson.dumps(elastic.document(row)) + b"\n")
                count += 1
            return count
        for row in rows:
            if fmt == "es":
                doc_id = _document_id(what, row)
                out.write(orjson.dumps({"index": {"_index": index, "_id": doc_id}}) + b"\n")
            out.write(orjson.dumps(convert(row)) + b"\n")
            count += 1
        return count
    if fmt == "csv":
        text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
        extra = {"pages": [], "products": ["images"], "records": []}[what]
        writer = csv.DictWriter(text, fieldnames=[*fields, *extra])
        writer.writeheader()
        for row in rows:
            record = convert(row)
            if what == "products":
                record["images"] = " ".join(record["images"])
                record["sources"] = " ".join(record["sources"])
            elif what == "records":
                record["data"] = row["data"]
            writer.writerow(record)
            count += 1
        text.detach()  # leave `out` open for the caller
        return count
    raise ValueError(f"unknown export format {fmt!r}")


def page_summary(outcome: Outcome, kinds: Collection[str] = PAGES_ONLY) -> bytes | None:
    """The JSONL line ``crawl --output`` writes for a stored outcome (None: no page, or one
    whose URL is not of ``kinds``): :func:`page_line`'s record of the page."""
    page, request = outcome.page, outcome.request
    if page is None or request.kind not in kinds:
        return None
    # One pass, in FIELDS' order, where page_line over a dict of getattr() took two (a crawl
    # writes one line per page on its event loop).
    values = (*_BEFORE_DEPTH(page), request.depth, request.kind, *_AFTER_KIND(page))
    record = dict(zip(FIELDS, values, strict=True))
    record["fetched_at"] = iso_time(page.fetched_at)
    return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)


_BEFORE_DEPTH: Final = attrgetter(*FIELDS[: FIELDS.index("depth")])
_AFTER_KIND: Final = attrgetter(*FIELDS[FIELDS.index("kind") + 1 :])
