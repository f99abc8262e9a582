"""`harvestman errors` and `harvestman dead-letter` on a real SQLite store with known rows."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select
from typer.testing import CliRunner

from harvestman.cli.app import app
from harvestman.store.schema import urls
from storerows import open_store
from test_api_errors import arrange


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_errors_and_dead_letters_filter_and_requeue_with_a_dry_run(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    engine = open_store(f"sqlite:///{db}")
    arrange(engine)
    store = ("--db", str(db))

    # Every crawl's errors without --name, newest first, the crawl in the last column.
    code, out, _ = run("errors", "--type", "HttpStatusError", "--host", "a.test", *store)
    assert code == 0
    assert out.splitlines() == [
        "http\tHttpStatusError\thttp://a.test/9\tHttpStatusError at http://a.test/9\tother",
        "http\tHttpStatusError\thttp://a.test/2\tHttpStatusError at http://a.test/2\tdefault",
    ]
    code, out, _ = run("errors", "--type", "HttpStatusError", "--name", "other", "--json", *store)
    assert (code, [json.loads(line)["task"] for line in out.splitlines()]) == (
        0, ["http://a.test/9"],
    )  # fmt: skip

    code, out, err = run("dead-letter", "list", "--host", "a.test", *store)
    assert (code, [line.split("\t")[0] for line in out.splitlines()]) == (
        0, ["http://a.test/dead0", "http://a.test/dead1"],
    )  # fmt: skip
    assert "2 of 2 failed URLs shown" in err
    assert "crawl 'default' (the store also holds 'other': choose one with --name)" in err
    code, out, _ = run("dead-letter", "list", "--name", "other", "--json", *store)
    assert (code, [json.loads(line)["url"] for line in out.splitlines()]) == (
        0, ["http://a.test/dead-elsewhere"],
    )  # fmt: skip

    code, _, err = run("dead-letter", "requeue", "--host", "a.test", "--dry-run", *store)
    assert (code, "would re-queue 2 URLs" in err) == (0, True)
    code, _, err = run("dead-letter", "requeue", "--host", "a.test", *store)
    assert (code, "re-queued 2 URLs" in err) == (0, True)
    with engine.connect() as conn:
        failed = conn.execute(select(urls.c.url).where(urls.c.status == "failed")).scalars()
        assert sorted(failed) == ["http://a.test/dead-elsewhere", "http://b.test/dead2"]
    engine.dispose()
