"""Bearer tokens (JWT, HS256) and the three roles.

- **anonymous** (no token) may read ``/health`` and ``/api/stats``;
- **user** may read everything;
- **admin** may also change anything.

A missing or invalid token where one is needed is a 401; a valid token whose role is not
enough is a 403. ``access(role)`` is the one dependency every route declares: it identifies
the caller, applies the caller's rate limit (``ratelimit``), then checks the role. A request
with a body was already identified and counted by ``admit`` in the intake middleware, before
its body was read (``intake``); the dependency then only checks the role.

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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

import jwt
from fastapi import Request

from harvestman.api.errors import ApiError
from harvestman.api.keystrength import MIN_SECRET_LENGTH, secret_problem
from harvestman.api.settings import DEV_SECRET
from harvestman.api.text import check_parameters
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
        raise _unauthorized("the bearer token is invalid or expired") from None
    if role is Role.ANONYMOUS:
        raise _unauthorized("the bearer token is invalid or expired")
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


async def admit(request: Request) -> Principal:
    """Identify the caller of ``request`` and count it against their rate limit (429), once
    per request: the principal is kept on ``request.state``.

    An invalid token is counted as an anonymous request of its client before the 401, so
    guessing tokens is as limited as anything else anonymous; a signed-in user's token is a
    401 once the user is disabled or changed password. Clients are told apart by the peer
    address (``request.client``: the proxy's X-Forwarded-For only when the proxy is trusted,
    see ``api_trusted_proxies``).
    """
    from harvestman.api.context import context_of

    admitted: Principal | None = getattr(request.state, "admitted", None)
    if admitted is not None:
        return admitted
    ctx = context_of(request)
    client = request.client.host if request.client else "unknown"
    try:
        principal = principal_of(request, ctx.tokens)
        if principal.user is not None and not await ctx.user_may_sign(principal):
            raise _unauthorized("the user of this token is disabled or signed in again")
    except ApiError:
        await ctx.limiter.check(f"{Role.ANONYMOUS.value}:{client}", ctx.settings.rate_anonymous)
        raise
    key = f"{principal.role.value}:{principal.subject or client}"
    await ctx.limiter.check(key, ctx.limit_for(principal.role))
    request.state.admitted = principal
    return principal


def access(role: Role, *, seed: bool = False) -> Callable[[Request], Awaitable[Principal]]:
    """The dependency of a route open to ``role`` and above (``seed``: the seed injection
    limit applies too). Order: identify (401), rate-limit (429), authorize (403), then the
    request's query and path parameters are checked, once (``text``: NUL, lone surrogates,
    length; 422)."""

    async def dependency(request: Request) -> Principal:
        from harvestman.api.context import context_of

        ctx = context_of(request)
        principal = await admit(request)
        if seed:
            client = principal.subject or (request.client.host if request.client else "unknown")
            await ctx.limiter.check(f"seed:{client}", ctx.settings.rate_seed)
        request.state.principal = principal
        if principal.role.rank < role.rank:
            if principal.role is Role.ANONYMOUS:
                raise _unauthorized("this endpoint needs a bearer token")
            raise ApiError(403, f"this endpoint needs the {role.value} role")
        longest = ctx.settings.max_text_length
        check_parameters(request.query_params.multi_items(), longest, "query parameter")
        path = [(name, str(value)) for name, value in request.path_params.items()]
        check_parameters(path, longest, "path parameter")
        return principal

    dependency.__name__ = f"access_{role.value}{'_seed' if seed else ''}"
    return dependency
