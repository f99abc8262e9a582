"""A running execution's counters: fetched, stored, failed, pages per second, and samples of
them over the run for its chart.

The runner counts each batch of outcomes the crawl stores (``RunProgress.observe``, called
from the crawl's ``on_pages`` callback: once per stored batch, never per request). The
process running executions stores the counters every ``jobs_progress_interval`` (5 s) and once
more as a run ends (``ProgressBoard.sample``), so the API shows them while the run goes.

``ProgressBoard.track(execution_id)`` marks the current context as the scheduler's
``LogCapture`` does: the runner finds its execution's counters with ``current_progress()``
(every task it starts inherits them), without the ``Runner`` contract growing an argument.

Samples are thinned when full (every other one dropped, the first and the newest kept), so a
long run's chart still spans the whole run with at most ``max_samples`` points:

>>> progress = RunProgress(started_at=0.0, max_samples=4)
>>> for t in range(1, 7):
...     progress.fetched = t * 10
...     _ = progress.sample(float(t))
>>> [s.at for s in progress.samples]
[1.0, 3.0, 5.0, 6.0]
>>> progress.pages_per_second
10.0
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field

from harvestman.jobs.records import ProgressSample
from harvestman.records import Outcome, UrlStatus

_progress: ContextVar[RunProgress | None] = ContextVar("harvestman_progress", default=None)


@dataclass(slots=True)
class RunProgress:
    """One execution's counters. ``fetched``: requests finished for good (a retry comes
    later, so it is not counted yet); ``stored``: pages stored without an error; ``failed``:
    requests that ended failed, after their retries (a robots.txt block, or a page that
    validation rejected, is fetched but neither stored nor failed)."""

    started_at: float
    max_samples: int = 360
    fetched: int = 0
    stored: int = 0
    failed: int = 0
    samples: list[ProgressSample] = field(default_factory=list)

    def observe(self, outcomes: Sequence[Outcome]) -> None:
        for outcome in outcomes:
            status = outcome.status
            if status is UrlStatus.PENDING:
                continue
            self.fetched += 1
            if status is UrlStatus.FAILED:
                self.failed += 1
            elif status is UrlStatus.COMPLETED:
                page = outcome.page
                if page is not None and not page.error_class:
                    self.stored += 1

    def sample(self, now: float) -> ProgressSample:
        """Record the counters at ``now`` (thinning the samples when full) and return them."""
        sample = ProgressSample(now, self.fetched, self.stored, self.failed)
        if self.samples and self.samples[-1].at >= now:
            self.samples[-1] = sample
        else:
            self.samples.append(sample)
        if len(self.samples) > self.max_samples:
            del self.samples[1:-1:2]
        return sample

    @property
    def pages_per_second(self) -> float:
        """Fetches per second between the last two samples (the run's start before the
        second); 0.0 before the first."""
        if not self.samples:
            return 0.0
        last = self.samples[-1]
        if len(self.samples) > 1:
            before = self.samples[-2]
            since, fetched = before.at, before.fetched
        else:
            since, fetched = self.started_at, 0
        span = last.at - since
        return round((last.fetched - fetched) / span, 2) if span > 0 else 0.0


def current_progress() -> RunProgress | None:
    """The counters of the execution this context runs (None outside ``track``)."""
    return _progress.get()


class ProgressBoard:
    """The counters of the executions a process runs, by execution id."""

    def __init__(self, max_samples: int = 360) -> None:
        self.max_samples = max_samples
        self._runs: dict[int, RunProgress] = {}

    @contextlib.contextmanager
    def track(self, execution_id: int, started_at: float) -> Iterator[RunProgress]:
        progress = RunProgress(started_at, self.max_samples)
        self._runs[execution_id] = progress
        token = _progress.set(progress)
        try:
            yield progress
        finally:
            _progress.reset(token)
            self._runs.pop(execution_id, None)

    def running(self) -> dict[int, RunProgress]:
        return dict(self._runs)
