"""``export``, ``stats``, ``errors``, ``dead-letter``, ``search``: reading what a crawl stored."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from harvestman.cli.exits import err, usage_error
from harvestman.cli.options import (
    AvailabilityOption,
    ConfigOption,
    CurrencyOption,
    DatabaseUrlOption,
    DbOption,
    DryRunOption,
    ErrorClassOption,
    EveryCrawlOption,
    HostOption,
    JsonOption,
    KindOption,
    LimitOption,
    ReadCrawlOption,
)
from harvestman.cli.stores import existing_crawl, open_crawl, open_store
from harvestman.errors import ConfigError, HarvestmanError

if TYPE_CHECKING:
    from harvestman.config import Settings
    from harvestman.store import SqlStore

dead_app = typer.Typer(
    help="Failed URLs (the dead letters): list and re-queue.", no_args_is_help=True
)


def export(
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="jsonl, csv, es (bulk NDJSON) or warc")
    ] = "jsonl",
    what: Annotated[
        str, typer.Option("--what", help="pages, products or records (site parsers')")
    ] = "pages",
    kind: KindOption = "page",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File to write [default: stdout]")
    ] = None,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: ReadCrawlOption = None,
) -> None:
    """Write every stored page (product, parser record) of a crawl, streaming; WARC from the
    raw archive. Pages are the crawl's pages unless --kind adds its sitemaps and feeds; a WARC
    holds every archived exchange."""
    from harvestman.export import FORMATS, WHAT, export_pages, parse_kinds

    if fmt not in (*FORMATS, "warc"):
        raise usage_error(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}, warc")
    if what not in WHAT:
        raise usage_error(f"--what must be one of {', '.join(WHAT)}")
    try:
        kinds = parse_kinds(kind)
    except ValueError as exc:
        raise usage_error(f"--kind: {exc}") from None
    with open_crawl(config, db, database_url, name) as (settings, store, crawl_id):
        if fmt == "warc":
            _export_warc(store, crawl_id, settings, output)
            return
        target = output.open("wb") if output else sys.stdout.buffer
        try:
            n = export_pages(store, crawl_id, fmt, target, what=what, kinds=kinds)
        finally:
            if output:
                target.close()
    err.print(f"exported {n} {what}")
    if fmt == "es" and what == "products":
        _write_es_mapping(output)


def _write_es_mapping(output: Path | None) -> None:
    """The index mapping beside the bulk file (``harvestman.elastic``)."""
    from harvestman import elastic

    if output is None:
        err.print("no mapping written: give --output FILE to get FILE's .mapping.json beside it")
        return
    path = elastic.mapping_path(output)
    elastic.write_mapping(path)
    err.print(f"mapping: {path}", markup=False, highlight=False)


def _export_warc(store: SqlStore, crawl_id: int, settings: Settings, output: Path | None) -> None:
    """Export from the archive the crawl recorded (the settings' own for older crawls); a page
    whose body is not there is lost, and the command fails (status 1) after writing the rest."""
    from harvestman.archive import RawArchive, export_warc
    from harvestman.archive.location import archive_location, open_blobs

    if output is None:
        raise ConfigError("--format warc needs --output FILE (.warc or .warc.gz)")
    location = store.reports.archive_location(crawl_id) or archive_location(settings)
    with RawArchive(open_blobs(location, settings)) as archive:
        report = export_warc(store.exports.iter_pages(crawl_id), archive, output)
    if report.skipped or report.missing or report.refused:
        refused = f", {report.refused} with a key outside the archive" if report.refused else ""
        err.print(
            f"skipped {report.skipped} pages without an archived body, {report.missing} lost"
            + refused
        )
    err.print(f"exported {report.written} pages")
    problems = []
    if report.missing:
        problems.append(f"{report.missing} archived bodies are not in {location}")
    if report.refused:
        problems.append(f"{report.refused} pages name a key outside the archive")
    if problems:
        raise HarvestmanError("; ".join(problems))
    if not report.written:
        raise HarvestmanError(
            "nothing to export: this crawl archived no page bodies. Turn the raw archive on "
            "(HARVESTMAN_ARCHIVE_ENABLED=true, or archive_enabled = true in --config) and crawl "
            "again; `crawl --warc FILE` writes a WARC while it crawls"
        )


def stats(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: ReadCrawlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print what the store holds for a crawl: URLs by status, pages, statuses, errors, hosts."""
    with open_crawl(config, db, database_url, name) as (_, store, crawl_id):
        report = store.reports.report(crawl_id)
    if as_json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        from harvestman.display import render_report

        Console().print(render_report(report))


def errors(
    category: Annotated[
        str | None, typer.Option("--category", help="network, http, parse, validation, storage")
    ] = None,
    error_type: Annotated[
        str | None, typer.Option("--type", help="An error class, e.g. FetchTimeout")
    ] = None,
    host: Annotated[str | None, typer.Option("--host", help="Only errors of this host")] = None,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: EveryCrawlOption = None,
    limit: LimitOption = 50,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object an error")] = False,
) -> None:
    """The newest errors recorded (every crawl's, or one's), by category; the crawl is the last
    column."""
    from harvestman.store.failures import CATEGORIES

    if category is not None and category not in CATEGORIES:
        raise usage_error(f"unknown category {category!r}; choose one of {', '.join(CATEGORIES)}")
    with open_store(config, db, database_url, must_exist=True) as (_, store):
        crawl_id = existing_crawl(store, name) if name is not None else None
        rows = store.failures.error_rows(
            crawl_id=crawl_id, category=category, error_class=error_type,
            host=host, limit=limit,
        )  # fmt: skip
    for row in rows:
        if as_json:
            _json_line(row)
        else:
            fields = ("category", "error_class", "task", "message", "crawl")
            typer.echo("\t".join(str(row[field]) for field in fields))


def _json_line(row: dict[str, Any]) -> None:
    import orjson

    record = {str(key): value for key, value in dict(row).items()}
    sys.stdout.buffer.write(orjson.dumps(record, default=str) + b"\n")


@dead_app.command("list")
def dead_list(
    host: HostOption = None,
    error_class: ErrorClassOption = None,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: ReadCrawlOption = None,
    limit: LimitOption = 50,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a URL")] = False,
) -> None:
    """URLs that failed for good, with their error."""
    with open_crawl(config, db, database_url, name) as (_, store, crawl_id):
        rows, total = store.failures.dead_letters(
            crawl_id, host=host, error_class=error_class, limit=limit
        )
    for row in rows:
        if as_json:
            _json_line(row)
        else:
            typer.echo(f"{row['url']}\t{row['error_class']}\t{row['error']}")
    err.print(f"{len(rows)} of {total} failed URLs shown")


@dead_app.command("requeue")
def dead_requeue(
    error_class: ErrorClassOption = None,
    host: HostOption = None,
    dry_run: DryRunOption = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: ReadCrawlOption = None,
) -> None:
    """Put failed URLs back into the frontier (retries reset); the next crawl fetches them."""
    import time

    with open_crawl(config, db, database_url, name) as (_, store, crawl_id):
        n = store.failures.requeue_dead_letters(
            crawl_id, time.time(), host=host, error_class=error_class,
            dry_run=dry_run,
        )  # fmt: skip
    err.print(f"{'would re-queue' if dry_run else 're-queued'} {n} URLs")


def search(
    query: Annotated[str, typer.Argument(help='Words (all needed), "a phrase", a OR b, -word')],
    what: Annotated[str, typer.Option("--what", help="pages or products")] = "pages",
    domain: Annotated[
        str | None, typer.Option("--domain", help="One host (example.com: also www.)")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Fetched (products: changed) since: 7d, ISO")
    ] = None,
    until: Annotated[str | None, typer.Option("--until", help="... and before this")] = None,
    min_price: Annotated[float | None, typer.Option("--min-price", min=0)] = None,
    max_price: Annotated[float | None, typer.Option("--max-price", min=0)] = None,
    currency: CurrencyOption = None,
    availability: AvailabilityOption = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100)] = 20,
    offset: Annotated[int, typer.Option("--offset", min=0, max=999)] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a hit (JSONL)")] = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    name: EveryCrawlOption = None,
) -> None:
    """Full-text search of stored pages (or products), best first."""
    import time
    from decimal import Decimal

    from harvestman.errors import QueryError
    from harvestman.lifecycle.since import parse_since
    from harvestman.search.query import require_query
    from harvestman.search.terminal import hit_record, render_hits

    try:
        require_query(query)
        now = time.time()
        since_at, until_at = (
            None if at is None else parse_since(at, now=now) for at in (since, until)
        )
    except QueryError as exc:
        raise usage_error(f"bad query: {exc.reason}") from None
    except ValueError:
        raise usage_error("--since/--until: use an age (36h, 7d), an ISO date or epoch") from None
    product_only = (min_price, max_price, currency, availability)
    if what not in ("pages", "products") or (what == "pages" and any(product_only)):
        raise usage_error("--what is pages or products; prices and availability need products")
    opened = open_store(config, db, database_url, must_exist=True, crawl_name=name)
    with opened as (settings, store):
        crawl_id = existing_crawl(store, settings.crawl_name) if name else None
        store.schema.check_current()
        if what == "pages":
            result: Any = store.search.search_pages(crawl_id, query, domain=domain,
                                             limit=limit, offset=offset, since=since_at,
                                             until=until_at)  # fmt: skip
        else:
            result = store.search.search_products(
                crawl_id, query, domain=domain, currency=currency,
                min_price=None if min_price is None else Decimal(str(min_price)),
                max_price=None if max_price is None else Decimal(str(max_price)),
                availability=availability, limit=limit, offset=offset, since=since_at,
                until=until_at,
            )  # fmt: skip
        crawls = {crawl: name for name, crawl in store.reports.crawl_ids().items()}
    if as_json:
        import orjson

        for hit in result.hits:
            sys.stdout.buffer.write(orjson.dumps(hit_record(hit, crawls)) + b"\n")
    else:
        Console().print(render_hits(result, offset, None if name else crawls))
