"""The job state machine: seven states, the transitions between them, and the user actions.

::

    pending ──► scheduled ──► running ──► completed ──► scheduled   (recurring)
                                 └──────► failed ────► pending      (retry)
    scheduled ──► paused ──► scheduled                               (resume)
    pending, scheduled, running, paused ──► cancelled ──► scheduled  (resume, run now)

``completed`` (a one-time job), ``failed`` (retries exhausted) and ``cancelled`` are where a job
rests; only a manual retry leaves ``failed``, and only the user's resume or run now leaves
``cancelled`` (a cancel is a stop, not a deletion: the job keeps its settings and history).

>>> check_action(JobStatus.SCHEDULED, Action.PAUSE)
<JobStatus.PAUSED: 'paused'>
>>> allowed_actions(JobStatus.FAILED)
['retry']
"""

from __future__ import annotations

from enum import StrEnum

from harvestman.jobs.errors import JobStateError


class JobStatus(StrEnum):
    PENDING = "pending"
    SCHEDULED = "scheduled"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    PAUSED = "paused"
    CANCELLED = "cancelled"


class Action(StrEnum):
    """What a user may ask of a job (the API's job-control endpoints)."""

    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"
    RETRY = "retry"
    FORCE_RUN = "force-run"


S = JobStatus

TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    S.PENDING: frozenset({S.SCHEDULED, S.CANCELLED}),
    S.SCHEDULED: frozenset({S.RUNNING, S.PAUSED, S.CANCELLED}),
    S.RUNNING: frozenset({S.COMPLETED, S.FAILED, S.CANCELLED}),
    S.COMPLETED: frozenset({S.SCHEDULED}),
    S.FAILED: frozenset({S.PENDING}),
    S.PAUSED: frozenset({S.SCHEDULED, S.CANCELLED}),
    S.CANCELLED: frozenset({S.SCHEDULED}),
}

# action -> (the states it is allowed from, the state it leads to)
ACTIONS: dict[Action, tuple[frozenset[JobStatus], JobStatus]] = {
    Action.PAUSE: (frozenset({S.SCHEDULED}), S.PAUSED),
    Action.RESUME: (frozenset({S.PAUSED, S.CANCELLED}), S.SCHEDULED),
    Action.CANCEL: (frozenset({S.SCHEDULED, S.RUNNING, S.PAUSED, S.PENDING}), S.CANCELLED),
    Action.RETRY: (frozenset({S.FAILED}), S.PENDING),
    # Force-run keeps the job scheduled (or schedules a cancelled one) and makes it due now.
    Action.FORCE_RUN: (frozenset({S.SCHEDULED, S.CANCELLED}), S.SCHEDULED),
}

# The states the poller takes jobs from; a pending job passes through scheduled as it is taken.
RUNNABLE: frozenset[JobStatus] = frozenset({S.PENDING, S.SCHEDULED})


def can_transition(current: JobStatus, target: JobStatus) -> bool:
    return target in TRANSITIONS[current]


def check_transition(job_id: int, current: JobStatus, target: JobStatus) -> None:
    """Raise JobStateError unless ``current -> target`` is one of the listed transitions."""
    if not can_transition(current, target):
        raise JobStateError(
            job_id, current.value, f"move to {target.value}", allowed_actions(current)
        )


def allowed_actions(state: JobStatus) -> list[str]:
    """The actions ``state`` allows, in a stable order."""
    return [action.value for action, (sources, _) in ACTIONS.items() if state in sources]


def check_action(state: JobStatus, action: Action, job_id: int = 0) -> JobStatus:
    """The state ``action`` leads to from ``state``; JobStateError when it is not allowed."""
    sources, target = ACTIONS[action]
    if state not in sources:
        raise JobStateError(job_id, state.value, action.value, allowed_actions(state))
    return target
