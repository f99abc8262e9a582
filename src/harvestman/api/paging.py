"""Paging of the list endpoints: opaque cursors and the cached totals.

A list answers ``items``, ``next_cursor`` (pass it as ``cursor`` for the next page; null at
the end), ``limit``, ``offset``, ``total`` and ``total_as_of``. A cursor is the order key of
the last item (keyset pagination, ``store.keyset``), so a deep page costs what the first does;
``offset`` is kept for small skips (up to ``api_max_offset``).

``total`` is exact as of ``total_as_of``: counting 500,000 rows on every request cost more
than the page itself, so a count is kept ``api_count_cache_seconds`` per list and filters and
refreshed in the background once stale (the stale value is answered meanwhile). A page that
shows the end of an un-cursored list knows its total without counting, and a write through
the API forgets the counts of the lists it changes.

A page goes out as a ``PageResponse``: the route's ``response_model`` still documents it, but
FastAPI neither validates nor re-encodes a Response, which cost more than reading the page.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

import orjson
from pydantic import BaseModel
from starlette.responses import Response

from harvestman.api.errors import ApiError
from harvestman.api.text import text_problem

log = logging.getLogger(__name__)

MAX_KEY = 2**63 - 1
MAX_TEXT_KEY = 300  # the longest host name a domains cursor can carry


class PageResponse(Response):
    """A page as JSON (orjson); its items are plain values or pydantic models."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        try:
            return _dumps(content)
        except orjson.JSONEncodeError:
            if not isinstance(content, dict) or not isinstance(content.get("items"), list):
                raise
        # An item no encoder takes (a lone surrogate stored before the API refused them) is
        # left out, not the whole list: one bad row answered 500 to everyone.
        kept = []
        for item in content["items"]:
            try:
                _dumps(item)
            except orjson.JSONEncodeError as exc:
                ident = item.get("id") if isinstance(item, dict) else getattr(item, "id", None)
                log.warning("list item id=%s left out: it cannot be encoded (%s)", ident, exc)
                continue
            kept.append(item)
        return _dumps({**content, "items": kept})


def _dumps(content: Any) -> bytes:
    # a row's keys are column names: str subclasses, which orjson takes only so
    return orjson.dumps(content, default=_model, option=orjson.OPT_NON_STR_KEYS)


def _model(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON")


def encode_cursor(kind: str, key: int | str | None) -> str | None:
    """The opaque cursor after ``key`` in list ``kind`` (None stays None).

    >>> decode_cursor("jobs", encode_cursor("jobs", 42))
    42
    """
    if key is None:
        return None
    raw = json.dumps([kind, key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(kind: str, cursor: str | None, *, text_key: bool = False) -> int | str | None:
    """The key a cursor of list ``kind`` carries (a string when ``text_key``, else an id);
    a 422 for anything else."""
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        found, key = json.loads(raw)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        found, key = None, None
    if text_key:
        # The key is a stored host name: text the store can hold, or no key of this list.
        valid = isinstance(key, str) and text_problem(key, MAX_TEXT_KEY) is None
    else:
        valid = isinstance(key, int) and not isinstance(key, bool) and 0 <= key <= MAX_KEY
    if found != kind or not valid:
        raise ApiError(
            422,
            "invalid cursor: pass the next_cursor of a previous page of this list",
            code="invalid_cursor",
        )
    return key  # type: ignore[no-any-return]


def check_offset(offset: int, cursor: str | None, max_offset: int) -> None:
    if cursor is not None and offset:
        raise ApiError(422, "give either cursor or offset", details={"offset": offset})
    if offset > max_offset:
        raise ApiError(
            422,
            f"offset above {max_offset}: follow next_cursor to page further",
            details={"offset": offset, "max_offset": max_offset},
        )


class CountCache:
    """Exact counts per key, kept ``ttl`` seconds; a stale one is answered while one refresh
    runs in the background. ``ttl`` 0 counts on every request. The key's first element names
    the list (``forget`` drops a list's counts)."""

    def __init__(self, ttl: float, *, max_entries: int = 1024) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._values: OrderedDict[Hashable, tuple[int, float]] = OrderedDict()
        self._pending: dict[Hashable, asyncio.Task[int]] = {}

    async def get(
        self, key: tuple[Any, ...], count: Callable[[], Awaitable[int]]
    ) -> tuple[int, float]:
        """The count and the wall time it was taken."""
        cached = self._values.get(key)
        if cached is not None:
            if time.time() - cached[1] < self.ttl:
                return cached
            self._refresh(key, count)
            return cached
        task = self._refresh(key, count)
        await asyncio.shield(task)  # a cancelled request leaves the count to the others
        return self._values.get(key) or (task.result(), time.time())

    def put(self, key: tuple[Any, ...], value: int) -> None:
        self._values[key] = (value, time.time())
        self._values.move_to_end(key)
        while len(self._values) > self.max_entries:
            self._values.popitem(last=False)

    def forget(self, kind: str) -> None:
        """Drop the counts of list ``kind`` (after a write that changes it)."""
        for key in [k for k in self._values if k[0] == kind]:  # type: ignore[index]
            del self._values[key]

    def _refresh(
        self, key: tuple[Any, ...], count: Callable[[], Awaitable[int]]
    ) -> asyncio.Task[int]:
        task = self._pending.get(key)
        if task is None:
            task = asyncio.ensure_future(self._count(key, count))
            # _count logs a failure; retrieving it here keeps asyncio from warning again.
            task.add_done_callback(lambda done: done.cancelled() or done.exception())
            self._pending[key] = task
        return task

    async def _count(self, key: tuple[Any, ...], count: Callable[[], Awaitable[int]]) -> int:
        try:
            value = await count()
            self.put(key, value)
            return value
        except Exception as exc:
            log.warning("counting %s failed: %s", key[0], exc)
            raise
        finally:
            self._pending.pop(key, None)

    async def close(self) -> None:
        """Cancel the refreshes under way (at shutdown)."""
        for task in list(self._pending.values()):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


Fetch = Callable[[int | str | None], Awaitable[tuple[list[Any], int | str | None, int | None]]]


async def paged(
    counts: CountCache,
    key: tuple[Any, ...],
    *,
    fetch: Fetch,
    count: Callable[[], Awaitable[int]] | None = None,
    cursor: str | None,
    limit: int,
    offset: int,
    max_offset: int,
    text_key: bool = False,
) -> dict[str, Any]:
    """Answer one page of list ``key[0]`` (``key``: the list and its filters).

    ``fetch(after)`` reads the page: its items, the key after its last item (None at the end)
    and its exact total when it has one at hand (small lists), else None; ``count()`` (needed
    when ``fetch`` gives no total) counts the list when the cache needs it.
    """
    check_offset(offset, cursor, max_offset)
    after = decode_cursor(str(key[0]), cursor, text_key=text_key)
    items, next_after, exact = await fetch(after)
    shown = offset + len(items)
    if exact is not None:
        total, as_of = exact, time.time()
    elif cursor is None and next_after is None and (items or offset == 0):
        total, as_of = shown, time.time()  # the whole rest of the list is in view
        counts.put(key, total)
    else:
        assert count is not None, "a list without a total of its own needs count()"
        total, as_of = await counts.get(key, count)
        if cursor is None:  # a stale count never contradicts the page itself
            total = max(total, shown + (1 if next_after is not None else 0))
    return {
        "items": items,
        "next_cursor": encode_cursor(str(key[0]), next_after),
        "limit": limit,
        "offset": offset,
        "total": total,
        "total_as_of": as_of,
    }
