"""What a command process sets up before its work: logging, the allocator, the garbage
collector, the event loop."""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, ParamSpec, TypeVar

from harvestman.cli.exits import err

T = TypeVar("T")
P = ParamSpec("P")

# The youngest generation's threshold while a loop runs (CPython's default: 700). A crawl
# allocates a few hundred containers a page and frees nearly all of them by reference count;
# collecting every 700 scans what little survives ~900 times in a 20,000-page crawl. With the
# start-up objects frozen and 3,000 here, the collector's time in such a crawl (gc.callbacks,
# the crawler's process) went from 0.75-0.81 s to 0.08-0.10 s (0.33-0.41 s frozen alone).
GC_YOUNGEST = 3000

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


def collect_after_start(command: Callable[P, T]) -> Callable[P, T]:
    """``command`` runs with the garbage collector off until :func:`run` starts its loop.

    A crawl's imports and set-up make ~180,000 objects that live as long as the process;
    collecting while they are being made only scans them again and again (two full
    collections, 0.15-0.3 s of a crawl's start on the benchmark machine).
    """

    @functools.wraps(command)
    def starting(*args: P.args, **kwargs: P.kwargs) -> T:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return command(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return starting


@contextlib.contextmanager
def steady_gc() -> Iterator[None]:
    """While a loop runs, what was made before it is frozen (full collections skip it) and the
    youngest generation is collected every ``GC_YOUNGEST`` allocations; all undone after."""
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_YOUNGEST, *thresholds[1:])
    gc.enable()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        if not enabled:
            gc.disable()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on uvloop when installed, else on asyncio."""
    tune_malloc()
    with steady_gc():
        try:
            import uvloop
        except ImportError:
            import asyncio

            return asyncio.run(coro)
        return uvloop.run(coro)
