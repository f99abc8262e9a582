"""Bearer tokens (JWT, HS256) and the three roles.

- **anonymous** (no token) may read ``/health`` and ``/api/stats``;
- **user** may read everything;
- **admin** may also change anything.

A missing or invalid token where one is needed is a 401; a valid token whose role is not
enough is a 403. ``access(role)`` is the one dependency every route declares: it identifies
the caller, applies the caller's rate limit (``ratelimit``), then checks the role.

>>> token = create_token("s3cret-s3cret-s3cret-s3cret-s3cret", Role.ADMIN, days=1)
>>> decode_token("s3cret-s3cret-s3cret-s3cret-s3cret", token).role
<Role.ADMIN: 'admin'>
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

import jwt
from fastapi import Request

from harvestman.api.errors import ApiError
from harvestman.api.settings import DEFAULT_SECRETS, DEV_SECRET
from harvestman.errors import ConfigError

ALGORITHM = "HS256"
ISSUER = "harvestman"
MIN_SECRET_LENGTH = 32  # RFC 7518: an HS256 key as long as the hash


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
    """Who is calling: a role, and the token's subject (None for anonymous)."""

    role: Role
    subject: str | None = None


ANONYMOUS = Principal(Role.ANONYMOUS)


def resolve_secret(secret: str | None, *, dev: bool) -> str:
    """The signing secret to use. Outside dev mode a missing, default or short secret is a
    ConfigError (the service must not start); in dev mode a fixed dev secret fills in."""
    secret = secret or ""
    if secret in DEFAULT_SECRETS or secret == DEV_SECRET or len(secret) < MIN_SECRET_LENGTH:
        if dev:
            return secret if len(secret) >= MIN_SECRET_LENGTH else DEV_SECRET
        raise ConfigError(
            "HARVESTMAN_API_JWT_SECRET is missing, a default, or shorter than "
            f"{MIN_SECRET_LENGTH} characters: set a random secret (or run with --dev)"
        )
    return secret


def create_token(
    secret: str,
    role: Role | str,
    *,
    subject: str | None = None,
    days: float = 30.0,
    now: float | None = None,
) -> str:
    """A signed token for ``role`` valid ``days`` days."""
    role = Role(role)
    if role is Role.ANONYMOUS:
        raise ValueError("anonymous needs no token")
    issued = time.time() if now is None else now
    claims = {
        "sub": subject or role.value,
        "role": role.value,
        "iss": ISSUER,
        "iat": int(issued),
        "exp": int(issued + days * 86400),
    }
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
    except (jwt.PyJWTError, ValueError, KeyError):
        raise _unauthorized("the bearer token is invalid or expired") from None
    if role is Role.ANONYMOUS:
        raise _unauthorized("the bearer token is invalid or expired")
    return Principal(role, str(claims["sub"])), float(claims["exp"])


class VerifiedTokens:
    """Tokens already verified, kept with their principal until they expire.

    Checking a signature was a tenth of a list request's CPU, and a client sends the same
    token with every request. A token's verdict cannot change before its expiry (the secret is
    fixed for the process; there is no revocation list), so answering it from here is exact.
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


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, message, headers={"WWW-Authenticate": "Bearer"})


def principal_of(request: Request, tokens: VerifiedTokens) -> Principal:
    """The caller of ``request``: anonymous without an Authorization header."""
    header = request.headers.get("authorization")
    if header is None:
        return ANONYMOUS
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("use 'Authorization: Bearer <token>'")
    return tokens.principal(token.strip())


def access(role: Role, *, seed: bool = False) -> Callable[[Request], Awaitable[Principal]]:
    """The dependency of a route open to ``role`` and above (``seed``: the seed injection
    limit applies too). Order: identify (401), rate-limit (429), authorize (403)."""

    async def dependency(request: Request) -> Principal:
        from harvestman.api.context import context_of

        ctx = context_of(request)
        principal = principal_of(request, ctx.tokens)
        client = principal.subject or (request.client.host if request.client else "unknown")
        key = f"{principal.role.value}:{client}"
        await ctx.limiter.check(key, ctx.limit_for(principal.role))
        if seed:
            await ctx.limiter.check(f"seed:{client}", ctx.settings.rate_seed)
        request.state.principal = principal
        if principal.role.rank < role.rank:
            if principal.role is Role.ANONYMOUS:
                raise _unauthorized("this endpoint needs a bearer token")
            raise ApiError(403, f"this endpoint needs the {role.value} role")
        return principal

    dependency.__name__ = f"access_{role.value}{'_seed' if seed else ''}"
    return dependency
