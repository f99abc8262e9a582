"""The job state machine: every transition and every action, allowed and refused."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import update

from harvestman.jobs.errors import JobStateError
from harvestman.jobs.lifecycle import after_failure, after_success, retry_delay
from harvestman.jobs.records import Job, JobSpec, SourceSpec
from harvestman.jobs.states import (
    TRANSITIONS,
    Action,
    JobStatus,
    allowed_actions,
    can_transition,
    check_action,
)
from harvestman.store import dialect, migrate
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.tables import jobs

S = JobStatus
NOW = 1_800_000_000.0

ALLOWED_TRANSITIONS = {
    (S.PENDING, S.SCHEDULED),
    (S.SCHEDULED, S.RUNNING),
    (S.RUNNING, S.COMPLETED),
    (S.COMPLETED, S.SCHEDULED),
    (S.RUNNING, S.FAILED),
    (S.FAILED, S.PENDING),
    (S.SCHEDULED, S.PAUSED),
    (S.PAUSED, S.SCHEDULED),
    (S.SCHEDULED, S.CANCELLED),
    (S.RUNNING, S.CANCELLED),
    (S.PAUSED, S.CANCELLED),
    (S.PENDING, S.CANCELLED),
    (S.CANCELLED, S.SCHEDULED),
}

# (state, action) -> the state it leads to; every pair not listed is refused.
ALLOWED_ACTIONS = {
    (S.SCHEDULED, Action.PAUSE): S.PAUSED,
    (S.PAUSED, Action.RESUME): S.SCHEDULED,
    (S.SCHEDULED, Action.CANCEL): S.CANCELLED,
    (S.RUNNING, Action.CANCEL): S.CANCELLED,
    (S.PAUSED, Action.CANCEL): S.CANCELLED,
    (S.PENDING, Action.CANCEL): S.CANCELLED,
    (S.FAILED, Action.RETRY): S.PENDING,
    (S.SCHEDULED, Action.FORCE_RUN): S.SCHEDULED,
    (S.CANCELLED, Action.RESUME): S.SCHEDULED,
    (S.CANCELLED, Action.FORCE_RUN): S.SCHEDULED,
}

EVERY_PAIR = list(itertools.product(S, S))
EVERY_ACTION = list(itertools.product(S, Action))


@pytest.mark.parametrize(("current", "target"), EVERY_PAIR, ids=lambda s: s.value)
def test_only_the_listed_transitions_are_allowed(current: S, target: S) -> None:
    assert can_transition(current, target) is ((current, target) in ALLOWED_TRANSITIONS)


def test_no_state_is_a_dead_end() -> None:
    """A cancelled job can be resumed or run again: a cancel stops, it does not delete."""
    assert all(TRANSITIONS[state] for state in S)


@pytest.mark.parametrize(("state", "action"), EVERY_ACTION, ids=str)
def test_each_action_is_allowed_from_its_states_only(state: S, action: Action) -> None:
    expected = ALLOWED_ACTIONS.get((state, action))
    if expected is None:
        with pytest.raises(JobStateError) as refused:
            check_action(state, action, job_id=7)
        assert refused.value.state == state.value
        assert refused.value.action == action.value
        assert refused.value.allowed_actions == allowed_actions(state)
    else:
        assert check_action(state, action) is expected


@pytest.mark.parametrize(
    ("state", "actions"),
    [
        (S.PENDING, ["cancel"]),
        (S.SCHEDULED, ["pause", "cancel", "force-run"]),
        (S.RUNNING, ["cancel"]),
        (S.COMPLETED, []),
        (S.FAILED, ["retry"]),
        (S.PAUSED, ["resume", "cancel"]),
        (S.CANCELLED, ["resume", "force-run"]),
    ],
)
def test_allowed_actions_per_state(state: S, actions: list[str]) -> None:
    assert allowed_actions(state) == actions


# -- the actions on a real store ---------------------------------------------------------------


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[JobStore]:
    engine = dialect.make_engine(f"sqlite:///{tmp_path / 'jobs.db'}")
    migrate.upgrade(engine)
    async with JobStore(engine, clock=lambda: NOW) as job_store:
        yield job_store
    engine.dispose()


async def _job_in(store: JobStore, state: S) -> Job:
    source = await store.sources.create(
        SourceSpec(name=f"s-{state}", start_urls=["http://a.test/"])
    )
    job = await store.jobs.create(
        JobSpec(source_id=source.id, url="http://a.test/", interval_minutes=60)
    )
    with store.engine.begin() as conn:
        conn.execute(
            update(jobs)
            .where(jobs.c.id == job.id)
            .values(
                status=state.value,
                is_paused=state is S.PAUSED,
                cancelled_at=NOW - 60 if state is S.CANCELLED else None,
                next_run_at=NOW + 7200,
                current_retry_count=3 if state is S.FAILED else 0,
                lock_token="t" if state is S.RUNNING else None,
            )
        )
    return job


@pytest.mark.parametrize(("state", "action"), EVERY_ACTION, ids=str)
async def test_actions_on_stored_jobs(store: JobStore, state: S, action: Action) -> None:
    job = await _job_in(store, state)
    expected = ALLOWED_ACTIONS.get((state, action))
    if expected is None:
        with pytest.raises(JobStateError) as refused:
            await store.jobs.act(job.id, action)
        assert (refused.value.job_id, refused.value.state) == (job.id, state.value)
        assert refused.value.allowed_actions == allowed_actions(state)
        assert (await store.jobs.get(job.id)).status is state
        return
    after = await store.jobs.act(job.id, action)
    assert after.status is expected
    assert after.is_paused is (expected is S.PAUSED)
    if action is Action.RETRY:
        assert (after.current_retry_count, after.next_run_at) == (0, NOW)
    if action is Action.FORCE_RUN:
        assert after.next_run_at == NOW
    if action is Action.RESUME:
        assert after.next_run_at is not None
        assert NOW <= after.next_run_at < NOW + 3600  # a slot within one interval
    if action in (Action.RESUME, Action.FORCE_RUN):
        assert after.cancelled_at is None
    if action is Action.CANCEL:
        # A cancelled job shows no next run until it is resumed or run now.
        assert (after.cancelled_at, after.next_run_at) == (NOW, None)
        # A running job keeps its lock until the instance running it lets go.
        assert after.lock_token == ("t" if state is S.RUNNING else None)


async def test_a_running_job_cannot_be_deleted_but_a_cancelled_one_can(store: JobStore) -> None:
    job = await _job_in(store, S.RUNNING)
    with pytest.raises(JobStateError) as refused:
        await store.jobs.delete(job.id)
    assert refused.value.allowed_actions == ["cancel"]
    await store.jobs.cancel(job.id)
    await store.jobs.delete(job.id)
    assert (await store.jobs.list()).total == 0


# -- what the scheduler does after a run follows the same table --------------------------------


def _job(**fields: object) -> Job:
    values: dict[str, object] = {
        "id": 1,
        "source_id": 1,
        "url": "http://a.test/",
        "status": S.RUNNING,
        "interval_minutes": 30,
        "next_run_at": NOW,
        "created_at": NOW,
        "updated_at": NOW,
    }
    values.update(fields)
    return Job(**values)  # type: ignore[arg-type]


def _walk(path: tuple[S, ...]) -> None:
    state = S.RUNNING
    for target in path:
        assert can_transition(state, target), (state, target)
        state = target


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (_job(), (S.SCHEDULED, NOW + 1800, 0)),
        (_job(interval_minutes=None), (S.COMPLETED, None, 0)),
        (_job(schedule_enabled=False), (S.COMPLETED, None, 0)),
        (_job(current_retry_count=2), (S.SCHEDULED, NOW + 1800, 0)),
    ],
)
def test_after_a_success(job: Job, expected: tuple[S, float | None, int]) -> None:
    step = after_success(job, job.interval_seconds, NOW + 60)
    assert (step.status, step.next_run_at, step.retry_count) == expected
    _walk(step.path)


@pytest.mark.parametrize(
    ("retry_count", "expected"),
    [
        (0, (S.PENDING, NOW + 60, 1)),
        (1, (S.PENDING, NOW + 120, 2)),
        (2, (S.PENDING, NOW + 240, 3)),
        (3, (S.FAILED, None, 3)),
    ],
)
def test_after_a_failure(retry_count: int, expected: tuple[S, float | None, int]) -> None:
    step = after_failure(_job(current_retry_count=retry_count), NOW)
    assert (step.status, step.next_run_at, step.retry_count) == expected
    _walk(step.path)


def test_an_interrupted_run_is_retried_at_once_without_using_an_attempt() -> None:
    step = after_failure(_job(current_retry_count=1), NOW, count_attempt=False)
    assert (step.status, step.next_run_at, step.retry_count) == (S.PENDING, NOW, 1)


@pytest.mark.parametrize(
    ("attempt", "delay"),
    [(1, 60), (2, 120), (3, 240), (4, 480), (5, 960), (6, 1920), (7, 3600), (50, 3600)],
)
def test_retry_backoff_doubles_up_to_an_hour(attempt: int, delay: float) -> None:
    assert retry_delay(60, attempt) == delay
