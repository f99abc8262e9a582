"""The store is the only door: no module outside ``harvestman/store/`` speaks SQL.

Every module under src/harvestman is parsed (ast) and checked for the three ways in that the
store closes: importing a database library (SQLAlchemy, Alembic, psycopg), naming a table
object (``store.schema``'s, the jobs' models), and testing ``dialect.name`` (dialect
differences live in ``store/dialect.py``).
"""

from __future__ import annotations

import ast
import functools
import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from sqlalchemy import Table

import harvestman

SRC = Path(harvestman.__file__).parent


@functools.cache
def parse_source(source: str) -> ast.Module:
    """``source`` parsed once per test process: every check here walks the whole package, and
    each walk only reads the tree."""
    return ast.parse(source)


def parse_file(path: Path) -> ast.Module:
    return parse_source(path.read_text(encoding="utf-8"))


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
    tree = parse_source(source)
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


# Layers: who may import whom. ------------------------------------------------------------------


# Lowest first. A module may import its own layer and those below it, never one above: not at
# module level, not in a function, not under TYPE_CHECKING (a type annotation still ties the lower
# layer to the higher one's names, and mypy loads it). A module is in the layer of the longest
# prefix that names it; a package's ``__init__`` is in the lowest layer of its modules, since
# importing any of them runs it.
@dataclass(frozen=True)
class Layer:
    name: str
    why: str
    prefixes: str  # dotted prefixes under harvestman, space-separated; "." is the package itself

    @property
    def modules(self) -> tuple[str, ...]:
        return tuple("" if prefix == "." else prefix for prefix in self.prefixes.split())


LAYERS: tuple[Layer, ...] = (
    Layer(
        "base",
        "values and rules every part passes around (records, errors, settings, URLs, the jobs' "
        "and the search's vocabulary): no I/O, so anything may import them",
        ". errors records recrawl config credentials proxies patterns urls jobs.records "
        "jobs.errors jobs.states jobs.buckets jobs.lifecycle jobs.adaptive search",
    ),
    Layer(
        "page",
        "what a fetched page means, pure functions of its bytes (parse, verdict, fingerprint, "
        "products, site parsers): the page process loads this and base only",
        "charset mediatypes parse validate blockpages robots simhash simhash_numpy images extract",
    ),
    Layer(
        "storage",
        "where data is kept: the store (the only SQL, and the SQLite file copy) and the blob "
        "archive; it stores records and knows nothing of the crawler that makes them",
        "store archive",
    ),
    Layer(
        "crawl",
        "the crawler: frontier, fetching, pipeline, discovery, coordination, the network guard "
        "and the browser; it writes through the store",
        "crawl discovery coord addresses guard egress render resilience stats cookies",
    ),
    Layer(
        "service",
        "what runs crawls and keeps the data: jobs and their scheduler and runner, retention, "
        "exports",
        "jobs lifecycle export elastic",
    ),
    Layer(
        "interfaces",
        "what people and programs call: the HTTP API, the command line, the terminal display, "
        "the process's log lines",
        "api cli display logconfig",
    ),
)


@dataclass(frozen=True, order=True)
class Import:
    """``importer`` imports ``target`` (a module of the package) on ``line``; ``where`` is
    ``"module"``, ``"function"`` or ``"type-checking"``."""

    importer: str
    line: int
    target: str
    where: str


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class ModuleGraph:
    """Every module under ``root`` (the directory of package ``package``) and what each imports
    of the others, read from the AST: nothing is imported to build it."""

    def __init__(self, root: Path, package: str) -> None:
        self.package = package
        self.paths: dict[str, Path] = {}
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root.parent).with_suffix("").parts
            self.paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
        self.imports = {m: self._imports(m, p) for m, p in self.paths.items()}

    def is_package(self, module: str) -> bool:
        return self.paths[module].name == "__init__.py"

    def _known(self, name: str) -> str:
        """The module ``name`` names: itself, else its nearest enclosing module."""
        while name not in self.paths and "." in name:
            name = name.rpartition(".")[0]
        return name

    def _imports(self, module: str, path: Path) -> list[Import]:
        tree = parse_file(path)
        package = module if self.is_package(module) else module.rpartition(".")[0]
        found: list[Import] = []

        def ours(name: str) -> bool:
            return name == self.package or name.startswith(f"{self.package}.")

        def visit(node: ast.AST, where: str) -> None:
            for child in ast.iter_child_nodes(node):
                inner = where
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                    inner = "function" if where == "module" else where
                if isinstance(child, ast.If) and _is_type_checking(child.test):
                    for statement in child.body:
                        visit_statement(statement, "type-checking")
                    for statement in child.orelse:
                        visit_statement(statement, where)
                    continue
                visit_statement(child, inner)

        def visit_statement(node: ast.AST, where: str) -> None:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if ours(alias.name):
                        found.append(Import(module, node.lineno, self._known(alias.name), where))
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(node.module or "", node.level, package)
                if ours(source):
                    for alias in node.names:
                        name = f"{source}.{alias.name}"
                        target = name if name in self.paths else self._known(source)
                        found.append(Import(module, node.lineno, target, where))
            visit(node, where)

        visit(tree, "module")
        return found

    def loads(self, importer: str, target: str) -> list[str]:
        """What importing ``target`` from ``importer`` runs: ``target`` and each package above
        it that ``importer`` is not itself inside (those are loaded already)."""
        found = [target]
        parent = target.rpartition(".")[0]
        while parent and not (importer == parent or importer.startswith(f"{parent}.")):
            found.append(parent)
            parent = parent.rpartition(".")[0]
        return found

    def cycles(self) -> list[list[str]]:
        """The import cycles: strongly connected components of more than one module (Tarjan),
        every kind of import counted."""
        edges = {
            m: sorted({t for i in imps for t in self.loads(m, i.target) if t != m})
            for m, imps in self.imports.items()
        }
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        found: list[list[str]] = []

        def connect(node: str) -> None:
            index[node] = low[node] = len(index)
            stack.append(node)
            on_stack.add(node)
            for target in edges[node]:
                if target not in index:
                    connect(target)
                    low[node] = min(low[node], low[target])
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

        for node in sorted(edges):
            if node not in index:
                connect(node)
        return sorted(found)


def layer_of_named(package: str, layers: tuple[Layer, ...], module: str) -> int | None:
    """The layer of the longest prefix naming ``module`` (None: no prefix names it)."""
    name = module.removeprefix(package).removeprefix(".")
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for number, layer in enumerate(layers):
        for prefix in layer.modules:
            named = prefix == name or (prefix and name.startswith(f"{prefix}."))
            if named and (best is None or len(prefix) > best[0]):
                best = (len(prefix), number)
    return None if best is None else best[1]


def layers_of(graph: ModuleGraph, layers: tuple[Layer, ...]) -> dict[str, int | None]:
    """Each module's layer; a package's is the lowest of its own and its modules'."""
    named = {m: layer_of_named(graph.package, layers, m) for m in graph.paths}
    found = dict(named)
    for package in filter(graph.is_package, graph.paths):
        inside = [n for m, n in named.items() if m == package or m.startswith(f"{package}.")]
        known = [n for n in inside if n is not None]
        found[package] = min(known) if known else None
    return found


def layer_violations(graph: ModuleGraph, layers: tuple[Layer, ...]) -> list[str]:
    """Each import of a higher layer by a lower one, and each module no layer names."""
    found: list[str] = []
    layer = layers_of(graph, layers)
    for module in graph.paths:
        own = layer[module]
        if own is None:
            found.append(f"{module}: in no layer")
            continue
        for imported in graph.imports[module]:
            for target in graph.loads(module, imported.target):
                theirs = layer[target]
                if theirs is not None and theirs > own:
                    found.append(
                        f"{module}:{imported.line} ({layers[own].name}) imports {target} "
                        f"({layers[theirs].name}) at {imported.where} level"
                    )
    return sorted(set(found))


def init_violations(graph: ModuleGraph) -> list[str]:
    """Package ``__init__`` files that do more than re-export their own package's modules at
    module level: an import from elsewhere, an import in a function, a module ``__getattr__``."""
    found: list[str] = []
    for module, path in graph.paths.items():
        if not graph.is_package(module):
            continue
        for imported in graph.imports[module]:
            if imported.where != "module":
                found.append(
                    f"{module}:{imported.line}: imports {imported.target} ({imported.where})"
                )
            elif not imported.target.startswith(f"{module}."):
                found.append(f"{module}:{imported.line}: imports {imported.target}")
        for node in parse_file(path).body:
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                found.append(f"{module}:{node.lineno}: a module __getattr__ hides its imports")
    return sorted(set(found))


@functools.cache
def source_graph() -> ModuleGraph:
    """harvestman's graph, read on first use (not in every xdist worker's collection)."""
    return ModuleGraph(SRC, "harvestman")


def test_no_layer_imports_a_layer_above_it() -> None:
    assert layer_violations(source_graph(), LAYERS) == []


def test_every_layer_prefix_names_a_module() -> None:
    stale = [
        f"{layer.name}: {prefix}"
        for layer in LAYERS
        for prefix in layer.modules
        if prefix
        and not any(m == f"harvestman.{prefix}" or m.startswith(f"harvestman.{prefix}.")
                    for m in source_graph().paths)
    ]  # fmt: skip
    assert stale == []


def test_no_import_cycles() -> None:
    assert source_graph().cycles() == []


def test_package_inits_only_reexport_their_own_modules() -> None:
    assert init_violations(source_graph()) == []


# The checker on a package made for it: each rule must catch what it is about.
SYNTHETIC = {
    "__init__.py": "",
    "values.py": "X = 1\n",
    "engine.py": "from toy.values import X\n",
    "front.py": "from toy import engine\n",
    "late.py": "def f():\n    from toy.front import engine\n",  # values' layer, lazily upward
    "hint.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .front import x\n",
    "left.py": "from toy.right import y\n",
    "right.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy.left import x\n",
    "heavy/__init__.py": "from toy.engine import X\nfrom toy.heavy.part import y\n",
    "heavy/part.py": "y = 2\n",
    "lazy/__init__.py": "def __getattr__(name):\n    from toy.lazy import part\n    return part\n",
    "lazy/part.py": "z = 3\n",
    "ring/__init__.py": "from toy.ring.inner import a\n",
    "ring/inner.py": "a = 1\n",
    "ring_user.py": "from toy.ring.inner import a\n",
    "ring_back.py": "import toy.ring_user\n",
}
TOY_LAYERS = (
    Layer("low", "", ". values late hint heavy lazy left right ring"),
    Layer("middle", "", "engine ring_user ring_back"),
    Layer("high", "", "front"),
)


@pytest.fixture
def toy(tmp_path: Path) -> ModuleGraph:
    for name, text in SYNTHETIC.items():
        path = tmp_path / "toy" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return ModuleGraph(tmp_path / "toy", "toy")


def test_the_layer_check_catches_every_kind_of_import_upward(toy: ModuleGraph) -> None:
    assert layer_violations(toy, TOY_LAYERS) == [
        "toy.heavy:1 (low) imports toy.engine (middle) at module level",
        "toy.hint:3 (low) imports toy.front (high) at type-checking level",
        "toy.late:2 (low) imports toy.front (high) at function level",
    ]


def test_a_module_in_no_layer_is_a_violation(toy: ModuleGraph) -> None:
    layers = (*TOY_LAYERS[:2], Layer("high", "", ""))
    assert "toy.front: in no layer" in layer_violations(toy, layers)


def test_the_cycle_check_counts_type_checking_imports_and_packages(tmp_path: Path) -> None:
    files = {
        **SYNTHETIC,
        "ring/__init__.py": "from toy.ring.inner import a\nimport toy.ring_back\n",
    }
    for name, text in files.items():
        path = tmp_path / "toy" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    # left -> right at run time, right -> left for mypy only: still a circle. ring_user imports
    # ring.inner, which runs ring/__init__, which imports ring_back, which imports ring_user.
    assert ModuleGraph(tmp_path / "toy", "toy").cycles() == [
        ["toy.left", "toy.right"],
        ["toy.ring", "toy.ring_back", "toy.ring_user"],
    ]


def test_a_package_init_may_only_reexport_its_own_modules(toy: ModuleGraph) -> None:
    assert init_violations(toy) == [
        "toy.heavy:1: imports toy.engine",
        "toy.lazy:1: a module __getattr__ hides its imports",
        "toy.lazy:2: imports toy.lazy.part (function)",
    ]


# -- the store holds the engine and the drivers ----------------------------------------------
#
# Beside SQL itself, nothing outside the store holds what speaks it: a database driver
# (sqlite3 runs SQL as well as SQLAlchemy does) or the store's SQLAlchemy engine (``.engine``:
# whoever holds it can run any statement). Callers go through the store's doors
# (``store.doors``).

DATABASE_DRIVERS = ("sqlite3", "psycopg", "psycopg2", "psycopg_pool", "asyncpg", "sqlalchemy")

# Modules outside the store that still read ``.engine``, and why. Each entry is a debt.
ENGINE_HOLDERS: dict[str, str] = {}


def driver_violations(source: str, module: str) -> list[Violation]:
    """Where ``source`` imports a database driver or reads an ``.engine`` attribute."""
    found: list[Violation] = []
    for node in ast.walk(parse_source(source)):
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


# -- every import names something that exists --------------------------------------------------
#
# mypy runs with ignore_missing_imports (for untyped third-party packages), so an import of a
# harvestman module that was moved away passes it; and an import inside a function fails only
# when that function runs. The tree itself says what exists.


def _missing_imports(path: Path) -> list[str]:
    """``module:line target`` for each ``harvestman`` import in ``path`` naming no module and no
    top-level name of a module."""
    missing = []
    for node in ast.walk(parse_file(path)):
        if isinstance(node, ast.Import):
            targets = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            targets = [(node.module, alias.name) for alias in node.names]
        else:
            continue
        for module, name in targets:
            if module.split(".")[0] != "harvestman":
                continue
            if not _module_exists(module) or (
                name is not None
                and not _is_extension(module)
                and not _module_exists(f"{module}.{name}")
                and name not in _top_level_names(module)
            ):
                missing.append(f"{module_name(path)}:{node.lineno} {module} {name or ''}".strip())
    return missing


@functools.cache
def _module_exists(module: str) -> bool:
    base = SRC.parent.joinpath(*module.split("."))
    return (
        base.with_suffix(".py").is_file()
        or (base / "__init__.py").is_file()
        or _is_extension(module)
    )


@functools.cache
def _is_extension(module: str) -> bool:
    """A C extension built from its source beside the modules (``_simhash.c``)."""
    return SRC.parent.joinpath(*module.split(".")).with_suffix(".c").is_file()


@functools.cache
def _top_level_names(module: str) -> frozenset[str]:
    base = SRC.parent.joinpath(*module.split("."))
    path = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
    names: set[str] = set()
    for node in ast.walk(parse_file(path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return frozenset(names)


def test_every_harvestman_import_names_a_module_or_a_name_that_exists() -> None:
    missing = [m for path in sorted(SRC.rglob("*.py")) for m in _missing_imports(path)]
    assert missing == []
