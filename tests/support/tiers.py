"""Which tier a test belongs to, decided from what it uses (``pytest_collection_modifyitems``).

``make check`` runs the fast tier (``-m "not slow"``); ``make test`` and CI run every tier. A
test is slow when it starts what costs seconds or needs a server of the machine:

- a fixture in its closure (``item.fixturenames`` holds the fixtures a fixture asks for too)
  from ``SLOW_FIXTURES``: the test site, PostgreSQL, Redis, RabbitMQ, moto's S3;
- a name from ``SLOW_CALLS`` referred to by the test function or by one of its fixtures, or by
  a function of the tests (tests/) they call, followed a few levels: ``run_cli`` (a CLI
  subprocess), ``TestSite``, ``serve`` (a server of the test's own), ``running_api`` (the API
  over a store), ``subprocess``, Playwright, the fleet of processes; and a slow fixture asked
  for by name (``request.getfixturevalue("pg_schema_url")``) unless the test's parameter for
  that fixture is ``sqlite``;
- a parameter named for a service (``[postgres]``, ``[redis]``: ``SERVICE_PARAMS``);
- an entry of ``SLOW_TESTS``, each with its reason (``heavy``: a test's own work).

Each such test gets ``slow`` and a finer marker naming the reason (``site``, ``services``,
``subprocess``, ``browser``, ``server``, ``heavy``). A test marked ``slow`` by hand is slow;
one marked ``fast`` stays in the fast tier whatever it uses (a fixture cheap in that module).
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

# The umbrella marker, and the finer ones; registered in pyproject.toml.
SLOW = "slow"
FAST = "fast"

SLOW_FIXTURES: dict[str, str] = {
    "site": "site",
    "sites": "site",
    "full_site": "site",
    "s3_endpoint": "site",
    "postgres_url": "services",
    "pg_schema_url": "services",
    "redis_url": "services",
    "broker": "services",
}

SLOW_CALLS: dict[str, str] = {
    "running_api": "server",
    "serve": "server",
    "Popen": "subprocess",
    "run_cli": "subprocess",
    "subprocess": "subprocess",
    "create_subprocess_exec": "subprocess",
    "fleet": "subprocess",
    "PageWorkers": "subprocess",
    "Renderer": "browser",
    "TestSite": "site",
    "ThreadedMotoServer": "site",
    "require_chromium": "browser",
    "async_playwright": "browser",
}

# A parameter of one of these values (``[postgres]``, ``[redis]``) is a service the test's
# fixture reaches by the parameter's name, however it does.
SERVICE_PARAMS = frozenset({"postgres", "postgresql", "redis", "rabbitmq"})

# Tests (a node id, or a file) slow for a reason the rules above do not see, and why: ``heavy``
# is work of the test's own, above a second on an idle 2-core machine.
SLOW_TESTS: dict[str, str] = {
    # schemathesis sends every route of the API its generated requests
    "tests/test_api_fuzz.py": "server",
    # every command's --help rendered by rich
    "tests/test_cli.py::test_every_command_shows_its_help": "heavy",
    # a store big enough for the query planner to choose its plan by the index
    "tests/test_api_paging.py::test_every_list_page_is_one_index_range_without_a_sort": "heavy",
    "tests/test_api_paging.py::test_the_jobs_domain_lists_are_one_index_range_too": "heavy",
    # each user command through the CLI, each hashing a password
    "tests/test_api_hardening.py::test_user_commands_manage_the_users_table": "heavy",
    # waits about a second of real time for the running scheduler to take the event
    "tests/test_jobs_events.py::test_in_process_events_reach_the_running_scheduler": "heavy",
    # a crawl writes while the backup is taken
    "tests/test_lifecycle_backup.py::"
    "test_a_backup_taken_while_a_crawl_writes_is_a_consistent_prefix": "heavy",
}

# The reasons found for each collected test, by node id, before ``-m`` deselects any: what
# tests/test_tiers.py checks the rule against.
DECISIONS = pytest.StashKey[dict[str, list[str]]]()

# How many calls deep a module's helpers are followed from a test function.
_DEPTH = 4


def _code_names(code: types.CodeType) -> set[str]:
    """The global and attribute names ``code`` refers to, nested functions included."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


TESTS = Path(__file__).resolve().parent.parent


def _strings(code: types.CodeType) -> set[str]:
    found = {const for const in code.co_consts if isinstance(const, str)}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _strings(const)
    return found


def _code_of(function: Any) -> types.CodeType | None:
    try:
        function = inspect.unwrap(getattr(function, "__func__", function))
    except ValueError:
        return None
    code = getattr(function, "__code__", None)
    return code if isinstance(code, types.CodeType) else None


_REFERRED: dict[types.CodeType, tuple[set[str], set[str]]] = {}


def referred_names(function: Any) -> tuple[set[str], set[str]]:
    """Names a test function (or fixture) refers to, and the slow fixtures it asks for by name,
    through the functions of the tests (files under tests/) it calls. Found once per function
    (a fixture serves many tests)."""
    code = _code_of(function)
    if code is None:
        return set(), set()
    if code not in _REFERRED:
        _REFERRED[code] = _follow(function)
    return _REFERRED[code]


def _follow(function: Any) -> tuple[set[str], set[str]]:
    seen: set[types.CodeType] = set()
    found: set[str] = set()
    asked: set[str] = set()
    pending: list[tuple[Any, int]] = [(function, 0)]
    while pending:
        current, depth = pending.pop()
        code = _code_of(current)
        if code is None or code in seen:
            continue
        seen.add(code)
        names = _code_names(code)
        found |= names
        if "getfixturevalue" in names:
            asked |= _strings(code) & SLOW_FIXTURES.keys()
        module = sys.modules.get(getattr(inspect.unwrap(current), "__module__", "") or "")
        if depth >= _DEPTH or module is None:
            continue
        for name in names:
            local = getattr(module, name, None)
            local_code = _code_of(local) if callable(local) else None
            if local_code is not None and Path(local_code.co_filename).is_relative_to(TESTS):
                pending.append((local, depth + 1))
    return found, asked


def reasons(item: pytest.Item) -> list[str]:
    """The finer markers (``site``, ``services``, ``subprocess``, ``browser``) ``item`` earns."""
    found: set[str] = set()
    for name in getattr(item, "fixturenames", ()):
        if name in SLOW_FIXTURES:
            found.add(SLOW_FIXTURES[name])
    functions: list[tuple[str | None, Any]] = []
    if getattr(item, "function", None) is not None:
        functions.append((None, item.function))  # type: ignore[attr-defined]
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        for definition in info.name2fixturedefs.get(name, ()) if info is not None else ():
            functions.append((name, definition.func))
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    for fixture, function in functions:
        names, asked = referred_names(function)
        found |= {SLOW_CALLS[name] for name in names if name in SLOW_CALLS}
        if asked and not (fixture is not None and params.get(fixture) == "sqlite"):
            found |= {SLOW_FIXTURES[name] for name in asked}
    if SERVICE_PARAMS & {value for value in params.values() if isinstance(value, str)}:
        found.add("services")
    if callspec is not None and SERVICE_PARAMS & set(callspec.id.split("-")):
        found.add("services")
    for node, reason in SLOW_TESTS.items():
        if item.nodeid == node or item.nodeid.startswith((node + "::", node + "[")):
            found.add(reason)
    return sorted(found)


def sort_into_tiers(items: Iterable[pytest.Item]) -> None:
    """Mark every slow test ``slow`` and with its reasons; leave the fast ones unmarked."""
    for item in items:
        decisions = item.config.stash.setdefault(DECISIONS, {})
        if item.get_closest_marker(FAST) is not None:
            decisions[item.nodeid] = []
            continue
        found = reasons(item)
        decisions[item.nodeid] = found
        for reason in found:
            item.add_marker(reason)
        if found and item.get_closest_marker(SLOW) is None:
            item.add_marker(SLOW)


def is_fast(item: pytest.Item) -> bool:
    return item.get_closest_marker(SLOW) is None
