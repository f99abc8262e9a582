"""The ``harvestman`` command run as a user runs it: a subprocess of this interpreter."""

from __future__ import annotations

import asyncio
import os
import sys

CLI = [sys.executable, "-m", "harvestman.cli"]


async def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Exit status, standard output and standard error of ``harvestman ARGS``; lines are not
    wrapped (``COLUMNS=200``). A test cancelled by its timeout leaves no process behind."""
    process = await asyncio.create_subprocess_exec(
        *CLI, *args, env={**os.environ, "COLUMNS": "200", **(env or {})},
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
