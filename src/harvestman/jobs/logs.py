"""Per-execution log capture: the lines a run logs, kept for the store and for live readers.

``LogCapture`` is one logging handler on the ``harvestman`` logger. ``capture(execution_id)``
marks the current context (a context variable, so every task the run starts, and threads
started with ``asyncio.to_thread``, inherit it); records emitted in that context go to the
execution's buffer, others are ignored. The scheduler ``take``s new lines to store them and
``end``s the capture when the run ends; ``follow`` streams the lines live to any number of
readers (the API's SSE endpoint).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from harvestman.jobs.records import LogLine

_execution: ContextVar[int | None] = ContextVar("harvestman_execution", default=None)
_formatter = logging.Formatter()


@dataclass(slots=True)
class _Buffer:
    seq: int = 0
    dropped: int = 0
    pending: list[LogLine] = field(default_factory=list)
    readers: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[LogLine | None]]] = field(
        default_factory=list
    )


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
    def capture(self, execution_id: int) -> Iterator[None]:
        """Route the log records of this context to ``execution_id`` until the block ends."""
        with self._guard:
            self._buffers.setdefault(execution_id, _Buffer())
        token = _execution.set(execution_id)
        try:
            yield
        finally:
            _execution.reset(token)

    def emit(self, record: logging.LogRecord) -> None:
        execution_id = _execution.get()
        if execution_id is None:
            return
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + _formatter.formatException(record.exc_info)
        with self._guard:
            buffer = self._buffers.get(execution_id)
            if buffer is None:
                return
            if buffer.seq >= self.max_lines:
                buffer.dropped += 1
                return
            buffer.seq += 1
            line = LogLine(
                execution_id, buffer.seq, record.created, record.levelname, record.name, message
            )
            buffer.pending.append(line)
            readers = list(buffer.readers)
        for loop, queue in readers:
            loop.call_soon_threadsafe(queue.put_nowait, line)

    def take(self, execution_id: int) -> list[LogLine]:
        """The lines captured since the last ``take`` (to be stored)."""
        with self._guard:
            buffer = self._buffers.get(execution_id)
            if buffer is None:
                return []
            lines, buffer.pending = buffer.pending, []
            return lines

    def end(self, execution_id: int) -> list[LogLine]:
        """End an execution's capture: its last lines (with a note of any dropped), and the end
        of its live streams."""
        with self._guard:
            buffer = self._buffers.pop(execution_id, None)
        if buffer is None:
            return []
        lines = buffer.pending
        if buffer.dropped:
            note = LogLine(
                execution_id,
                buffer.seq + 1,
                self.clock(),
                "WARNING",
                __name__,
                f"{buffer.dropped} more log lines were dropped (at most {self.max_lines} are kept)",
            )
            lines.append(note)
            for loop, queue in buffer.readers:
                loop.call_soon_threadsafe(queue.put_nowait, note)
        for loop, queue in buffer.readers:
            loop.call_soon_threadsafe(queue.put_nowait, None)
        return lines

    def is_capturing(self, execution_id: int) -> bool:
        with self._guard:
            return execution_id in self._buffers

    async def follow(self, execution_id: int) -> AsyncIterator[LogLine]:
        """The execution's lines from now on, as they are logged, until it ends (nothing if it
        is not running here: read the stored lines instead)."""
        queue: asyncio.Queue[LogLine | None] = asyncio.Queue()
        entry = (asyncio.get_running_loop(), queue)
        with self._guard:
            buffer = self._buffers.get(execution_id)
            if buffer is None:
                return
            buffer.readers.append(entry)
        try:
            while (line := await queue.get()) is not None:
                yield line
        finally:
            with self._guard:
                if entry in buffer.readers:
                    buffer.readers.remove(entry)
