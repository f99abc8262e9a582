"""Page processes: the page analysis (:mod:`harvestman.crawl.analysis`) off the crawler's process.

Everything a crawl does shares one GIL: fetching, the page steps and the store's writer thread
used about one core of two, the parse and the scans of each page a third of it. The analysis
is a pure function of the response, so ``parse_processes`` child processes
(:mod:`harvestman.crawl.pageprocess`, which loads the parsers and nothing else) do it while the
crawler's process fetches, runs the stateful steps and writes the store. A page travels as its
URL, status, headers, body and charset; it comes back as its
:class:`~harvestman.crawl.analysis.PageAnalysis`.

The channel is a pair of pipes per process, written and read by the event loop's own protocol:
no thread; the pages sent in one turn of the event loop go in one write, and a process writes
the answers it has while more pages wait for it in one go (``pageprocess.MAX_HELD_ANSWERS``),
so that neither side wakes up once per page. ``concurrent.futures.ProcessPoolExecutor`` was
tried first: in a 20,000-page crawl its manager and feeder threads cost the crawler's process
~250 µs a page more (wake-ups, locks, a selector per wait). An ``asyncio.StreamReader`` on
the pipe measured the same as this protocol, which takes each read's frames out of its buffer
at once.

The processes start once a crawl has analyzed ``start_after`` pages inline, so a small crawl
(and the test suite's hundreds of them) never pays for their start. A process that dies loses
no page: each page it held is analyzed inline instead, and a new process takes its place (if
one dies before answering a single page, the crawl stops starting them and stays inline).
Pages in flight are bounded by the crawl's concurrency, and so is what the pipes buffer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import cast

import harvestman
from harvestman.crawl.analysis import AnalysisSpec, PageAnalysis
from harvestman.crawl.fetch import FetchResult
from harvestman.crawl.pageprocess import Frames, frame, page_frames, read_answer
from harvestman.stats import Stats

log = logging.getLogger(__name__)

_STOP_TIMEOUT = 5.0  # seconds a process has to exit once its input ends
# How long the pages a process answers last waited in its queue (from being sent to the start
# of their analysis, as the process reports it) before the crawler's process analyzes pages
# itself until that process has caught up. On a busy machine the scheduler may give the
# process a third of a core: 64 pages then waited ~58 ms each for it while the crawler's
# process idled (load ~7: 736 pages/s against inline's 902). A count of the pages held was the
# first bound (48): it counts answers sitting unread in the pipe too, which a busy crawler's
# process reads once per turn of its loop, and on a quiet machine it sent a fifth of the pages
# inline (4,083 of 20,000) while the process was busy 40% of the time: 1,556-1,773 pages/s
# against 1,653-1,889 with no bound, paired rounds. Pages do wait in a process's queue on a
# quiet 2-core machine too (pages come in bursts, and four busy threads share two cores): with
# 0.02 s 6,976 pages went inline, with 0.05 s 467, with 0.1 s 122.
MAX_QUEUE_WAIT = 0.1


class _PageProcess(asyncio.SubprocessProtocol):
    """One page process: its stdin, and the pages it holds (number -> the crawler's future),
    each answered from its stdout. When its stdout ends, the pages it still held get None."""

    def __init__(self) -> None:
        self.transport: asyncio.SubprocessTransport | None = None
        self.waiting: dict[int, asyncio.Future[PageAnalysis | None]] = {}
        self.frames = Frames()  # its answers, as they arrive
        self.outgoing: list[bytes] = []  # frames sent in this turn of the loop, not yet written
        self.answered = 0
        self.queue_wait = 0.0  # what the last page it answered waited in its queue (seconds)
        self.is_gone = False  # its replies ended: the process exited, or is about to
        self.exited = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.SubprocessTransport, transport)

    def send(self, *frames: bytes) -> None:
        # The pages of one turn of the loop go in one write: one wake-up of the process.
        if not self.outgoing:
            asyncio.get_running_loop().call_soon(self.flush)
        self.outgoing.extend(frames)

    def flush(self) -> None:
        outgoing, self.outgoing = self.outgoing, []
        assert self.transport is not None
        requests = self.transport.get_pipe_transport(0)
        if outgoing and requests is not None and not requests.is_closing():
            # Gathered by the transport (uvloop: one writev), not joined here: a body is copied
            # once, by the kernel.
            cast(asyncio.WriteTransport, requests).writelines(outgoing)

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        frames = self.frames
        frames.feed(data)
        while (answer := frames.pop()) is not None:
            number, analysis, self.queue_wait = read_answer(answer)
            self.answered += 1
            future = self.waiting.pop(number, None)
            if future is not None and not future.done():
                future.set_result(analysis)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self._end()

    def process_exited(self) -> None:
        self._end()
        if not self.exited.done():
            self.exited.set_result(None)

    def _end(self) -> None:
        self.is_gone = True
        waiting, self.waiting = self.waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_result(None)

    async def stop(self) -> None:
        """Close its stdin (it exits at the end of its input); kill it if it does not."""
        transport = self.transport
        if transport is None:
            return
        self.flush()
        requests = transport.get_pipe_transport(0)
        if requests is not None:
            requests.close()
        try:
            async with asyncio.timeout(_STOP_TIMEOUT):
                await self.exited
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                transport.kill()
            await self.exited
        transport.close()


class PageWorkers:
    """``processes`` page processes, started after ``start_after`` pages.

    :meth:`analyze` returns None for a page to analyze inline (the processes not started yet,
    each still holding pages behind which its last answered ones waited over ``max_queue_wait``
    seconds, or the one that held the page lost): the pipeline then runs the same analyzer with
    the same spec (:class:`~harvestman.crawl.pages.PagePipeline`). An async context manager:
    leaving it ends the processes.
    """

    def __init__(
        self,
        spec: AnalysisSpec,
        stats: Stats,
        *,
        processes: int,
        start_after: int,
        max_queue_wait: float = MAX_QUEUE_WAIT,
    ) -> None:
        if processes < 1:
            raise ValueError(f"page processes must be at least 1, not {processes}")
        self.spec = spec
        self.stats = stats
        self.processes = processes
        self.start_after = start_after
        self.max_queue_wait = max_queue_wait
        self.inline = 0  # pages analyzed inline before the processes started
        self.running: list[_PageProcess] = []
        self.ended: list[_PageProcess] = []  # lost, stopped (reaped) with the rest
        self.starting: asyncio.Task[None] | None = None
        self.numbers = 0
        self.given_up = False

    async def __aenter__(self) -> PageWorkers:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self.given_up = True  # no new process from here on
        if self.starting is not None:
            self.starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.starting
        workers = [*self.running, *self.ended]
        self.running, self.ended = [], []
        for worker in workers:
            await worker.stop()

    @property
    def pids(self) -> list[int]:
        """The running page processes' ids."""
        return [
            worker.transport.get_pid() for worker in self.running if worker.transport is not None
        ]

    async def start(self) -> None:
        """Start the processes now (a crawl has them start after ``start_after`` pages)."""
        if self.starting is None:
            self.starting = asyncio.create_task(self._start(), name="page-processes")
        await self.starting

    async def analyze(self, result: FetchResult) -> PageAnalysis | None:
        """The page's analysis from a page process; None: analyze it inline."""
        if self.given_up:
            return None
        if len(self.running) < self.processes:
            if self.inline < self.start_after:
                self.inline += 1
                return None
            if self.starting is None:
                self.starting = asyncio.create_task(self._start(), name="page-processes")
            if not self.running:
                return None  # still starting: this page is not held up for it
        running = self.running
        worker = running[0] if len(running) == 1 else min(running, key=_held)
        if worker.is_gone:
            self._lost(worker)
            return None
        if worker.waiting and worker.queue_wait > self.max_queue_wait:
            # Behind: the page is sooner done here. Once it holds nothing it is caught up.
            self.stats.inc("parse/inline_behind")
            return None
        self.numbers += 1
        future: asyncio.Future[PageAnalysis | None] = asyncio.get_running_loop().create_future()
        worker.waiting[self.numbers] = future
        worker.send(
            *page_frames(
                self.numbers,
                time.monotonic(),
                result.final_url,
                result.status,
                result.headers,
                result.body,
                result.charset,
            )
        )
        analysis = await future
        if analysis is not None:
            self.stats.inc("parse/in_processes")
        elif worker.is_gone:
            self._lost(worker)
        return analysis

    async def _start(self) -> None:
        """Start processes up to ``processes`` (a start takes a while: pages go inline
        meanwhile)."""
        loop = asyncio.get_running_loop()
        try:
            while len(self.running) < self.processes and not self.given_up:
                worker = await self._spawn(loop)
                worker.send(frame(self.spec))
                self.running.append(worker)
                self.stats.inc("parse/processes_started")
        except Exception:  # not started: the crawl goes on inline rather than retry for ever
            self.given_up = True
            log.exception("page processes could not start: pages are analyzed inline")
        finally:
            self.starting = None

    async def _spawn(self, loop: asyncio.AbstractEventLoop) -> _PageProcess:
        _, worker = await loop.subprocess_exec(
            _PageProcess,
            sys.executable,
            "-m",
            "harvestman.crawl.pageprocess",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=None,
            env=_child_environment(),
        )
        return worker

    def _lost(self, worker: _PageProcess) -> None:
        """A process died: its pages went inline; another takes its place, unless it died
        before answering anything (it would again)."""
        if worker not in self.running:
            return  # another of its pages got here first
        self.running.remove(worker)
        self.ended.append(worker)
        self.stats.inc("parse/processes_lost")
        if worker.answered == 0:
            self.given_up = True
            log.warning(
                "a page process ended before its first page: pages are analyzed in the "
                "crawler's process from now on"
            )
        else:
            log.warning(
                "a page process ended; its pages were analyzed inline, another takes its place"
            )


def _held(worker: _PageProcess) -> int:
    return len(worker.waiting)


def _child_environment() -> dict[str, str]:
    """This environment, with the directory harvestman was imported from first on the child's
    path (a checkout's ``src`` that only this process's ``sys.path`` knows)."""
    source = str(Path(harvestman.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{source}{os.pathsep}{path}" if path else source}
