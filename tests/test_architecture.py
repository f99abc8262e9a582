"""The store is the only door: no module outside ``harvestman/store/`` speaks SQL.

Every module under src/harvestman is parsed (ast) and checked for the three ways in that the
store closes: importing a database library (SQLAlchemy, Alembic, psycopg), naming a table
object (``store.schema``'s, the jobs' models), and testing ``dialect.name`` (dialect
differences live in ``store/dialect.py``).
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from sqlalchemy import Table

import harvestman

SRC = Path(harvestman.__file__).parent
DATABASE_LIBRARIES = ("sqlalchemy", "alembic", "psycopg", "psycopg2")

# Packages outside the store that still speak SQL, and why. Each entry is a debt; none is left.
ALLOWED: set[str] = set()


@dataclass(frozen=True, order=True)
class Violation:
    module: str
    line: int
    what: str


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_store(module: str) -> bool:
    return module == "harvestman.store" or module.startswith("harvestman.store.")


def is_allowed(module: str) -> bool:
    return any(module == allowed or module.startswith(f"{allowed}.") for allowed in ALLOWED)


def _resolve(module: str, level: int, package: str) -> str:
    if not level:
        return module
    base = package.rsplit(".", level - 1)[0] if level > 1 else package
    return f"{base}.{module}" if module else base


def _harvestman_object(module: str, name: str | None) -> object | None:
    """The object ``from module import name`` (or ``import module``) binds, if it is ours."""
    if module != "harvestman" and not module.startswith("harvestman."):
        return None
    try:
        found: object = importlib.import_module(module)
    except ImportError:
        return None
    if name is None:
        return found
    if hasattr(found, name):
        return getattr(found, name)
    try:
        return importlib.import_module(f"{module}.{name}")
    except ImportError:
        return None


def violations(source: str, module: str, *, package: str | None = None) -> list[Violation]:
    """Where ``source`` (the text of ``module``) goes around the store."""
    tree = ast.parse(source)
    package = package or module.rpartition(".")[0]
    found: list[Violation] = []
    modules: dict[str, ModuleType] = {}  # local name -> one of our modules holding tables
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in DATABASE_LIBRARIES:
                    found.append(Violation(module, node.lineno, f"imports {alias.name}"))
                target = _harvestman_object(alias.name, None)
                if isinstance(target, ModuleType) and alias.asname:
                    modules[alias.asname] = target
        elif isinstance(node, ast.ImportFrom):
            source_module = _resolve(node.module or "", node.level, package)
            if source_module.split(".")[0] in DATABASE_LIBRARIES:
                found.append(Violation(module, node.lineno, f"imports {source_module}"))
                continue
            for alias in node.names:
                target = _harvestman_object(source_module, alias.name)
                if isinstance(target, Table):
                    found.append(Violation(module, node.lineno, f"names the table {target.name}"))
                elif isinstance(target, ModuleType):
                    modules[alias.asname or alias.name] = target
        elif isinstance(node, ast.Attribute):
            value = node.value
            if node.attr == "name" and isinstance(value, ast.Attribute) and value.attr == "dialect":
                found.append(Violation(module, node.lineno, "tests dialect.name"))
            if isinstance(value, ast.Name) and value.id in modules:
                target = getattr(modules[value.id], node.attr, None)
                if isinstance(target, Table):
                    found.append(Violation(module, node.lineno, f"names the table {target.name}"))
    return sorted(found)


def test_no_module_outside_the_store_speaks_sql() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        module = module_name(path)
        if is_store(module) or is_allowed(module):
            continue
        found += violations(path.read_text(encoding="utf-8"), module)
    assert [f"{v.module}:{v.line}: {v.what}" for v in found] == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import sqlalchemy", ["imports sqlalchemy"]),
        ("from sqlalchemy.engine import make_url", ["imports sqlalchemy.engine"]),
        ("def f():\n    from alembic import command", ["imports alembic"]),
        ("import psycopg", ["imports psycopg"]),
        ("from harvestman.store.schema import urls, metadata", ["names the table urls"]),
        (
            "from harvestman.store import schema\nschema.crawled_pages",
            ["names the table crawled_pages"],
        ),
        ("import harvestman.store.schema as s\ns.domains.c.host", ["names the table domains"]),
        ("from harvestman.store.jobs.tables import jobs", ["names the table jobs"]),
        ("if engine.dialect.name == 'sqlite': pass", ["tests dialect.name"]),
        ("if conn.dialect.name != 'sqlite': pass", ["tests dialect.name"]),
        ("from harvestman.store import SqlStore, dialect\ndialect.is_sqlite(e)", []),
        ("from harvestman.store.schema import metadata", []),
        ("from ..store.schema import urls", ["names the table urls"]),
    ],
)
def test_each_way_around_the_store_is_caught(source: str, expected: list[str]) -> None:
    found = violations(source, "harvestman.api.example", package="harvestman.api")
    assert [v.what for v in found] == expected


def test_the_store_is_the_only_exception() -> None:
    assert is_store("harvestman.store.crawl.frontier")
    assert not is_store("harvestman.storefront")
    assert not is_allowed("harvestman.jobs.runner")
    assert not is_allowed("harvestman.api.routes.crawl")


# -- the store holds the engine and the drivers ----------------------------------------------
#
# Beside SQL itself, nothing outside the store holds what speaks it: a database driver
# (sqlite3 runs SQL as well as SQLAlchemy does) or the store's SQLAlchemy engine (``.engine``:
# whoever holds it can run any statement). Callers go through the store's doors
# (``store.doors``).

DATABASE_DRIVERS = ("sqlite3", "psycopg", "psycopg2", "psycopg_pool", "asyncpg", "sqlalchemy")

# Modules outside the store that still read ``.engine``, and why. Each entry is a debt.
ENGINE_HOLDERS: dict[str, str] = {
    # Its retention and backup turns hand the store's engine to store functions; the jobs
    # helper (issue 28, leader duties as periodic tasks) moves them behind store methods.
    "harvestman.jobs.scheduler": "retention and backups take store.engine",
}


def driver_violations(source: str, module: str) -> list[Violation]:
    """Where ``source`` imports a database driver or reads an ``.engine`` attribute."""
    found: list[Violation] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            names = []
        for name in names:
            if name.split(".")[0] in DATABASE_DRIVERS:
                found.append(Violation(module, node.lineno, f"imports {name}"))
        if isinstance(node, ast.Attribute) and node.attr == "engine":
            found.append(Violation(module, node.lineno, "holds .engine"))
    return sorted(found)


def test_no_module_outside_the_store_holds_a_driver_or_the_engine() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        module = module_name(path)
        if is_store(module):
            continue
        violations_here = driver_violations(path.read_text(encoding="utf-8"), module)
        if module in ENGINE_HOLDERS:
            violations_here = [v for v in violations_here if v.what != "holds .engine"]
        found += violations_here
    assert [f"{v.module}:{v.line}: {v.what}" for v in found] == []


def test_each_engine_holder_still_holds_it() -> None:
    """An allow-list entry whose module no longer reads ``.engine`` is removed, not kept."""
    for module in ENGINE_HOLDERS:
        path = SRC.parent.joinpath(*module.split(".")).with_suffix(".py")
        found = driver_violations(path.read_text(encoding="utf-8"), module)
        assert any(v.what == "holds .engine" for v in found), module


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import sqlite3", ["imports sqlite3"]),
        ("def f():\n    import sqlite3 as db", ["imports sqlite3"]),
        ("from sqlite3 import connect", ["imports sqlite3"]),
        ("from psycopg.rows import dict_row", ["imports psycopg.rows"]),
        ("import sqlalchemy.engine", ["imports sqlalchemy.engine"]),
        ("JobStore(store.engine)", ["holds .engine"]),
        ("x = self.store.engine.dispose()", ["holds .engine"]),
        ("async with store.jobs() as jobs: pass", []),
        ("store.frontier.lease(1, {}, 0.0, 1.0, 'w')", []),
        ("engine = make(); engine.run()", []),  # a local name, not the store's attribute
        ("from harvestman.store.lifecycle.sqlitebackup import backup_sqlite", []),
    ],
)
def test_each_driver_and_engine_use_is_caught(source: str, expected: list[str]) -> None:
    found = driver_violations(source, "harvestman.api.example")
    assert [v.what for v in found] == expected
