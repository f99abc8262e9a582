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


def hit_record(hit: PageHit | ProductHit) -> dict[str, Any]:
    """One hit as a JSON-ready dict: the snippet without marks, ``highlights`` the marked
    ``[start, end)`` spans of it, a price as a decimal string."""
    record = asdict(hit)
    record["snippet"], spans = to_plain(hit.snippet)
    record["highlights"] = [list(span) for span in spans]
    if isinstance(hit, ProductHit) and hit.price is not None:
        record["price"] = str(hit.price)
    return record


def render_hits(result: SearchResult[Any], offset: int) -> Group:
    """A table of the hits, numbered from ``offset + 1``, and a line saying how many matched."""
    table = Table(show_lines=True, expand=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("rank", justify="right", no_wrap=True)
    table.add_column("match", overflow="fold", ratio=2)
    table.add_column("snippet", overflow="fold", ratio=3)
    for number, hit in enumerate(result.hits, offset + 1):
        table.add_row(str(number), f"{hit.rank:.3g}", _heading(hit), _snippet(hit.snippet))
    shown = f"{offset + 1}-{offset + len(result.hits)}" if result.hits else "none"
    bound = "" if result.total_is_exact else "more than "
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
