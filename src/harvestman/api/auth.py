"""Bearer tokens (JWT, HS256) and the three roles.

- **anonymous** (no token) may read ``/health`` and ``/api/stats``;
- **user** may read everything;
- **admin** may also change anything.

A missing or invalid token where one is needed is a 401; a valid token whose role is not
enough is a 403 (``admission``: the dependency every route declares).

Tokens are for machines (``harvestman token create``); people sign in (``login``) and get a
token naming their user (the ``usr`` claim): such a token stops working when the user is
disabled or their password changes (checked in the store on every request).

>>> token = create_token("9f86d081884c7d659a2feaa0c55ad015", Role.ADMIN, days=1)
>>> decode_token("9f86d081884c7d659a2feaa0c55ad015", token).role
<Role.ADMIN: 'admin'>
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import jwt
from fastapi import Request

from harvestman.api.errors import ApiError
from harvestman.api.keystrength import MIN_SECRET_LENGTH, secret_problem
from harvestman.api.settings import DEV_SECRET
from harvestman.errors import ConfigError

ALGORITHM = "HS256"
ISSUER = "harvestman"


class Role(StrEnum):
    ANONYMOUS = "anonymous"
    USER = "user"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _RANKS[self]


_RANKS = {Role.ANONYMOUS: 0, Role.USER: 1, Role.ADMIN: 2}


@dataclass(slots=True, frozen=True)
class Principal:
    """Who is calling: a role, and the token's subject (None for anonymous); for a signed-in
    person, their user name and when the token was issued."""

    role: Role
    subject: str | None = None
    user: str | None = None
    issued_at: float = 0.0


ANONYMOUS = Principal(Role.ANONYMOUS)


def resolve_secret(secret: str | None, *, dev: bool) -> str:
    """The signing secret to use. Outside dev mode a missing, default, short or guessable
    secret (``keystrength.secret_problem``) is a ConfigError (the service must not start); in
    dev mode a fixed dev secret fills in for a missing one."""
    secret = secret or ""
    problem = secret_problem(secret)
    if problem is not None:
        if dev:
            return secret if len(secret) >= MIN_SECRET_LENGTH else DEV_SECRET
        raise ConfigError(
            f"HARVESTMAN_API_JWT_SECRET is missing, a default, or too weak ({problem}): "
            "set a random secret, e.g. `openssl rand -hex 32` (or run with --dev)"
        )
    return secret


def create_token(
    secret: str,
    role: Role | str,
    *,
    subject: str | None = None,
    days: float = 30.0,
    now: float | None = None,
    user: str | None = None,
) -> str:
    """A signed token for ``role`` valid ``days`` days (``user``: issued to a signed-in user,
    valid only while the user is)."""
    role = Role(role)
    if role is Role.ANONYMOUS:
        raise ValueError("anonymous needs no token")
    issued = time.time() if now is None else now
    claims: dict[str, object] = {
        "sub": subject or role.value,
        "role": role.value,
        "iss": ISSUER,
        "iat": int(issued),
        "exp": int(issued + days * 86400),
    }
    if user is not None:
        claims["usr"] = user
        # Fractions kept (RFC 7519 allows them): a password set within the second after a
        # sign-in must still end that session (store.users.tokens_after).
        claims["iat"] = issued
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def decode_token(secret: str, token: str) -> Principal:
    """The principal of a valid token; ApiError 401 for any invalid or expired one."""
    return _verify(secret, token)[0]


def _verify(secret: str, token: str) -> tuple[Principal, float]:
    """A valid token's principal and expiry (epoch seconds)."""
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=[ALGORITHM],
            issuer=ISSUER,
            options={"require": ["exp", "sub", "role"], "verify_iat": False},
        )
        role = Role(claims["role"])
        user = claims.get("usr")
        principal = Principal(
            role,
            str(claims["sub"]),
            user=None if user is None else str(user),
            issued_at=float(claims.get("iat", 0)),
        )
    except (jwt.PyJWTError, ValueError, KeyError, TypeError):
        raise unauthorized("the bearer token is invalid or expired") from None
    if role is Role.ANONYMOUS:
        raise unauthorized("the bearer token is invalid or expired")
    return principal, float(claims["exp"])


class VerifiedTokens:
    """Tokens already verified, kept with their principal until they expire.

    Checking a signature was a tenth of a list request's CPU, and a client sends the same
    token with every request. A signature's verdict cannot change before its expiry (the secret
    is fixed for the process), so answering it from here is exact; whether a signed-in user is
    still enabled is asked of the store by ``admit``, every time.
    Invalid tokens are never kept; the least recently used go beyond ``max_entries``.
    """

    def __init__(
        self, secret: str, *, max_entries: int = 1024, clock: Callable[[], float] = time.time
    ) -> None:
        self.secret = secret
        self.max_entries = max_entries
        self.clock = clock
        self._known: OrderedDict[str, tuple[Principal, float]] = OrderedDict()

    def principal(self, token: str) -> Principal:
        """As ``decode_token``."""
        found = self._known.get(token)
        if found is not None and self.clock() < found[1]:
            self._known.move_to_end(token)
            return found[0]
        principal, expires = _verify(self.secret, token)
        self._known[token] = (principal, expires)
        self._known.move_to_end(token)
        while len(self._known) > self.max_entries:
            self._known.popitem(last=False)
        return principal


def unauthorized(message: str) -> ApiError:
    return ApiError(401, message, headers={"WWW-Authenticate": "Bearer"})


def principal_of(request: Request, tokens: VerifiedTokens) -> Principal:
    """The caller of ``request``: anonymous without an Authorization header."""
    header = request.headers.get("authorization")
    if header is None:
        return ANONYMOUS
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorized("use 'Authorization: Bearer <token>'")
    return tokens.principal(token.strip())
