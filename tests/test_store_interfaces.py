"""SqlStore implements each of the store's interfaces, method by method.

mypy checks the same where ``store/sql.py`` opens each door; this test holds at runtime what
mypy cannot see: every method of an async door is a coroutine on SqlStore, every method of a
blocking door is not, each with the same parameters in the same order and the same defaults.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from harvestman.store import (
    BlockingAccounts,
    BlockingAdmin,
    BlockingExports,
    BlockingFailures,
    BlockingMaintenance,
    BlockingProducts,
    BlockingReports,
    BlockingRows,
    BlockingSearch,
    ControlStore,
    CrawlRecords,
    FrontierStore,
    HostRecords,
    OutcomeWriter,
    ParserRollouts,
    SessionStore,
    SqlStore,
    Store,
    StoreHealth,
    WorkerRegistry,
)
from harvestman.store.doors import ASYNC_DOORS

INTERFACES = [
    CrawlRecords, FrontierStore, OutcomeWriter, HostRecords, SessionStore, WorkerRegistry,
    StoreHealth, ControlStore, ParserRollouts,
]  # fmt: skip
BLOCKING = [
    BlockingReports, BlockingRows, BlockingExports, BlockingFailures, BlockingSearch,
    BlockingProducts, BlockingAdmin, BlockingAccounts, BlockingMaintenance,
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


@pytest.mark.parametrize("interface", BLOCKING, ids=lambda i: i.__name__)
def test_sql_store_implements_blocking(interface: type) -> None:
    assert methods(interface)
    for name in methods(interface):
        implementation = getattr(SqlStore, name)
        assert not inspect.iscoroutinefunction(implementation), name
        assert parameters(implementation) == parameters(getattr(interface, name)), name


def test_store_is_the_crawlers_doors() -> None:
    doors = {
        name: inspect.get_annotations(value.fget, eval_str=True)["return"]
        for name, value in vars(Store).items()
        if isinstance(value, property)
    }
    assert doors == dict(zip(ASYNC_DOORS, INTERFACES, strict=True))
    assert {"lease", "record", "heartbeat", "acquire_host", "save_cookies"} <= {
        name for interface in INTERFACES for name in methods(interface)
    }
