"""``harvestman user create|list|disable|set-password``: the people who sign in to the API
and the dashboard (``POST /api/auth/login``). Machines keep using ``harvestman token create``.

Passwords are read from the terminal (twice), or from standard input with ``--password-stdin``
(one line, for scripts); they are never arguments, which other users of the machine could see.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from harvestman.store import SqlStore

user_app = typer.Typer(help="People who sign in to the API and dashboard.", no_args_is_help=True)

Name = Annotated[str, typer.Argument(help="The user name they sign in with")]
PasswordStdin = Annotated[
    bool, typer.Option("--password-stdin", help="Read the password from standard input")
]


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


@contextlib.contextmanager
def _store(config: Path | None, db: Path | None, database_url: str | None) -> Iterator[SqlStore]:
    """The store the options name, set up (the embedded store makes itself), disposed after;
    its errors become one line and the CLI's exit status (``cli.exits``)."""
    import asyncio

    from harvestman.cli.stores import open_store

    with open_store(config, db, database_url) as (_, store):
        asyncio.run(_prepare(store))
        yield store


async def _prepare(store: SqlStore) -> None:
    async with store:
        await store.prepare_schema()


def _password(from_stdin: bool) -> str:
    from harvestman.api.passwords import password_problem

    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    problem = password_problem(password)
    if problem is not None:
        raise _fail(problem)
    return password


@user_app.command("create")
def create(
    name: Name,
    role: Annotated[str, typer.Option("--role", help="admin or user")] = "user",
    password_stdin: PasswordStdin = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Add a user who may sign in with ROLE."""
    from harvestman.api.passwords import hash_password
    from harvestman.store.users import UserExists

    if role not in ("admin", "user"):
        raise _fail("--role must be admin or user")
    if not name.strip() or len(name) > 100 or name != name.strip():
        raise _fail("a user name has 1 to 100 characters and no surrounding spaces")
    password = _password(password_stdin)
    with _store(config, db, database_url) as store:
        try:
            store.accounts.create_user(name, hash_password(password), role)
        except UserExists:
            raise _fail(f"a user named {name!r} exists already") from None
    typer.echo(f"created {role} {name}")


@user_app.command("list")
def list_(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """The users, one a line: name, role, enabled or disabled (--json: one object a line)."""
    import json

    with _store(config, db, database_url) as store:
        users = store.accounts.list_users()
    for user in users:
        state = "enabled" if user.enabled else "disabled"
        if as_json:
            typer.echo(json.dumps({"name": user.name, "role": user.role, "state": state}))
        else:
            typer.echo(f"{user.name}\t{user.role}\t{state}")


@user_app.command("disable")
def disable(
    name: Name,
    enable: Annotated[bool, typer.Option("--enable", help="Enable the user again")] = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Stop a user signing in; the tokens they hold stop working at once."""
    from harvestman.store.users import UnknownUser

    with _store(config, db, database_url) as store:
        try:
            store.accounts.set_user_enabled(name, enable)
        except UnknownUser:
            raise _fail(f"no user named {name!r}", 1) from None
    typer.echo(f"{'enabled' if enable else 'disabled'} {name}")


@user_app.command("set-password")
def set_password_(
    name: Name,
    password_stdin: PasswordStdin = False,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Give a user a new password; the tokens issued with the old one stop working."""
    from harvestman.api.passwords import hash_password
    from harvestman.store.users import UnknownUser

    password = _password(password_stdin)
    with _store(config, db, database_url) as store:
        try:
            store.accounts.set_user_password(name, hash_password(password))
        except UnknownUser:
            raise _fail(f"no user named {name!r}", 1) from None
    typer.echo(f"new password for {name}")


# Last, not first (as in api/commands.py): importing harvestman.cli registers its commands,
# this module's included; Typer reads these annotations only when it builds the command.
from harvestman.cli.options import (  # noqa: E402
    ConfigOption,
    DatabaseUrlOption,
    DbOption,
    JsonOption,
)
