"""A lock that lets a test stop or restart the shared PostgreSQL or Redis alone.

The suite runs on several xdist workers. Every test holds the run's lock shared; a test marked
``disrupts_services`` holds it exclusively, so no other test of the run talks to a server while
it is down. A second lock, the turnstile, is held while queueing: a waiting exclusive holder
keeps new shared holders out, so the other workers' stream of tests cannot starve it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

MARKER = "disrupts_services"


def run_directory(config: pytest.Config) -> Path | None:
    """The directory the run's workers share (their base temp dirs' parent); None when the
    tests run in one process, one at a time."""
    if not hasattr(config, "workerinput") or not config.option.basetemp:
        return None
    return Path(config.option.basetemp).parent


@contextlib.contextmanager
def service_lock(directory: Path | None, *, exclusive: bool) -> Iterator[None]:
    if directory is None or sys.platform == "win32":  # one process, or no flock
        yield
        return
    import fcntl

    with (
        (directory / "services.lock").open("a") as main,
        (directory / "services-turnstile.lock").open("a") as turnstile,
    ):
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(main, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(main, fcntl.LOCK_UN)
