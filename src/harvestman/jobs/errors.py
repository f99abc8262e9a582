"""The failures of the jobs domain, a subtree of ``harvestman.errors.HarvestmanError``::

    HarvestmanError
    └── JobsError
        ├── NotFound            no source, job or execution with that id        (API: 404)
        ├── InvalidSpec         a source or job field is invalid               (API: 422)
        │   └── UnknownSource   a job names a source that does not exist        (API: 422)
        ├── NameTaken           another source already has that name            (API: 409)
        ├── JobStateError       an action the job's current state does not allow (API: 409)
        ├── EventsUnavailable   a source event could not be published or followed (Redis)
        └── BrokerUnavailable   an execution could not be published or consumed (RabbitMQ)

They live here until the lead moves them into ``harvestman.errors``; callers import them from
``harvestman.jobs``.
"""

from __future__ import annotations

from harvestman.errors import HarvestmanError


class JobsError(HarvestmanError):
    """Base of the jobs domain's errors."""


class NotFound(JobsError, LookupError):
    """No ``kind`` (``"source"``, ``"job"``, ``"execution"``) with id ``ident``."""

    def __init__(self, kind: str, ident: int) -> None:
        self.kind = kind
        self.ident = ident
        super().__init__(f"no {kind} with id {ident}")


class InvalidSpec(JobsError, ValueError):
    """``field`` of a source or job is invalid; ``message`` says why."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class UnknownSource(InvalidSpec):
    """A job names a source that does not exist: refused at creation, not at run time."""

    def __init__(self, source_id: int) -> None:
        self.source_id = source_id
        super().__init__("source_id", f"no source with id {source_id}")


class NameTaken(JobsError):
    """Source names are unique."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"a source named {name!r} exists already")


class JobStateError(JobsError):
    """``action`` is not allowed in the job's current ``state``.

    ``allowed_actions`` lists what the state does allow, so a caller can say what to do instead
    (the API answers 409 with both).
    """

    def __init__(self, job_id: int, state: str, action: str, allowed_actions: list[str]) -> None:
        self.job_id = job_id
        self.state = state
        self.action = action
        self.allowed_actions = allowed_actions
        allowed = ", ".join(allowed_actions) or "none"
        super().__init__(f"job {job_id} is {state}: cannot {action} (allowed: {allowed})")


class EventsUnavailable(JobsError):
    """A source event could not be published or subscribed to (Redis is away)."""


class BrokerUnavailable(JobsError):
    """The message broker (RabbitMQ) could not be reached, or refused a message: the execution
    stays with the store (its claim is undone, or its message is redelivered)."""

    category = "network"
