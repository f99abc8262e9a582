"""A run's log line per fetched URL: its status, bytes, time, verdict and error.

The lines are written from the crawl's ``on_pages`` callback, once per stored batch, from
outcomes the crawl has already built: nothing is added to a request's path. They exist only
while a run's log is captured (``jobs.logs``), and only for the first ``job_log_url_lines``
URLs of a run (5,000): the run's log keeps 10,000 lines, and its own lines must fit. The rest
are counted in one closing line. A line reads::

    fetched http://shop.test/a status=200 bytes=5120 ms=31 verdict=stored
    fetched http://shop.test/b status=404 bytes=210 ms=12 verdict=failed error=HttpStatusError: …

Verdicts: ``stored``, ``not modified`` (a 304), ``duplicate of <url>`` (near-duplicates),
``rejected: <reason>`` (validation), ``blocked`` (robots.txt, a refused host), ``failed``,
``retrying`` (a retry comes later). A stored page is logged at INFO; a rejected, blocked or
failed one at WARNING, so the log's level filter finds them.

The lines go straight to the run's ``LogCapture`` (``LogCapture.add``, one lock per batch),
not through ``logging``: a record and the process's stderr handler cost ~15 times the line
(measured on a loaded 2-core machine: ~90 µs a line through ``logging``, +10% of a local
3,000-page job run's CPU; ~12 µs this way, within the noise of the run's CPU), and ``serve``'s
stderr would repeat every URL of every run. The process's own log keeps the run's own lines
(its start, end, errors).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from harvestman.errors import ContentRejected, ImageRejected
from harvestman.jobs.logs import LogCapture, capturing
from harvestman.records import Outcome, UrlStatus

LOGGER = "harvestman.jobs.fetched"  # the logger name the lines carry
log = logging.getLogger(LOGGER)
_LEVEL_NAMES = {logging.INFO: "INFO", logging.WARNING: "WARNING"}

_REJECTED = frozenset({ContentRejected.__name__, ImageRejected.__name__})
_MAX_ERROR = 300  # characters of an error message in a line


def verdict(outcome: Outcome) -> tuple[int, str]:
    """The log level and verdict of one outcome."""
    page = outcome.page
    if outcome.error_class in _REJECTED:
        reason = page.rejection_reason if page is not None else None
        status = logging.INFO if outcome.status is UrlStatus.PENDING else logging.WARNING
        return status, f"rejected: {reason or outcome.error or outcome.error_class}"
    if outcome.status is UrlStatus.PENDING:
        return logging.INFO, "retrying"
    if outcome.status is UrlStatus.BLOCKED:
        return logging.WARNING, "blocked"
    if outcome.status is UrlStatus.FAILED:
        return logging.WARNING, "failed"
    if outcome.status_code == 304:
        return logging.INFO, "not modified"
    if page is not None and page.near_duplicate_of:
        return logging.INFO, f"duplicate of {page.near_duplicate_of}"
    return logging.INFO, "stored"


def describe(outcome: Outcome) -> tuple[int, str]:
    """The level and message of an outcome's line.

    >>> from harvestman.records import CrawlRequest, PageRecord
    >>> request = CrawlRequest(1, "http://a.test/", "h", "a.test", 0, 0)
    >>> page = PageRecord("http://a.test/", "http://a.test/", "a.test", 200, "text/html",
    ...                   5120, 0.0, 31)
    >>> describe(Outcome(request, UrlStatus.COMPLETED, 0.0, 0, status_code=200, page=page))[1]
    'fetched http://a.test/ status=200 bytes=5120 ms=31 verdict=stored'
    """
    level, said = verdict(outcome)
    request, page = outcome.request, outcome.page
    size: int | None = None
    elapsed = outcome.elapsed_ms
    if page is not None:
        size, elapsed = page.content_length, page.crawl_duration_ms
    elif outcome.image is not None:
        size = outcome.image.bytes
    elif outcome.status_code == 304:
        size = 0  # not modified: no body
    kind = "" if request.kind == "page" else f"{request.kind} "
    message = (
        f"fetched {kind}{request.url} status={_or_dash(outcome.status_code)} "
        f"bytes={_or_dash(size)} ms={_or_dash(elapsed)} verdict={said}"
    )
    if outcome.error_class and not said.startswith("rejected"):
        message += f" error={outcome.error_class}: {(outcome.error or '')[:_MAX_ERROR]}"
    return level, message


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


class UrlLines:
    """Writes a line per outcome to ``execution_id``'s captured log, for the first
    ``max_lines`` of a run."""

    def __init__(
        self,
        capture: LogCapture,
        execution_id: int,
        max_lines: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.capture = capture
        self.execution_id = execution_id
        self.max_lines = max_lines
        self.clock = clock
        self.written = 0
        self.skipped = 0

    @classmethod
    def for_run(cls, max_lines: int) -> UrlLines | None:
        """The lines of the run of this context; None when no log is captured here or
        ``max_lines`` is 0 (nothing is built, nothing is checked per batch)."""
        captured = capturing()
        if max_lines <= 0 or captured is None:
            return None
        return cls(*captured, max_lines)

    def observe(self, outcomes: Sequence[Outcome]) -> None:
        room = self.max_lines - self.written
        if room < len(outcomes):
            self.skipped += len(outcomes) - max(room, 0)
            outcomes = outcomes[: max(room, 0)]
        if not outcomes:
            return
        now = self.clock()
        lines = []
        for outcome in outcomes:
            level, message = describe(outcome)
            lines.append((now, _LEVEL_NAMES[level], LOGGER, message))
        self.capture.add(self.execution_id, lines)
        self.written += len(outcomes)

    def close(self) -> None:
        """Say how many fetched URLs got no line (the run's last line from here)."""
        if self.skipped:  # through logging: the process's own log says it too
            log.info(
                "%d more fetched URLs have no line of their own: a run logs the first %d "
                "(job_log_url_lines); the run's counters include them",
                self.skipped,
                self.max_lines,
            )
