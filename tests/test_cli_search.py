"""``harvestman search`` as a user runs it: a real crawl of the test site with its text stored,
then searches of that SQLite file, as a table, as JSON lines, and refused with the reason."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import invoke_cli
from test_cli import FAST, run_cli
from testsite import TestSite


async def test_search_a_crawled_store(site: TestSite, tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    code, _, err = await run_cli(
        "crawl", site.url("/"), "--db", db, "--max-depth", "1", *FAST,
        env={"HARVESTMAN_STORE_TEXT": "true"},
    )  # fmt: skip
    assert code == 0, err

    code, out, err = await invoke_cli("search", '"broken on purpose" markup', "--db", db, "--json")
    assert code == 0, err
    (hit,) = [json.loads(line) for line in out.splitlines()]
    assert (hit["url"], hit["title"], hit["host"]) == (
        site.url("/malformed.html"), "Malformed page", site.url("/").split("/")[2]
    )  # fmt: skip
    marked = [hit["snippet"][start:end].lower() for start, end in hit["highlights"]]
    assert set(marked) == {"broken", "on", "purpose", "markup"}
    assert "\x02" not in hit["snippet"]

    code, out, err = await invoke_cli("search", "malformed", "--db", db, "--name", "default")
    assert code == 0, err
    # The title match first, then the home page that links to it.
    assert 0 < out.index("Malformed page") < out.index("Harvestman test site")
    assert "1-2 of 2 matches" in out

    code, out, _ = await invoke_cli("search", "malformed", "--db", db, "--domain", "elsewhere.test")
    assert (code, out.strip()) == (0, "no match")

    # A second crawl of the same site: over every crawl each hit says which crawl stored it.
    code, _, err = await run_cli(
        "crawl", site.url("/malformed.html"), "--db", db, "--name", "again", "--max-depth", "0",
        *FAST, env={"HARVESTMAN_STORE_TEXT": "true"},
    )  # fmt: skip
    assert code == 0, err
    code, out, err = await invoke_cli("search", "malformed", "--db", db)
    assert code == 0, err
    assert "1-3 of 3 matches" in out
    assert (out.count("crawl default"), out.count("crawl again")) == (2, 1)
    code, out, err = await invoke_cli("search", "malformed", "--db", db, "--json")
    assert sorted(json.loads(line)["crawl"] for line in out.splitlines()) == [
        "again", "default", "default"
    ]  # fmt: skip


async def test_a_bad_search_exits_2_with_the_reason(tmp_path: Path) -> None:
    db = str(tmp_path / "empty.db")
    refused = [
        (("!!!",), "bad query: the query has no word to look for"),
        (("--", "-diesel"), "bad query: the query only excludes words"),
        (("kettle", "--min-price", "3"), "prices and availability need products"),
        (("kettle", "--since", "last tuesday"), "--since/--until: use an age"),
    ]
    for args, reason in refused:
        code, out, err = await invoke_cli("search", "--db", db, *args)
        assert (code, out) == (2, ""), err
        assert reason in " ".join(err.split()), err
