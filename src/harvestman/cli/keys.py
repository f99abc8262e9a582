"""``admin new-key``, ``admin rotate-key`` and ``admin proxies``: the proxies' credentials.

Proxy passwords are kept encrypted under ``proxy_key`` (``harvestman.credentials``); these
commands make a key, re-encrypt what the store holds under a new one, and list the stored
proxies with their passwords masked.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from harvestman.cli.exits import err, errors_exit
from harvestman.cli.options import ConfigOption, DatabaseUrlOption, DbOption, JsonOption
from harvestman.cli.stores import open_store

# From the environment by default: a key on the command line shows in `ps` and shell history.
OldKeyOption = Annotated[
    str,
    typer.Option("--old", envvar="HARVESTMAN_PROXY_KEY", help="the key in use", show_default=False),
]
NewKeyOption = Annotated[
    str,
    typer.Option(
        "--new", envvar="HARVESTMAN_NEW_PROXY_KEY", help="the key to use", show_default=False
    ),
]


def new_key() -> None:
    """Print a new Fernet key for proxy_key (HARVESTMAN_PROXY_KEY)."""
    from harvestman.credentials import ProxyCipher

    typer.echo(ProxyCipher.generate_key())


def rotate_key(
    old: OldKeyOption,
    new: NewKeyOption,
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Re-encrypt the stored proxy passwords from the --old key (HARVESTMAN_PROXY_KEY) to the
    --new one (HARVESTMAN_NEW_PROXY_KEY).

    All or nothing: a password the old key cannot open leaves every one as it was. Then set
    proxy_key to the new key.
    """
    from harvestman.credentials import ProxyCipher

    with errors_exit():
        before, after = ProxyCipher(old), ProxyCipher(new)
    with open_store(config, db, database_url, must_exist=True) as (_, store):
        store.schema.check_current()
        count = store.admin.reencrypt_proxy_secrets(
            lambda token: after.encrypt(before.decrypt(token))
        )
    err.print(f"re-encrypted {count} proxy password(s); now set proxy_key to the new key")


def list_proxies(
    db: DbOption = None,
    database_url: DatabaseUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """The proxies the store knows, with their health; passwords masked."""
    with open_store(config, db, database_url, must_exist=True) as (_, store):
        store.schema.check_current()
        rows = store.admin.proxy_list()
    if as_json:
        typer.echo(json.dumps(rows))
        return
    for row in rows:
        state = "active" if row["active"] else "out"
        typer.echo(f"{row['url']}\t{state}\tok={row['successes']}\tfailed={row['failures']}")
