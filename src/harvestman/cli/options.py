"""The options many commands share, declared once as ``Annotated`` aliases.

Typer reads these annotations when it builds a command, `--help` included, so they name cheap
types only (``Path``, ``str``); what an option means is resolved in the command's body.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# The variable harvestman.config reads the settings file from; spelled out here so that
# declaring --config does not import the settings model (pydantic); a test checks they agree.
CONFIG_ENV = "HARVESTMAN_CONFIG"

DbOption = Annotated[
    Path | None,
    typer.Option("--db", help="SQLite file of the store [default: ./harvestman.db]"),
]
DatabaseUrlOption = Annotated[
    str | None,
    typer.Option("--database-url", help="SQLAlchemy URL of the store (overrides --db)"),
]
ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="TOML settings file", envvar=CONFIG_ENV)
]
EveryCrawlOption = Annotated[
    str | None, typer.Option("--name", help="Only this crawl [default: every crawl]")
]
CurrencyOption = Annotated[str | None, typer.Option("--currency", help="ISO 4217, e.g. EUR")]
AvailabilityOption = Annotated[
    list[str] | None, typer.Option("--availability", help="in_stock, out_of_stock, ...")
]
NameOption = Annotated[
    str | None, typer.Option("--name", help="Crawl namespace [default: default]")
]
# Commands that read one crawl: without --name, the store's only crawl, else `default`, else the
# newest, and a line on stderr names it and the others (cli/stores.existing_crawl).
ReadCrawlOption = Annotated[
    str | None,
    typer.Option(
        "--name",
        help="Crawl namespace [default: of those holding URLs, the only one, else default, "
        "else the newest]",
    ),
]
RedisOption = Annotated[
    str | None, typer.Option("--redis-url", help="Redis shared by the workers (optional)")
]
VerboseOption = Annotated[int, typer.Option("--verbose", "-v", count=True, help="More logging")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Count, change nothing")]
LimitOption = Annotated[int, typer.Option("--limit", min=1)]
HostOption = Annotated[str | None, typer.Option("--host", help="Only URLs of this host")]
ErrorClassOption = Annotated[
    str | None, typer.Option("--error-class", help="Only URLs that failed with this error")
]
ConcurrencyOption = Annotated[
    int | None, typer.Option("--concurrency", "-c", help="Requests in flight [default: 32]")
]
PerHostConcurrencyOption = Annotated[
    int | None, typer.Option("--per-host-concurrency", help="Requests in flight per host [1]")
]
KindOption = Annotated[
    str,
    typer.Option(
        "--kind", help="What fetches hold: page, sitemap, feed, comma-separated [default: page]"
    ),
]
