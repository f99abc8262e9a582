"""The `harvestman` command as a user runs it: a real process, a real site, a real SQLite file."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from support import cli as support_cli
from support.cli import CLI, invoke_cli
from testsite import EXPECTED, EXPECTED_HITS, TestSite


async def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``harvestman ARGS`` in a subprocess, with the test site's small body cap."""
    return await support_cli.run_cli(*args, env={**SMALL_CAP, **(env or {})})


def url_states(db: Path, base: str) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT url, status FROM urls WHERE kind = 'page'").fetchall()
    return {"/" + url[len(base) :].lstrip("/"): status for url, status in rows}


async def _hits_reach(site: TestSite, count: int) -> None:
    while sum(site.hits.values()) < count:  # noqa: ASYNC110 - the site counts, it signals nothing
        await asyncio.sleep(0.01)


def _completed_any(db: Path) -> bool:
    """Whether the crawl wrote a completed page yet (False while the store is being created)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            return (
                conn.execute("SELECT 1 FROM urls WHERE status = 'completed' LIMIT 1").fetchone()
                is not None
            )
    except sqlite3.Error:
        return False


# The test site's oversized bodies are 2 MiB: a 1 MiB cap makes them too large; and retries
# need not wait seconds.
SMALL_CAP = {
    "HARVESTMAN_FETCH_MAX_PAGE_SIZE": str(1024 * 1024),
    "HARVESTMAN_FETCH_RETRY_BACKOFF": "0.01",
}
FAST = ("--timeout", "1", "--delay", "0", "--no-progress")


async def test_crawl_writes_jsonl_and_export_and_stats_read_the_store(
    site: TestSite, tmp_path: Path
) -> None:
    db, out = tmp_path / "h.db", tmp_path / "pages.jsonl"
    code, _, err = await run_cli(
        "crawl", site.url("/"), "--db", str(db), "--output", str(out), "--max-depth", "1", *FAST
    )
    assert code == 0, err
    assert "pages fetched" in err  # the summary table

    lines = [json.loads(line) for line in out.read_text().splitlines()]
    root = next(line for line in lines if line["url"] == site.url("/"))
    assert root["status_code"] == 200
    assert root["title"] == "Harvestman test site"
    assert "status" not in root  # one name for the HTTP status, as in `export`
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", root["fetched_at"])

    code, csv_text, _ = await invoke_cli("export", "--db", str(db), "--format", "csv")
    assert code == 0
    exported = list(csv.DictReader(csv_text.splitlines()))
    assert {row["url"] for row in exported} == {line["url"] for line in lines}

    code, jsonl_text, _ = await invoke_cli("export", "--db", str(db), "--format", "jsonl")
    assert code == 0
    exported_lines = [json.loads(line) for line in jsonl_text.splitlines()]
    assert len(exported_lines) == len(lines)
    # `crawl --output` and `export` write the same fields under the same names, in one order.
    assert [list(line) for line in exported_lines] == [list(line) for line in lines]
    assert {line["url"]: line["fetched_at"] for line in exported_lines} == {
        line["url"]: line["fetched_at"] for line in lines
    }

    # The stats count every stored fetch: the site's sitemap too, which page exports leave out.
    code, everything, _ = await invoke_cli("export", "--db", str(db), "--kind", "page,sitemap,feed")
    fetched = [json.loads(line) for line in everything.splitlines()]
    assert [line["url"] for line in fetched if line["kind"] != "page"] == [site.url("/sitemap.xml")]
    code, stats_text, _ = await invoke_cli("stats", "--db", str(db), "--json")
    assert code == 0
    report = json.loads(stats_text)
    assert report["pages"] == len(fetched) == len(lines) + 1
    assert report["urls"]["completed"] == sum(1 for line in fetched if line["error"] is None)
    # The table says "no answer" where the JSON keeps "none", as the dashboard does.
    code, table_text, _ = await invoke_cli("stats", "--db", str(db))
    assert code == 0
    assert report["status_codes"]["none"] > 0  # the bomb and the redirects that were refused
    assert "no answer" in table_text


async def test_invalid_settings_exit_with_status_2_and_a_clear_message(tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    code, _, err = await run_cli("crawl", "http://127.0.0.1:9/", "--db", db, "--max-depth", "-1")
    assert code == 2
    assert "crawl_max_depth" in err

    # The rest in this process (Typer's runner): the same app, without a process's start-up.
    code, _, err = await invoke_cli(
        "crawl", "http://127.0.0.1:9/", "--db", db, env={"HARVESTMAN_FETCH_TIMEOUT": "soon"}
    )
    assert code == 2
    assert "fetch_timeout" in err

    bad = tmp_path / "bad.toml"
    bad.write_text("[fetch\ntimeout = 3\n")
    toml = str(bad)
    code, _, err = await invoke_cli("crawl", "http://127.0.0.1:9/", "--db", db, "--config", toml)
    assert code == 2
    assert "not valid TOML" in err

    code, _, err = await invoke_cli("export", "--db", db, "--format", "xml")
    assert code == 2
    assert "unknown format" in err


def test_starting_the_command_loads_no_store_network_or_settings_library() -> None:
    # They load inside the commands that use them: `--help` and a typo do not wait for them.
    heavy = ("sqlalchemy", "alembic", "aiohttp", "pydantic", "pydantic_settings", "asyncio")
    probe = f"import sys, harvestman.cli; print([m for m in {heavy!r} if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert (result.returncode, result.stdout.strip(), result.stderr) == (0, "[]", "")


def test_every_command_shows_its_help() -> None:
    # Typer resolves each command's annotations when it builds the help: a parameter typed with
    # an import kept for type checkers only would fail here.
    from typer.core import TyperGroup
    from typer.main import get_command
    from typer.testing import CliRunner

    from harvestman import config
    from harvestman.cli.app import app
    from harvestman.cli.options import CONFIG_ENV

    def paths(group: TyperGroup, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
        for name, command in group.commands.items():
            yield (*prefix, name)
            if isinstance(command, TyperGroup):
                yield from paths(command, (*prefix, name))

    runner = CliRunner(env={"COLUMNS": "200"})
    shown: dict[tuple[str, ...], tuple[int, bool]] = {}
    for path in paths(get_command(app)):
        result = runner.invoke(app, [*path, "--help"])
        shown[path] = (result.exit_code, "Usage:" in result.stdout)
    assert len(shown) > 20
    assert set(shown.values()) == {(0, True)}, shown
    assert CONFIG_ENV == config.CONFIG_ENV  # --config names the variable the settings read
    # A group's list gives each command one summary, wrapped by the screen, not by the source.
    summaries = {
        path: command.short_help
        for path in paths(get_command(app))
        for command in [get_command(app).commands[path[0]]]
        if len(path) == 1 and not isinstance(command, TyperGroup)
    }
    assert summaries
    assert all(text and "\n" not in text for text in summaries.values()), summaries
    listing = " ".join(runner.invoke(app, ["--help"]).stdout.split())
    assert "streaming; WARC from the raw archive." in listing
    assert f"env var: {CONFIG_ENV}" in runner.invoke(app, ["stats", "--help"]).stdout


async def test_config_file_and_environment_and_flags_take_precedence_in_order(
    site: TestSite, tmp_path: Path
) -> None:
    config = tmp_path / "h.toml"
    config.write_text('[crawl]\nmax_depth = 0\nname = "from-file"\n')
    db = str(tmp_path / "h.db")
    code, _, err = await run_cli("crawl", site.url("/"), "--db", db, "--config", str(config), *FAST)
    assert code == 0, err
    assert sum(site.hits.values()) == 2  # robots.txt and the seed: depth 0 from the file

    # The environment beats the file; a flag beats the environment.
    env = {"HARVESTMAN_CRAWL_MAX_DEPTH": "1", "HARVESTMAN_CRAWL_NAME": "from-env"}
    code, _, err = await run_cli(
        "crawl", site.url("/"), "--db", db, "--config", str(config), "--name", "from-flag",
        *FAST, env=env,
    )  # fmt: skip
    assert code == 0, err
    with sqlite3.connect(tmp_path / "h.db") as conn:
        names = {name for (name,) in conn.execute("SELECT name FROM crawls")}
        depths = {d for (d,) in conn.execute(
            "SELECT depth FROM urls JOIN crawls ON crawls.id = urls.crawl_id"
            " WHERE crawls.name = 'from-flag'")}  # fmt: skip
    assert names == {"from-file", "from-flag"}
    assert depths == {0, 1}


async def test_sigkill_halfway_then_the_same_command_resumes_without_refetching(
    tmp_path: Path,
) -> None:
    db = tmp_path / "h.db"
    async with TestSite(crawl_delay=0.05, slow_seconds=3.0) as site:
        args = [*CLI, "crawl", site.url("/"), "--db", str(db), "--timeout", "1", "--no-progress"]
        env = {**os.environ, **SMALL_CAP}
        process = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, env=env
        )
        # Halfway: about half the site requested and some of it written (under load the
        # process may take seconds to start, or to write its first batch).
        for _ in range(6000):
            if sum(site.hits.values()) >= 20 and _completed_any(db):
                break
            await asyncio.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        await process.wait()
        before = url_states(db, site.base)
        completed_before = {p for p, s in before.items() if s == "completed"}
        assert 0 < len(completed_before) < len(EXPECTED["completed"])
        assert "in_progress" in before.values()  # the dead process held leases

        code, _, err = await run_cli(*args[3:], env=SMALL_CAP)
        assert code == 0, err

        after = url_states(db, site.base)
        assert {p for p, s in after.items() if s == "completed"} == EXPECTED["completed"]
        assert {p for p, s in after.items() if s == "failed"} == set(EXPECTED["failed"])
        assert {p for p, s in after.items() if s == "blocked"} == EXPECTED["blocked"]
        # No URL completed before the kill was fetched again.
        for path in completed_before:
            assert site.hits[path] == EXPECTED_HITS[path], path
        # Only URLs in flight (fetched, not yet written) at the kill were fetched again: at
        # 20 requests/s and a 0.25 s write interval, a handful.
        frontier_urls = EXPECTED["completed"] | set(EXPECTED["failed"])
        again = {p for p in frontier_urls if site.hits[p] > EXPECTED_HITS[p]}
        assert len(again) <= 8, again
        assert site.hits["/robots.txt"] == 1


async def test_ctrl_c_stops_cleanly_and_releases_leases(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    async with TestSite(crawl_delay=0.1) as site:
        args = [*CLI, "crawl", site.url("/"), "--db", str(db), "--timeout", "1", "--no-progress"]
        process = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        # Interrupted once it is crawling: on a busy machine its start alone can take seconds.
        await asyncio.wait_for(_hits_reach(site, 8), 100)
        process.send_signal(signal.SIGINT)
        _, err = await process.communicate()
        states = url_states(db, site.base)
    assert process.returncode == 130
    assert b"stopped early" in err
    assert "in_progress" not in states.values()
    assert "completed" in states.values()
