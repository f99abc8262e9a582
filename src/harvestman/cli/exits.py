"""How a command fails: one line on stderr and the documented exit status.

Messages are printed as text, not Rich markup (a path or a TOML section in brackets stays), on
one line however narrow the terminal: a path wrapped mid-name cannot be copied or grepped.

======  =====================================================================================
status  when
======  =====================================================================================
0       done
1       the work failed (a ``HarvestmanError``: the store refused, a backup exists, pages lost)
2       a usage or settings error (``ConfigError``, a bad option value, no such crawl), or a
        database that cannot be reached or used (one line: where, and the driver's first line)
75      the store stays unavailable (``StoreUnavailable``): a supervisor restarts the command
130     stopped by Ctrl-C / SIGTERM after finishing its writes
======  =====================================================================================
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer
from rich.console import Console
from rich.markup import escape

from harvestman.errors import STALL_EXIT_CODE, ConfigError, HarvestmanError, StoreUnavailable

USAGE_EXIT = 2

err = Console(stderr=True)


def usage_error(message: str) -> typer.Exit:
    """Print ``message`` as an error and return the exit for a usage error (raise it)."""
    err.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    return typer.Exit(USAGE_EXIT)


@contextlib.contextmanager
def errors_exit() -> Iterator[None]:
    """Turn Harvestman errors into a one-line message and their exit status (see above)."""
    try:
        yield
    except ConfigError as exc:
        raise usage_error(str(exc)) from None
    except StoreUnavailable as exc:
        err.print(f"[red]error:[/red] the store is unavailable: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(STALL_EXIT_CODE) from None
    except HarvestmanError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(1) from None
    except Exception as exc:
        from harvestman.store.dialect import unusable_database

        message = unusable_database(exc)
        if message is None:
            raise
        raise usage_error(message) from None
