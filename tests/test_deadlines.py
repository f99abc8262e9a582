"""Deadlines keep ``asyncio.timeout``'s contract with one timer for many blocks."""

from __future__ import annotations

import asyncio

import pytest

from harvestman.crawl.deadlines import Deadlines


async def _bounded(deadlines: Deadlines, seconds: float) -> str:
    try:
        with deadlines():
            await asyncio.sleep(seconds)
    except TimeoutError:
        return "timeout"
    return "done"


async def test_a_block_past_its_deadline_raises_timeout_error() -> None:
    deadlines = Deadlines(0.05)
    with pytest.raises(TimeoutError), deadlines():
        await asyncio.sleep(30)
    deadlines.close()


async def test_blocks_that_end_in_time_are_not_cancelled_and_leave_no_timer() -> None:
    deadlines = Deadlines(0.05)
    results = await asyncio.gather(*[_bounded(deadlines, 0) for _ in range(50)])
    assert results == ["done"] * 50
    await asyncio.sleep(0.1)  # the one timer fires, finds them all done
    assert not deadlines._queue
    assert deadlines._timer is None
    assert await _bounded(deadlines, 0) == "done"  # and is set again for the next block
    deadlines.close()


async def test_only_the_overdue_blocks_among_many_time_out() -> None:
    deadlines = Deadlines(0.1)
    late = [asyncio.create_task(_bounded(deadlines, 30)) for _ in range(10)]
    quick = [asyncio.create_task(_bounded(deadlines, 0.01)) for _ in range(10)]
    assert await asyncio.gather(*quick) == ["done"] * 10
    assert await asyncio.gather(*late) == ["timeout"] * 10
    deadlines.close()


async def test_a_cancel_from_elsewhere_stays_a_cancel() -> None:
    deadlines = Deadlines(30)
    task = asyncio.create_task(_bounded(deadlines, 30))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadlines.close()


async def test_an_outer_timeout_is_not_taken_for_the_deadline() -> None:
    deadlines = Deadlines(30)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await _bounded(deadlines, 30)
    deadlines.close()
