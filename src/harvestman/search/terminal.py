"""Search results for ``harvestman search``: a Rich table for people, JSON lines for programs.

Text from crawled pages goes into Rich ``Text`` objects, never into markup, so a title like
``[bold]`` prints as written.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from harvestman.search.highlight import to_plain
from harvestman.search.hits import PageHit, ProductHit, SearchResult

MARK_STYLE = "bold yellow"


def hit_record(hit: PageHit | ProductHit, crawls: dict[int, str] | None = None) -> dict[str, Any]:
    """One hit as a JSON-ready dict: the snippet without marks, ``highlights`` the marked
    ``[start, end)`` spans of it, a price as a decimal string, ``crawl`` the name of its crawl
    when ``crawls`` (id -> name) is given."""
    record = asdict(hit)
    if crawls is not None:
        record["crawl"] = crawls.get(hit.crawl_id)
    record["snippet"], spans = to_plain(hit.snippet)
    record["highlights"] = [list(span) for span in spans]
    if isinstance(hit, ProductHit) and hit.price is not None:
        record["price"] = str(hit.price)
    return record


def render_hits(
    result: SearchResult[Any], offset: int, crawls: dict[int, str] | None = None
) -> Group:
    """A table of the hits, numbered from ``offset + 1``, and a line saying how many matched.
    With ``crawls`` (id -> name: the search went over every crawl), each hit says its crawl
    when the store holds more than one: one page stored by two crawls is two hits."""
    named = crawls if crawls is not None and len(crawls) > 1 else None
    table = Table(show_lines=True, expand=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("rank", justify="right", no_wrap=True)
    table.add_column("match", overflow="fold", ratio=2)
    table.add_column("snippet", overflow="fold", ratio=3)
    for number, hit in enumerate(result.hits, offset + 1):
        heading = _heading(hit)
        if named is not None:
            heading.append(f"\ncrawl {named.get(hit.crawl_id, hit.crawl_id)}", style="dim")
        table.add_row(str(number), f"{hit.rank:.3g}", heading, _snippet(hit.snippet))
    bound = "" if result.total_is_exact else "more than "
    if not result.total:
        lines = [Text("no match")]
    else:
        shown = f"{offset + 1}-{offset + len(result.hits)}" if result.hits else "none"
        lines = [Text(f"{shown} of {bound}{result.total:,} matches")]
    if result.ignored:
        lines.append(Text(f"left out (in most documents): {', '.join(result.ignored)}"))
    return Group(table, *lines) if result.hits else Group(*lines)


def _heading(hit: PageHit | ProductHit) -> Text:
    if isinstance(hit, PageHit):
        heading = Text(hit.title or "(no title)", style="bold")
    else:
        heading = Text(hit.name or "(no name)", style="bold")
        details = [hit.brand, _price(hit), hit.availability]
        heading.append("\n" + " · ".join(d for d in details if d))
    heading.append("\n" + hit.url, style="cyan")
    return heading


def _price(hit: ProductHit) -> str | None:
    if hit.price is None:
        return None
    return f"{hit.price} {hit.currency or ''}".strip()


def _snippet(marked: str) -> Text:
    plain, spans = to_plain(marked)
    text = Text(plain)
    for start, end in spans:
        text.stylize(MARK_STYLE, start, end)
    return text
