"""Load balancing: recurring jobs spread over 15-minute slots.

Pure functions over next-run times, so the store only reads the times and applies the moves:

- a new or resumed job takes the least-loaded slot among those it may run in (within one
  interval from now, at most the 24-hour window; ties go to the earliest slot);
- a recurring job keeps its phase (``lifecycle.next_run_keeping_phase``);
- a rebalance moves jobs out of slots above their fair share, never a job that runs within
  30 minutes or was placed in the last hour;
- the distribution score is the share of jobs in slots within their fair share
  (``ceil(jobs / slots)``): 1.0 is perfectly even, and a rebalance that can move every extra
  job brings it to 1.0.

>>> slot_of(900.0 * 7 + 3)
7
>>> distribution_score([3, 0, 0, 1], total=4)
0.5
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

SLOT_SECONDS = 900.0
WINDOW_SECONDS = 86400.0
PROTECTION_SECONDS = 1800.0
COOLDOWN_SECONDS = 3600.0


def slot_of(t: float) -> int:
    return math.floor(t / SLOT_SECONDS)


@dataclass(slots=True, frozen=True)
class PlacedJob:
    """What the balancer knows of a job: when it runs next and whether it may move."""

    job_id: int
    next_run_at: float
    interval: float | None  # seconds; None for a one-time job
    last_moved_at: float | None = None
    movable: bool = True  # scheduled, not paused, not running


@dataclass(slots=True, frozen=True)
class SlotLoad:
    start: float
    count: int


@dataclass(slots=True)
class Distribution:
    slot_seconds: float
    window_seconds: float
    total_jobs: int
    slots: list[SlotLoad]
    score: float
    peak_start: float | None
    peak_count: int


@dataclass(slots=True, frozen=True)
class Move:
    job_id: int
    old_run_at: float
    new_run_at: float


@dataclass(slots=True)
class RebalancePlan:
    moves: list[Move] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)  # job id -> reason
    score_before: float = 1.0
    score_after: float = 1.0


def distribution_score(counts: Sequence[int], total: int) -> float:
    """1 - (jobs above their slot's fair share) / jobs; 1.0 for no jobs."""
    if total <= 0 or not counts:
        return 1.0
    fair = math.ceil(total / len(counts))
    overflow = sum(max(0, count - fair) for count in counts)
    return round(1.0 - overflow / total, 4)


def _window(now: float, window: float) -> tuple[int, int]:
    first = slot_of(now)
    return first, max(1, math.ceil(window / SLOT_SECONDS))


def _window_counts(times: Iterable[float], now: float, window: float) -> tuple[int, list[int]]:
    first, n = _window(now, window)
    counts = [0] * n
    for t in times:
        index = max(slot_of(t) - first, 0)  # an overdue job runs in the current slot
        if index < n:
            counts[index] += 1
    return first, counts


def least_loaded_time(
    times: Iterable[float], now: float, interval: float | None, window: float = WINDOW_SECONDS
) -> float:
    """When a new or resumed job should run next: the start of the least-loaded slot within
    ``min(interval, window)`` from now (or now, inside the current slot); one-time jobs: now."""
    if interval is None:
        return now
    horizon = now + max(min(interval, window), 1.0)
    first = slot_of(now)
    last = slot_of(horizon - 1e-6)
    loads = Counter(max(slot_of(t), first) for t in times if t < horizon)
    best = min(range(first, last + 1), key=lambda slot: (loads[slot], slot))
    return max(now, best * SLOT_SECONDS)


def distribution(
    times: Iterable[float], now: float, window: float = WINDOW_SECONDS
) -> Distribution:
    """Next runs per slot over the coming ``window``, with the score and the peak slot."""
    first, counts = _window_counts(times, now, window)
    total = sum(counts)
    peak = max(range(len(counts)), key=lambda i: (counts[i], -i))
    return Distribution(
        slot_seconds=SLOT_SECONDS,
        window_seconds=window,
        total_jobs=total,
        slots=[SlotLoad((first + i) * SLOT_SECONDS, c) for i, c in enumerate(counts)],
        score=distribution_score(counts, total),
        peak_start=(first + peak) * SLOT_SECONDS if total else None,
        peak_count=counts[peak],
    )


def plan_rebalance(
    jobs: Sequence[PlacedJob],
    now: float,
    *,
    window: float = WINDOW_SECONDS,
    protection: float = PROTECTION_SECONDS,
    cooldown: float = COOLDOWN_SECONDS,
) -> RebalancePlan:
    """The moves that bring overloaded slots down to their fair share (a dry run: nothing is
    changed). A job moves only within one interval from now, to a slot below the fair share
    that starts after the protection window; the emptiest such slot wins, the earliest on ties.
    """
    first, n = _window(now, window)
    in_window = [job for job in jobs if max(slot_of(job.next_run_at) - first, 0) < n]
    first, counts = _window_counts((job.next_run_at for job in in_window), now, window)
    total = len(in_window)
    plan = RebalancePlan(score_before=distribution_score(counts, total))
    fair = math.ceil(total / n) if total else 0
    by_slot: dict[int, list[PlacedJob]] = {}
    for job in in_window:
        by_slot.setdefault(max(slot_of(job.next_run_at) - first, 0), []).append(job)
    for index in sorted(by_slot):
        excess = counts[index] - fair
        for job in sorted(by_slot[index], key=lambda j: j.job_id):
            if excess <= 0:
                break
            reason = _unmovable(job, now, protection, cooldown)
            if reason is None:
                horizon = now + min(job.interval or window, window)
                targets = [
                    i
                    for i in range(n)
                    if counts[i] < fair
                    and (first + i) * SLOT_SECONDS >= now + protection
                    and (first + i) * SLOT_SECONDS < horizon
                ]
                if not targets:
                    reason = "no_free_slot"
            if reason is not None:
                plan.skipped[job.job_id] = reason
                continue
            target = min(targets, key=lambda i: (counts[i], i))
            start = (first + target) * SLOT_SECONDS
            # Keep the job's offset inside its slot, so a slot's jobs stay spread out.
            new_time = start + (job.next_run_at - (first + index) * SLOT_SECONDS)
            if not start <= new_time < min(start + SLOT_SECONDS, horizon):
                new_time = start
            plan.moves.append(Move(job.job_id, job.next_run_at, new_time))
            counts[index] -= 1
            counts[target] += 1
            excess -= 1
    plan.score_after = distribution_score(counts, total)
    return plan


def _unmovable(job: PlacedJob, now: float, protection: float, cooldown: float) -> str | None:
    if not job.movable:
        return "not_scheduled"
    if job.interval is None:
        return "one_time"
    if job.next_run_at - now < protection:
        return "runs_soon"
    if job.last_moved_at is not None and now - job.last_moved_at < cooldown:
        return "moved_recently"
    return None
