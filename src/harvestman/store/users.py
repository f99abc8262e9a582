"""The people who sign in: the ``users`` table (``store.schema.users``, migration 0013).

``UserRepository``, a part of ``SqlStore``: synchronous methods, run off the event loop by the
API (``ApiContext.read``) and directly by ``harvestman user``. Passwords arrive hashed: hashing is
the API's business (``api.passwords``), storing them the store's.

A token issued to a user is valid while the user is enabled and the token was issued at or
after ``tokens_after`` (epoch seconds, fractions kept, as the ``iat`` of a sign-in token):
disabling a user or setting a new password moves it to now, ending every session issued
before.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from harvestman.store.connection import StoreConnection
from harvestman.store.schema import users

__all__ = ["UnknownUser", "User", "UserExists", "UserRepository"]


class UserExists(Exception):
    """A user of that name exists already."""


class UnknownUser(Exception):
    """No user of that name."""


@dataclass(slots=True, frozen=True)
class User:
    name: str
    role: str
    enabled: bool
    password_hash: str
    created_at: float
    tokens_after: float


def _user(row: object) -> User:
    m = row._mapping  # type: ignore[attr-defined]
    return User(
        name=m["name"],
        role=m["role"],
        enabled=bool(m["enabled"]),
        password_hash=m["password_hash"],
        created_at=float(m["created_at"]),
        tokens_after=float(m["tokens_after"]),
    )


class UserRepository(StoreConnection):
    """The ``users`` table. Synchronous: the API runs these off the event loop
    (``ApiContext.read``), ``harvestman user`` directly."""

    def create_user(self, name: str, password_hash: str, role: str) -> User:
        """Add an enabled user; UserExists when the name is taken."""
        now = time.time()
        values = {
            "name": name,
            "password_hash": password_hash,
            "role": role,
            "enabled": True,
            "created_at": now,
            "updated_at": now,
            "tokens_after": now,
        }
        try:
            with self._begin() as conn:
                conn.execute(users.insert().values(**values))
        except IntegrityError:
            raise UserExists(name) from None
        found = self.find_user(name)
        assert found is not None
        return found

    def find_user(self, name: str) -> User | None:
        with self.engine.connect() as conn, conn.begin():
            row = conn.execute(select(users).where(users.c.name == name)).first()
        return None if row is None else _user(row)

    def list_users(self) -> list[User]:
        with self.engine.connect() as conn, conn.begin():
            return [_user(row) for row in conn.execute(select(users).order_by(users.c.name))]

    def _update_user(self, name: str, **values: object) -> None:
        now = time.time()
        with self._begin() as conn:
            changed = conn.execute(
                users.update()
                .where(users.c.name == name)
                .values(updated_at=now, tokens_after=now, **values)
            ).rowcount
        if not changed:
            raise UnknownUser(name)

    def set_user_enabled(self, name: str, enabled: bool) -> None:
        """Enable or disable a user; either way, the tokens issued so far stop working."""
        self._update_user(name, enabled=enabled)

    def set_user_password(self, name: str, password_hash: str) -> None:
        """A new password; the tokens issued with the old one stop working."""
        self._update_user(name, password_hash=password_hash)

    def token_is_current(self, name: str, issued_at: float) -> bool:
        """Whether a token issued to ``name`` at ``issued_at`` is still good."""
        with self.engine.connect() as conn, conn.begin():
            row = conn.execute(
                select(users.c.enabled, users.c.tokens_after).where(users.c.name == name)
            ).first()
        return row is not None and bool(row.enabled) and issued_at >= float(row.tokens_after)
