"""What a command process sets up before its work: logging, the allocator, the event loop."""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from harvestman.cli.exits import err

T = TypeVar("T")

log = logging.getLogger("harvestman")


def setup_logging(verbose: int) -> None:
    from rich.logging import RichHandler

    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(
        level=level,
        format="%(message)s",
        handlers=[RichHandler(console=err, show_path=False, rich_tracebacks=True)],
        force=True,
    )


def tune_malloc() -> None:
    """Keep freed memory in the heap instead of returning it to the OS after every page: Lexbor
    allocates and frees a page's tree each time, and with glibc's defaults that is a few page
    faults a page (measured: 20-60 us of a ~300 us parse). Linux/glibc only; a no-op elsewhere."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 4 * 1024 * 1024)
    libc.mallopt(m_trim_threshold, 64 * 1024 * 1024)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on uvloop when installed, else on asyncio."""
    tune_malloc()
    try:
        import uvloop
    except ImportError:
        import asyncio

        return asyncio.run(coro)
    return uvloop.run(coro)
