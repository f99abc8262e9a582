"""One vocabulary across the CLI: the same store options everywhere, --json on every list, one
line for a database that cannot be reached, a crawl chosen out loud, sentences rather than reprs.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from harvestman.cli.app import app
from harvestman.config import load_settings
from storerows import add_crawl, add_page, add_url, open_store

# Commands that read or write no store: they take --config where they read settings at all.
NO_STORE = {"token create", "admin new-key"}
# Commands that print a list of rows (each must offer --json).
LISTS = {
    "stats", "status", "errors", "dead-letter list", "search", "products", "storage",
    "user list", "admin proxies",
}  # fmt: skip


def commands(group: Any = None, prefix: str = "") -> Iterator[tuple[str, Any]]:
    group = group if group is not None else typer.main.get_command(app)
    for name, command in group.commands.items():
        path = f"{prefix}{name}"
        if getattr(command, "commands", None):
            yield from commands(command, f"{path} ")
        else:
            yield path, command


def options(command: Any) -> set[str]:
    return {opt for param in command.params for opt in getattr(param, "opts", ())}


@pytest.mark.parametrize(("path", "command"), list(commands()), ids=lambda value: str(value))
def test_every_command_that_opens_the_store_takes_the_store_options(
    path: str, command: Any
) -> None:
    if path in NO_STORE:
        assert path == "admin new-key" or "--config" in options(command), path
        return
    assert {"--db", "--database-url", "--config"} <= options(command), path
    if path in LISTS:
        assert "--json" in options(command), path


def test_the_list_of_lists_names_real_commands() -> None:
    known = {path for path, _ in commands()}
    assert known >= LISTS
    assert known >= NO_STORE


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when the block ends


@pytest.mark.parametrize(
    "args",
    [("stats",), ("status",), ("export",), ("errors",), ("products",), ("db", "current")],
    ids=" ".join,
)
def test_a_database_that_cannot_be_reached_is_one_line_and_status_2(args: tuple[str, ...]) -> None:
    url = f"postgresql://nobody:secret@127.0.0.1:{closed_port()}/none"
    code, _, err = run(*args, "--database-url", url)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: the database cannot be used:"), err
    assert "Traceback" not in err
    assert "secret" not in err


def test_postgres_urls_are_read_as_postgresql() -> None:
    settings = load_settings(database_url="postgres://user@127.0.0.1:5432/test")
    assert settings.database_url == "postgresql://user@127.0.0.1:5432/test"
    plus = load_settings(database_url="postgres+psycopg://user@127.0.0.1/test")
    assert plus.database_url == "postgresql+psycopg://user@127.0.0.1/test"


@pytest.fixture
def two_crawls(tmp_path: Path) -> Path:
    db = tmp_path / "store.db"
    engine = open_store(f"sqlite:///{db}")
    try:
        for name, pages in (("default", 1), ("shop-1", 2)):
            crawl_id = add_crawl(engine, name)
            for n in range(pages):
                url = f"http://{name}.test/{n}"
                add_url(engine, crawl_id, url, "completed", 0)
                add_page(engine, crawl_id, url, age_days=0)
    finally:
        engine.dispose()
    return db


def test_a_command_says_which_crawl_it_shows_and_which_others_exist(two_crawls: Path) -> None:
    code, out, err = run("stats", "--db", str(two_crawls), "--json")
    assert code == 0, err
    assert "crawl 'default' (the store also holds 'shop-1': choose one with --name)" in err
    code, out, err = run("export", "--db", str(two_crawls), "--name", "shop-1")
    assert (code, len(out.splitlines())) == (0, 2)
    assert "also holds" not in err  # a named crawl needs no note

    code, _, err = run("stats", "--db", str(two_crawls), "--name", "shop")
    assert code == 2
    assert "no crawl named 'shop' in this store; it holds 'default', 'shop-1'" in err


def test_an_empty_crawl_is_passed_over_for_one_that_holds_something(tmp_path: Path) -> None:
    # What `serve` leaves: an empty `default` beside the crawl its job filled.
    db = tmp_path / "store.db"
    engine = open_store(f"sqlite:///{db}")
    try:
        add_crawl(engine, "default")
        crawl_id = add_crawl(engine, "local-shop-1")
        add_url(engine, crawl_id, "http://shop.test/", "completed", 0)
        add_page(engine, crawl_id, "http://shop.test/", age_days=0)
    finally:
        engine.dispose()
    code, out, err = run("export", "--db", str(db))
    assert (code, len(out.splitlines())) == (0, 1)
    assert "crawl 'local-shop-1' (the store also holds 'default': choose one with --name)" in err


def test_a_store_with_one_crawl_shows_it_whatever_its_name(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    engine = open_store(f"sqlite:///{db}")
    try:
        crawl_id = add_crawl(engine, "shop-7")
        add_url(engine, crawl_id, "http://shop.test/", "completed", 0)
        add_page(engine, crawl_id, "http://shop.test/", age_days=0)
    finally:
        engine.dispose()
    code, out, err = run("export", "--db", str(db))
    assert (code, [line[:30] for line in out.splitlines()]) == (
        0,
        ['{"url":"http://shop.test/","fi'],
    )
    assert "also holds" not in err


def test_a_warc_export_with_nothing_archived_fails_and_says_how_to_archive(
    two_crawls: Path, tmp_path: Path
) -> None:
    out = tmp_path / "pages.warc.gz"
    code, _, err = run("export", "--db", str(two_crawls), "--format", "warc", "-o", str(out))
    assert code == 1
    assert "HARVESTMAN_ARCHIVE_ENABLED=true" in err
    assert "--warc" in err
