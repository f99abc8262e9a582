"""The process's own log lines: text or JSON on one stream, at the configured level."""

from __future__ import annotations

import doctest
import io
import json
import logging
from collections.abc import Iterator

import pytest

from harvestman import logconfig
from harvestman.api.routes import executions
from harvestman.config import Settings
from harvestman.errors import ConfigError
from harvestman.logconfig import configure_logging, reset_logging


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    reset_logging()
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def test_the_docstring_examples_hold() -> None:
    assert doctest.testmod(logconfig).failed == 0
    assert doctest.testmod(executions).failed == 0


def test_json_lines_carry_time_level_logger_message_and_the_exception() -> None:
    out = io.StringIO()
    configure_logging("json", "INFO", stream=out)
    log = logging.getLogger("harvestman.jobs.scheduler")
    log.debug("too fine to show")
    log.warning("cleared %d stale job locks", 2)
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        log.exception("the run failed")
    logging.getLogger("uvicorn.error").info("Application startup complete.")
    log.info("with a field", extra={"execution_id": 7})

    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["level"], r["logger"], r["message"]) for r in records] == [
        ("WARNING", "harvestman.jobs.scheduler", "cleared 2 stale job locks"),
        ("ERROR", "harvestman.jobs.scheduler", "the run failed"),
        ("INFO", "uvicorn.error", "Application startup complete."),
        ("INFO", "harvestman.jobs.scheduler", "with a field"),
    ]
    assert records[1]["exception"].endswith("ValueError: bad\nvalue")
    assert records[3]["execution_id"] == 7
    assert all(r["time"].endswith("+00:00") for r in records)


def test_text_lines_are_readable_and_the_level_is_a_floor() -> None:
    out = io.StringIO()
    configure_logging("text", "WARNING", stream=out)
    log = logging.getLogger("harvestman.crawl.liveness")
    log.info("returned 3 leases")
    log.warning("heartbeat failed: %s", "the store is away")
    [line] = out.getvalue().splitlines()
    assert line.endswith(" WARNING harvestman.crawl.liveness: heartbeat failed: the store is away")


def test_alembics_plugin_lines_show_at_debug_only() -> None:
    plugins, migration = (
        logging.getLogger(n) for n in ("alembic.runtime.plugins", "alembic.runtime.migration")
    )
    out = io.StringIO()
    configure_logging("text", "INFO", stream=out)
    plugins.info("setup plugin alembic.autogenerate.schemas")
    migration.info("Running upgrade  -> 0001, initial schema")
    assert [line.split(": ", 1)[1] for line in out.getvalue().splitlines()] == [
        "Running upgrade  -> 0001, initial schema"
    ]
    debug = io.StringIO()
    configure_logging("text", "DEBUG", stream=debug)
    plugins.info("setup plugin alembic.autogenerate.schemas")
    assert "setup plugin" in debug.getvalue()


def test_a_second_configuration_replaces_the_first() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("text", "INFO", stream=first)
    configure_logging("json", "INFO", stream=second)
    logging.getLogger("harvestman.x").info("once")
    assert first.getvalue() == ""
    assert json.loads(second.getvalue())["message"] == "once"


@pytest.mark.parametrize(
    ("name", "given", "expected"),
    [
        ("log_level", "debug", "DEBUG"),
        ("log_level", None, "INFO"),
        ("log_format", "JSON", "json"),
        ("log_format", None, "text"),
    ],
)
def test_the_log_settings_take_either_case(name: str, given: str | None, expected: str) -> None:
    settings = Settings(**({} if given is None else {name: given}))
    assert getattr(settings, name) == expected


def test_an_unknown_log_level_is_a_clear_error() -> None:
    from harvestman.config import load_settings

    with pytest.raises(ConfigError, match="log_level"):
        load_settings(log_level="LOUD")
