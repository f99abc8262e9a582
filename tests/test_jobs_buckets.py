"""Load balancing over 15-minute slots: placement, phase, score, rebalance and its preview."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harvestman.jobs.buckets import (
    SLOT_SECONDS,
    Move,
    PlacedJob,
    distribution,
    distribution_score,
    least_loaded_time,
    plan_rebalance,
)
from harvestman.jobs.lifecycle import next_run_keeping_phase
from harvestman.jobs.records import JobSpec, SourceSpec
from harvestman.store import dialect, migrate
from harvestman.store.jobs.db import JobStore

NOW = 1_800_000_000.0  # the start of a slot
SLOT = SLOT_SECONDS
HOUR = 3600.0


@pytest.mark.parametrize(
    ("times", "now", "interval", "expected"),
    [
        ([], NOW, 1800, NOW),  # all empty: the current slot, at once
        ([NOW], NOW, 1800, NOW + SLOT),
        ([NOW, NOW + SLOT], NOW, HOUR, NOW + 2 * SLOT),
        ([NOW, NOW + SLOT], NOW, 1800, NOW),  # both slots full once: the earliest
        ([NOW + 100], NOW + 300, 1800, NOW + SLOT),  # mid-slot: the next slot's start
        ([], NOW + 300, 1800, NOW + 300),
        ([NOW - 50], NOW, HOUR, NOW + SLOT),  # overdue jobs load the current slot
        ([NOW + 2 * SLOT], NOW, 600, NOW),  # a 10-minute job looks no further than 10 minutes
        ([NOW, NOW + SLOT, NOW + 2 * SLOT], NOW, None, NOW),  # one-time: now
    ],
)
def test_new_jobs_take_the_least_loaded_slot_within_their_interval(
    times: list[float], now: float, interval: float | None, expected: float
) -> None:
    assert least_loaded_time(times, now, interval) == expected


def test_a_week_long_interval_looks_only_one_day_ahead() -> None:
    full_day = [NOW + i * SLOT for i in range(96)]
    assert least_loaded_time(full_day, NOW, 7 * 86400) == NOW  # ties: the earliest


@pytest.mark.parametrize(
    ("planned", "interval", "now", "expected"),
    [
        (NOW, 1800, NOW + 10, NOW + 1800),
        (NOW, 1800, NOW + 1800, NOW + 1800),
        (NOW, 1800, NOW + 1801, NOW + 3600),  # late: whole intervals on the same phase
        (NOW + 120, HOUR, NOW + 5 * HOUR, NOW + 5 * HOUR + 120),
    ],
)
def test_recurring_jobs_keep_their_phase(
    planned: float, interval: float, now: float, expected: float
) -> None:
    assert next_run_keeping_phase(planned, interval, now) == expected


@pytest.mark.parametrize(
    ("counts", "score"),
    [
        ([1, 1, 1, 1], 1.0),
        ([2, 1, 1, 0], 0.75),
        ([4, 0, 0, 0], 0.25),
        ([0, 0, 0, 0], 1.0),
        ([3, 2, 2, 2], 1.0),  # 9 jobs, 4 slots: 3 is the fair share
        ([5, 2, 1, 1], 7 / 9),  # 9 jobs: 3 each; 2 too many
    ],
)
def test_distribution_score(counts: list[int], score: float) -> None:
    assert distribution_score(counts, sum(counts)) == pytest.approx(score, abs=1e-4)


def test_distribution_counts_next_runs_per_slot_over_the_window() -> None:
    times = [NOW - 5, NOW + 10, NOW + SLOT, NOW + 2 * HOUR, NOW + 2 * HOUR + 1, NOW + 3 * HOUR]
    result = distribution(times, NOW, window=2 * HOUR)
    assert [slot.count for slot in result.slots] == [2, 1, 0, 0, 0, 0, 0, 0]
    assert [slot.start for slot in result.slots[:2]] == [NOW, NOW + SLOT]
    assert (result.total_jobs, result.peak_start, result.peak_count) == (3, NOW, 2)
    assert result.score == pytest.approx(2 / 3, abs=1e-4)


def _hourly(job_id: int, at: float, moved: float | None = None, movable: bool = True) -> PlacedJob:
    return PlacedJob(job_id, at, HOUR * 4, last_moved_at=moved, movable=movable)


def test_a_rebalance_moves_extra_jobs_to_empty_slots_but_not_protected_ones() -> None:
    crowded = NOW + 2 * HOUR  # slot 8
    jobs = [
        _hourly(1, crowded),
        _hourly(2, crowded + 60),
        _hourly(3, crowded + 120, moved=NOW - 1800),  # moved half an hour ago
        _hourly(4, crowded + 180, movable=False),  # paused or running
        _hourly(5, crowded + 240),
        _hourly(6, NOW + 600),  # runs within 30 minutes
        _hourly(7, NOW + 700),
        PlacedJob(8, crowded + 300, None),  # a one-time job
    ]
    plan = plan_rebalance(jobs, NOW, window=4 * HOUR)  # 16 slots, 8 jobs: fair share 1
    # Slot 2 is the first after the protection window; each job keeps its offset in its slot.
    assert plan.moves == [
        Move(1, crowded, NOW + 2 * SLOT),
        Move(2, crowded + 60, NOW + 3 * SLOT + 60),
        Move(5, crowded + 240, NOW + 4 * SLOT + 240),
    ]
    assert plan.skipped == {
        3: "moved_recently",
        4: "not_scheduled",
        6: "runs_soon",
        7: "runs_soon",
        8: "one_time",
    }
    assert (plan.score_before, plan.score_after) == (0.25, 0.625)


def test_a_job_moves_only_within_one_interval_from_now() -> None:
    jobs = [PlacedJob(i, NOW + HOUR - 10 + i, HOUR) for i in range(1, 4)]
    plan = plan_rebalance(jobs, NOW)
    # All three run at +59:5x (slot 3); an hourly job may only go to slot 2 (+30 min).
    assert plan.moves == [Move(1, NOW + HOUR - 9, NOW + 2 * SLOT + SLOT - 9)]
    assert plan.skipped == {2: "no_free_slot", 3: "no_free_slot"}


# -- on the store ------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def store(tmp_path: Path, clock: Clock) -> AsyncIterator[JobStore]:
    engine = dialect.make_engine(f"sqlite:///{tmp_path / 'jobs.db'}")
    migrate.upgrade(engine)
    async with JobStore(engine, clock=clock) as job_store:
        yield job_store
    engine.dispose()


async def test_new_jobs_spread_over_slots_and_a_resumed_one_takes_the_emptiest(
    store: JobStore, clock: Clock
) -> None:
    source = await store.sources.create(SourceSpec(name="s", start_urls=["http://a.test/"]))
    spec = {"source_id": source.id, "url": "http://a.test/", "interval_minutes": 1}
    created = [
        await store.jobs.create(JobSpec(**spec, interval_type="hours"))  # type: ignore[arg-type]
        for _ in range(6)
    ]
    # An hour holds four slots: the first four jobs fill them, the next two double up.
    assert [j.next_run_at - NOW for j in created] == [0, 900, 1800, 2700, 0, 900]
    assert [j.last_moved_at for j in created] == [NOW] * 6
    await store.jobs.pause(created[2].id)
    clock.now += 60
    resumed = await store.jobs.resume(created[2].id)
    assert resumed.next_run_at == NOW + 1800  # its old slot is the emptiest again
    assert (await store.jobs.distribution()).total_jobs == 6


async def test_rebalance_preview_changes_nothing_and_apply_moves_the_planned_jobs(
    store: JobStore, clock: Clock
) -> None:
    source = await store.sources.create(SourceSpec(name="s", start_urls=["http://a.test/"]))
    crowded = NOW + 3 * HOUR
    for i in range(4):
        await store.jobs.create(
            JobSpec(
                source_id=source.id,
                url=f"http://a.test/{i}",
                interval_minutes=12,
                interval_type="hours",
                next_run_at=crowded + i,
            )
        )
    before = await store.jobs.distribution()
    assert (before.total_jobs, before.peak_start, before.peak_count, before.score) == (
        4,
        crowded,
        4,
        0.25,
    )
    preview = await store.jobs.rebalance(dry_run=True)
    planned = [(m.job_id, m.new_run_at) for m in preview.moves]
    assert planned == [(1, NOW + 1800), (2, NOW + 2701), (3, NOW + 3602)]
    assert (preview.score_before, preview.score_after) == (0.25, 1.0)
    assert [j.next_run_at for j in (await store.jobs.list()).items] == [
        crowded + i for i in range(4)
    ]

    await store.jobs.force_run(4)  # changed since the preview: job 4 runs now
    # A planned move of a job that changed meanwhile is not applied.
    assert await store.jobs.apply_moves([Move(4, crowded + 3, NOW + 5000)], NOW) == []
    applied = await store.jobs.rebalance(dry_run=False)  # plans afresh, then applies
    assert [(m.job_id, m.new_run_at) for m in applied.moves] == planned[:2]
    assert applied.score_after == 1.0
    runs = {j.id: j.next_run_at for j in (await store.jobs.list()).items}
    assert runs == {1: NOW + 1800, 2: NOW + 2701, 3: crowded + 2, 4: NOW}
    assert (await store.jobs.get(1)).last_moved_at == NOW
    # Moved jobs are left alone for an hour.
    clock.now += 1000
    again = await store.jobs.rebalance(dry_run=True)
    assert again.moves == []
