"""The ``harvestman`` command, run two ways.

``run_cli`` runs it as a user runs it: a subprocess of this interpreter, paying the whole
start-up (imports, signal handlers, the exit). Kept for what only a process shows: a crawl, its
signals, its exit. ``invoke_cli`` runs the same Typer app in this process, through Typer's
runner in a thread (a command may start an event loop of its own): for argument, exit-status and
output tests of commands that read a store, a tenth of a subprocess's cost.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from typer.testing import CliRunner

CLI = [sys.executable, "-m", "harvestman.cli"]
COLUMNS = "200"  # lines are not wrapped


async def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Exit status, standard output and standard error of ``harvestman ARGS`` in a subprocess.
    A test cancelled by its timeout leaves no process behind."""
    process = await asyncio.create_subprocess_exec(
        *CLI, *args, env={**os.environ, "COLUMNS": COLUMNS, **(env or {})},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def invoke_cli_sync(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``run_cli``'s answer, from the app run in this process (the caller's thread)."""
    from harvestman.cli.app import app

    # A command configures the root logger as a process would; this process goes on after it,
    # so the handlers it found come back (a later test's output would hold its log lines).
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        result = CliRunner().invoke(app, list(args), env={"COLUMNS": COLUMNS, **(env or {})})
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a crash is the test's failure, not an exit status to compare
    return result.exit_code, result.stdout, result.stderr


async def invoke_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``run_cli``'s answer, from the app run in this process (in a thread: the command may run
    an event loop of its own)."""
    return await asyncio.to_thread(invoke_cli_sync, *args, env=env)
