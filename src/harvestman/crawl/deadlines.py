"""Many fetches' deadlines on one loop timer: ``asyncio.timeout``'s contract, not its timers.

``asyncio.timeout`` schedules a loop timer on entry and cancels it on exit. Under uvloop that
pair took ~3.6 µs of the ~4.8 µs the context cost (each timer is a libuv handle, opened and
closed), and a crawl paid it on every fetch although a fetch almost never times out. A
fetcher's timeout is the same for all its fetches, so their deadlines come in the order the
fetches start: they wait in a queue, and one timer, set for the earliest, fires only when a
deadline may have passed (once per ``seconds`` in a healthy crawl). A fetch that ends marks its
deadline done; a done deadline leaves the queue when it reaches the head (so the queue holds at
most the deadlines of the fetches started within one timeout). Entering and leaving
await nothing, so the block is a plain ``with`` (no coroutine either way): ~1 µs a fetch in all.

What an expired deadline does is ``asyncio.timeout``'s: the task is cancelled, and the
``CancelledError`` that leaves the block becomes ``TimeoutError``, unless the task was also
cancelled from elsewhere.
"""

from __future__ import annotations

import asyncio
from collections import deque
from types import TracebackType

__all__ = ["Deadline", "Deadlines"]

_ACTIVE, _EXPIRED, _DONE = 0, 1, 2
# uvloop schedules timers in whole milliseconds and may wake a little before ``when``: a
# deadline that close is due (else the timer would be set again for the same instant).
_EARLY = 0.001


class Deadlines:
    """The deadlines of blocks that each last at most ``seconds``, on the running loop.

    ``with deadlines():`` (in a task) bounds its block as ``async with
    asyncio.timeout(seconds):`` does; entering and leaving await nothing, so the block is a
    plain ``with``. Made and used on one event loop; :meth:`close` stops its timer.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._loop = asyncio.get_running_loop()
        self._queue: deque[Deadline] = deque()  # by ``when``: every one is start + seconds
        self._timer: asyncio.TimerHandle | None = None

    def __call__(self) -> Deadline:
        return Deadline(self)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._queue.clear()

    def _add(self, deadline: Deadline) -> None:
        deadline.when = self._loop.time() + self.seconds
        queue = self._queue
        queue.append(deadline)
        while queue[0].state == _DONE:
            queue.popleft()
        if self._timer is None:
            self._timer = self._loop.call_at(queue[0].when, self._expire)

    def _expire(self) -> None:
        self._timer = None
        queue = self._queue
        due = self._loop.time() + _EARLY
        while queue:
            head = queue[0]
            if head.state == _ACTIVE:
                if head.when > due:
                    self._timer = self._loop.call_at(head.when, self._expire)
                    return
                head.expire()
            queue.popleft()


class Deadline:
    """One block's deadline (see :class:`Deadlines`)."""

    __slots__ = ("_cancelling", "_owner", "_task", "state", "when")

    def __init__(self, owner: Deadlines) -> None:
        self._owner = owner
        self.state = _ACTIVE
        self.when = 0.0

    def __enter__(self) -> Deadline:
        task = asyncio.current_task(self._owner._loop)
        if task is None:
            raise RuntimeError("a deadline is kept inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._owner._add(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.state == _EXPIRED:
            self.state = _DONE
            if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                raise TimeoutError from exc  # no other cancel came: this one was ours
        self.state = _DONE

    def expire(self) -> None:
        self._task.cancel()
        self.state = _EXPIRED
