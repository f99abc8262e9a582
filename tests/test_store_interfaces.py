"""SqlStore implements each of the store's interfaces, method by method.

mypy checks the same in ``store/__init__.py`` (``_implements``); this test holds at runtime
what mypy cannot see: every interface method is a coroutine on SqlStore, with the same
parameters in the same order and the same defaults.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from harvestman.store import (
    ControlStore,
    CrawlRecords,
    FrontierStore,
    HostRecords,
    OutcomeWriter,
    SessionStore,
    SqlStore,
    Store,
    StoreHealth,
    WorkerRegistry,
)

INTERFACES = [
    CrawlRecords, FrontierStore, OutcomeWriter, HostRecords, SessionStore, WorkerRegistry,
    StoreHealth, ControlStore,
]  # fmt: skip


def methods(interface: type) -> list[str]:
    return sorted(
        name
        for name, value in vars(interface).items()
        if not name.startswith("_") and inspect.isfunction(value)
    )


def parameters(fn: Any) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("interface", INTERFACES, ids=lambda i: i.__name__)
def test_sql_store_implements(interface: type) -> None:
    assert methods(interface)
    for name in methods(interface):
        implementation = getattr(SqlStore, name)
        assert inspect.iscoroutinefunction(implementation), name
        assert parameters(implementation) == parameters(getattr(interface, name)), name


def test_store_combines_every_interface() -> None:
    combined = {name for interface in INTERFACES for name in methods(interface)}
    inherited = {name for cls in Store.__mro__ for name in methods(cls)}
    assert combined == inherited
    assert {"lease", "record", "heartbeat", "acquire_host", "save_cookies"} <= combined
