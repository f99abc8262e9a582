"""How a command shows what it did: a titled table of a report's fields, or JSON with ``--json``.

The lifecycle commands (``maintenance``, ``backup``, ``restore``, ``restore-archive``,
``replay``) return dataclass reports. Printed as they are they read ``BackupReport(path=…)``;
here every field becomes a row with a plain label and a value in units a person reads (sizes
in bytes, seconds, dates in ISO 8601). Empty fields (no file written, nothing skipped) are
left out of the table, never out of the JSON.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

# Fields that hold a Unix time, and fields that hold a size in bytes.
_TIMES = frozenset({"since", "until"})
_SIZES = frozenset({"bytes", "free_bytes_before", "free_bytes_after"})


def print_report(title: str, report: Any, *, as_json: bool = False) -> None:
    """``report`` (a dataclass) as a table titled ``title`` on stderr, or as one JSON object on
    stdout (``as_json``): what a script reads, beside the table a person reads."""
    if as_json:
        import orjson

        data = dataclasses.asdict(report)
        sys.stdout.buffer.write(orjson.dumps(data, default=str, option=orjson.OPT_INDENT_2))
        sys.stdout.buffer.write(b"\n")
        return
    Console(stderr=True).print(report_table(title, report))


def report_table(title: str, report: Any) -> Table:
    """The rows of ``report``: one per non-empty field, nested reports flattened."""
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for label, value in _rows("", dataclasses.asdict(report)):
        table.add_row(label, value)
    return table


def _rows(prefix: str, fields: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for name, value in fields.items():
        label = f"{prefix}{name.replace('_', ' ')}"
        if isinstance(value, Mapping):
            yield from _rows(f"{label}: ", value)
            continue
        shown = shown_value(name, value)
        if shown:
            yield label, shown


def shown_value(name: str, value: Any) -> str:
    """A field's value as a person reads it ('' for nothing to show).

    >>> shown_value("bytes", 2_500_000), shown_value("seconds", 0.25), shown_value("pages", 0)
    ('2.5 MB', '0.25 s', '0')
    >>> shown_value("since", 0.0), shown_value("skipped", []), shown_value("sample", ["a", "b"])
    ('1970-01-01T00:00:00+00:00', '', 'a, b')
    """
    if value is None or value == [] or value == "":
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if name in _TIMES and isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")
    if name in _SIZES and isinstance(value, int):
        return human_bytes(value)
    if isinstance(value, float):
        return f"{value:.2f} s" if name in ("seconds", "longest_write") else f"{value:g}"
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    if isinstance(value, Path):
        return str(value)
    return str(value)


def human_bytes(size: int) -> str:
    """>>> human_bytes(999), human_bytes(1_500), human_bytes(3_000_000_000)
    ('999 B', '1.5 kB', '3.0 GB')
    """
    amount = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if amount < 1000 or unit == "GB":
            return f"{size} B" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1000
    raise AssertionError("unreachable")
