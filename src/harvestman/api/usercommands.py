"""``harvestman user create|list|disable|set-password``: the people who sign in to the API
and the dashboard (``POST /api/auth/login``). Machines keep using ``harvestman token create``.

Passwords are read from the terminal (twice), or from standard input with ``--password-stdin``
(one line, for scripts); they are never arguments, which other users of the machine could see.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from harvestman.errors import ConfigError, HarvestmanError

if TYPE_CHECKING:
    from harvestman.store import SqlStore

user_app = typer.Typer(help="People who sign in to the API and dashboard.", no_args_is_help=True)

Name = Annotated[str, typer.Argument(help="The user name they sign in with")]
DatabaseUrl = Annotated[
    str | None, typer.Option("--database-url", help="SQLAlchemy URL of the store")
]
PasswordStdin = Annotated[
    bool, typer.Option("--password-stdin", help="Read the password from standard input")
]


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _store(database_url: str | None) -> SqlStore:
    import asyncio

    from harvestman.config import load_settings
    from harvestman.store import SqlStore

    try:
        store = SqlStore(load_settings(database_url=database_url).database_url)
        asyncio.run(_prepare(store))  # the embedded store sets itself up
    except HarvestmanError as exc:
        raise _fail(str(exc), 2 if isinstance(exc, ConfigError) else 1) from None
    return store


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
    database_url: DatabaseUrl = None,
) -> None:
    """Add a user who may sign in with ROLE."""
    from harvestman.api.passwords import hash_password
    from harvestman.store.users import UserExists

    if role not in ("admin", "user"):
        raise _fail("--role must be admin or user")
    if not name.strip() or len(name) > 100 or name != name.strip():
        raise _fail("a user name has 1 to 100 characters and no surrounding spaces")
    store = _store(database_url)
    try:
        store.create_user(name, hash_password(_password(password_stdin)), role)
    except UserExists:
        raise _fail(f"a user named {name!r} exists already") from None
    finally:
        store.dispose()
    typer.echo(f"created {role} {name}")


@user_app.command("list")
def list_(database_url: DatabaseUrl = None) -> None:
    """The users, one a line: name, role, enabled or disabled."""
    store = _store(database_url)
    try:
        for user in store.list_users():
            typer.echo(f"{user.name}\t{user.role}\t{'enabled' if user.enabled else 'disabled'}")
    finally:
        store.dispose()


@user_app.command("disable")
def disable(
    name: Name,
    enable: Annotated[bool, typer.Option("--enable", help="Enable the user again")] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Stop a user signing in; the tokens they hold stop working at once."""
    from harvestman.store.users import UnknownUser

    store = _store(database_url)
    try:
        store.set_user_enabled(name, enable)
    except UnknownUser:
        raise _fail(f"no user named {name!r}", 1) from None
    finally:
        store.dispose()
    typer.echo(f"{'enabled' if enable else 'disabled'} {name}")


@user_app.command("set-password")
def set_password_(
    name: Name, password_stdin: PasswordStdin = False, database_url: DatabaseUrl = None
) -> None:
    """Give a user a new password; the tokens issued with the old one stop working."""
    from harvestman.api.passwords import hash_password
    from harvestman.store.users import UnknownUser

    store = _store(database_url)
    try:
        store.set_user_password(name, hash_password(_password(password_stdin)))
    except UnknownUser:
        raise _fail(f"no user named {name!r}", 1) from None
    finally:
        store.dispose()
    typer.echo(f"new password for {name}")
