"""What a command process sets up around its work: the garbage collector's start-up and steady
state (cli/runtime.py)."""

from __future__ import annotations

import gc

import pytest

from harvestman.cli.runtime import GC_YOUNGEST, collect_after_start, run


def test_a_command_starts_with_the_collector_off_and_runs_its_loop_frozen() -> None:
    seen: dict[str, object] = {}
    before = gc.get_threshold()

    async def work() -> str:
        seen["loop"] = (gc.isenabled(), gc.get_freeze_count() > 0, gc.get_threshold()[0])
        return "done"

    @collect_after_start
    def command(name: str) -> str:
        seen["start"] = gc.isenabled()
        return run(work()) + name

    assert command("!") == "done!"
    assert seen == {"start": False, "loop": (True, True, GC_YOUNGEST)}
    # All undone after: nothing stays frozen (a process running several commands, the tests)
    # and the thresholds are the process's own again.
    assert (gc.isenabled(), gc.get_freeze_count(), gc.get_threshold()) == (True, 0, before)


def test_a_command_that_fails_leaves_the_collector_as_it_found_it() -> None:
    @collect_after_start
    def command() -> None:
        raise RuntimeError("bad option")

    with pytest.raises(RuntimeError):
        command()
    assert gc.isenabled()

    gc.disable()
    try:
        with pytest.raises(RuntimeError):
            command()
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()


def test_the_console_script_leaves_what_it_made_frozen_for_the_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harvestman.cli.app import main

    monkeypatch.setattr("sys.argv", ["harvestman", "--help"])
    try:
        with pytest.raises(SystemExit) as exit_:
            main()
        assert exit_.value.code == 0
        assert gc.get_freeze_count() > 0  # the interpreter's last collection skips them
    finally:
        gc.unfreeze()
