"""Downloads of a list as its caller filtered it: CSV or JSONL, streamed batch by batch.

A download reads the list route's own pages (the same filters, order and keyset) one batch at
a time on the store's threads and writes each batch out before reading the next, so its memory
is one batch whatever the list holds; it stops after ``api_export_max_rows`` rows (the answer's
``X-Export-Limit`` header says how many that is). ``harvestman export`` writes a whole crawl
without that bound.

JSONL lines are the list route's items exactly, for programs. CSV, for people and
spreadsheets, has one column per field (nested offers and images flattened, see the callers'
column lists) and times as ISO 8601 UTC. A text cell a spreadsheet would run as a formula
(``=``, ``+``, ``-``, ``@``, a tab or a carriage return first: a crawled title is anyone's
text) is written with a leading ``'``, as OWASP's CSV injection advice says.

>>> cell("=HYPERLINK(0)"), cell(-5), cell(None), cell(True)
("'=HYPERLINK(0)", -5, '', 'true')
>>> iso_time(1_700_000_000.25)
'2023-11-14T22:13:20Z'
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import orjson
from starlette.responses import StreamingResponse

__all__ = ["BATCH", "Format", "Rows", "cell", "download_response", "iso_time"]

Format = Literal["csv", "jsonl"]
MEDIA_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}
# Rows a batch reads: ~0.5 MB of pages, one trip to the store's thread each.
BATCH = 500
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

# The next batch after a key (None: the first) and the key after it (None: the last).
Rows = Callable[[Any, int], Awaitable[tuple[list[dict[str, Any]], Any]]]
# One item as its CSV row, in the order of the columns given with it.
Flatten = Callable[[dict[str, Any]], Sequence[Any]]


def iso_time(epoch: float | None) -> str | None:
    """An epoch-seconds time as ISO 8601 UTC to the second; None stays None."""
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cell(value: Any) -> Any:
    """A value as a CSV cell: text a spreadsheet would evaluate is quoted with ``'``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return f"'{value}"
    return value


async def _items(rows: Rows, most: int) -> AsyncIterator[list[dict[str, Any]]]:
    """The list's items batch by batch, at most ``most`` in all."""
    key: Any = None
    left = most
    while left > 0:
        items, key = await rows(key, min(BATCH, left))
        if items:
            yield items[:left]
            left -= len(items)
        if key is None or not items:
            return


async def _csv(
    batches: AsyncIterator[list[dict[str, Any]]], columns: Sequence[str], flatten: Flatten
) -> AsyncIterator[bytes]:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\r\n")  # RFC 4180
    writer.writerow(columns)
    yield text.getvalue().encode()
    async for batch in batches:
        text.seek(0)
        text.truncate()
        writer.writerows([cell(value) for value in flatten(item)] for item in batch)
        yield text.getvalue().encode()


async def _jsonl(
    batches: AsyncIterator[list[dict[str, Any]]], default: Callable[[Any], Any] | None
) -> AsyncIterator[bytes]:
    async for batch in batches:
        yield b"".join(
            orjson.dumps(item, default=default, option=orjson.OPT_NON_STR_KEYS) + b"\n"
            for item in batch
        )


def download_response(
    fmt: Format,
    what: str,
    rows: Rows,
    *,
    columns: Sequence[str],
    flatten: Flatten,
    most: int,
    scope: str,
    default: Callable[[Any], Any] | None = None,
    now: float | None = None,
) -> StreamingResponse:
    """The streamed download of a list: ``what`` and ``scope`` (a crawl's name, or "all")
    name the file, as ``pages-source-1-20261128-0405.csv``."""
    batches = _items(rows, most)
    body = _csv(batches, columns, flatten) if fmt == "csv" else _jsonl(batches, default)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    safe_scope = "".join(c if c.isalnum() or c in "-_." else "_" for c in scope)[:80]
    name = f"{what}-{safe_scope}-{stamp}.{fmt}"
    return StreamingResponse(
        body,
        media_type=MEDIA_TYPES[fmt],
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            "X-Export-Limit": str(most),
            "Cache-Control": "no-store",
        },
    )
