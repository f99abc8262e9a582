"""Per-execution log capture: the lines a run logs, numbered and kept until stored.

``LogCapture`` is one logging handler on the ``harvestman`` logger. ``capture(execution_id)``
marks the current context (a context variable, so every task the run starts, and threads
started with ``asyncio.to_thread``, inherit it); records emitted in that context go to the
execution's buffer, others are ignored. Each line gets the next sequence number of its
execution. ``LogWriter`` stores what a capture holds, in ``seq`` order: the process running
executions flushes it every ``jobs_log_flush_interval`` and, with ``ending``, before it
records a run's end (the scheduler does both; so must any other process that runs them).

Readers never see a line before it is stored: the API streams an execution's log from the
store (``seq`` after the client's last one), so a line logged in any process, on any instance,
reaches every reader exactly once, and ``end`` comes only after the last stored line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from harvestman.errors import HarvestmanError, StoreRejected
from harvestman.jobs.records import LogLine

log = logging.getLogger(__name__)

_execution: ContextVar[int | None] = ContextVar("harvestman_execution", default=None)
_capture: ContextVar[LogCapture | None] = ContextVar("harvestman_log_capture", default=None)
_formatter = logging.Formatter()


@dataclass(slots=True)
class _Buffer:
    seq: int = 0  # the last number given
    kept: int = 0
    dropped: int = 0
    pending: list[LogLine] = field(default_factory=list)


def capturing() -> tuple[LogCapture, int] | None:
    """The capture and the execution whose log this context goes to (None: no log is
    captured here)."""
    capture, execution_id = _capture.get(), _execution.get()
    return None if capture is None or execution_id is None else (capture, execution_id)


class LogCapture(logging.Handler):
    """Captures each execution's log lines (at most ``max_lines`` per execution)."""

    def __init__(
        self,
        *,
        level: int = logging.INFO,
        max_lines: int = 10_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(level)
        self.max_lines = max_lines
        self.clock = clock
        self._buffers: dict[int, _Buffer] = {}
        self._guard = threading.Lock()
        self._logger: logging.Logger | None = None

    def install(self, logger_name: str = "harvestman") -> None:
        """Attach to ``logger_name``, lowering its level to the capture level if needed (the
        lines a run logs at INFO must reach the handler). Installing twice changes nothing."""
        if self._logger is not None:
            return
        logger = logging.getLogger(logger_name)
        if logger.getEffectiveLevel() > self.level:
            logger.setLevel(self.level)
        logger.addHandler(self)
        self._logger = logger

    def uninstall(self) -> None:
        if self._logger is not None:
            self._logger.removeHandler(self)
            self._logger = None

    def continue_after(self, execution_id: int, seq: int) -> None:
        """Number ``execution_id``'s next lines after ``seq``: the lines another process
        stored before this one took the execution over."""
        with self._guard:
            buffer = self._buffers.setdefault(execution_id, _Buffer())
            buffer.seq = max(buffer.seq, seq)

    @contextlib.contextmanager
    def capture(self, execution_id: int, *, after: int = 0) -> Iterator[None]:
        """Route the log records of this context to ``execution_id`` until the block ends;
        its lines are numbered from ``after + 1`` (``after``: the last line the store already
        holds for it, when a run of the execution is taken up again)."""
        with self._guard:
            self._buffers.setdefault(execution_id, _Buffer(seq=after))
        token = _execution.set(execution_id)
        capture_token = _capture.set(self)
        try:
            yield
        finally:
            _capture.reset(capture_token)
            _execution.reset(token)

    def emit(self, record: logging.LogRecord) -> None:
        execution_id = _execution.get()
        if execution_id is None:
            return
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + _formatter.formatException(record.exc_info)
        self.add(execution_id, [(record.created, record.levelname, record.name, message)])

    def add(self, execution_id: int, lines: Sequence[tuple[float, str, str, str]]) -> None:
        """Capture ``(created, level, logger, message)`` lines for ``execution_id`` without a
        logging record each: for a caller with many lines and no use for the process's own
        log (``jobs.urllines``: a record and its handlers cost several times the line)."""
        with self._guard:
            buffer = self._buffers.get(execution_id)
            if buffer is None:
                return
            for created, level, logger, message in lines:
                if buffer.kept >= self.max_lines:
                    buffer.dropped += 1
                    continue
                buffer.seq += 1
                buffer.kept += 1
                buffer.pending.append(
                    LogLine(execution_id, buffer.seq, created, level, logger, message)
                )

    def take_all(self) -> list[LogLine]:
        """The lines of every execution captured since the last ``take``, each execution's in
        ``seq`` order."""
        with self._guard:
            lines: list[LogLine] = []
            for buffer in self._buffers.values():
                lines += buffer.pending
                buffer.pending = []
            return lines

    def take(self, execution_id: int) -> list[LogLine]:
        """The lines captured since the last ``take`` (to be stored), in ``seq`` order."""
        with self._guard:
            buffer = self._buffers.get(execution_id)
            if buffer is None:
                return []
            lines, buffer.pending = buffer.pending, []
            return lines

    def end(self, execution_id: int) -> list[LogLine]:
        """End an execution's capture: its last lines, with a note of any dropped."""
        with self._guard:
            buffer = self._buffers.pop(execution_id, None)
        if buffer is None:
            return []
        lines = buffer.pending
        if buffer.dropped:
            lines.append(
                LogLine(
                    execution_id,
                    buffer.seq + 1,
                    self.clock(),
                    "WARNING",
                    __name__,
                    f"{buffer.dropped} more log lines were dropped "
                    f"(at most {self.max_lines} are kept)",
                )
            )
        return lines

    def is_capturing(self, execution_id: int) -> bool:
        with self._guard:
            return execution_id in self._buffers


class LogStore(Protocol):
    """Where log lines are kept (``JobStore.executions``): storing a line twice (same
    execution and ``seq``) keeps one."""

    async def append_logs(self, lines: Sequence[LogLine]) -> None: ...


class LogWriter:
    """Stores the lines ``capture`` holds, one flush at a time, so they are committed in
    ``seq`` order: a reader that saw line 7 never finds a line 5 stored after it. Lines go
    again with the next flush while the store is away, however long (they are the capture's,
    at most ``max_lines`` an execution), and ``max_tries`` times at most when it refused them
    (StoreRejected)."""

    def __init__(self, capture: LogCapture, store: LogStore, *, max_tries: int = 3) -> None:
        self.capture = capture
        self.store = store
        self.max_tries = max_tries
        self._flushing = asyncio.Lock()
        self._unsent: list[LogLine] = []
        self._tries = 0

    async def flush(self, ending: int | None = None) -> None:
        """Store every captured line not stored yet; with ``ending``, end that execution's
        capture and store its last lines too. Raises the store's HarvestmanError."""
        async with self._flushing:
            lines, self._unsent = self._unsent, []
            lines += self.capture.take_all()
            if ending is not None:
                lines += self.capture.end(ending)
            try:
                await self.store.append_logs(lines)
            except StoreRejected:
                self._tries += 1
                if self._tries < self.max_tries:
                    self._unsent = lines
                else:
                    self._tries = 0
                    log.warning("dropped %d job log lines the store refused", len(lines))
                raise
            except HarvestmanError:  # away: every line waits (the capture bounds them)
                self._unsent = lines
                raise
            self._tries = 0
