"""Who may call a route: ``access(role)`` is the one dependency every route declares.

It identifies the caller (``auth``: the token, 401), applies the caller's rate limit
(``ratelimit``, 429), then checks the role (403). A request with a body was already identified
and counted by ``admit`` in the intake middleware, before its body was read (``intake``); the
dependency then only checks the role.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Request

from harvestman.api.auth import Principal, Role, principal_of, unauthorized
from harvestman.api.context import context_of
from harvestman.api.errors import ApiError
from harvestman.api.text import check_parameters


async def admit(request: Request) -> Principal:
    """Identify the caller of ``request`` and count it against their rate limit (429), once
    per request: the principal is kept on ``request.state``.

    An invalid token is counted as an anonymous request of its client before the 401, so
    guessing tokens is as limited as anything else anonymous; a signed-in user's token is a
    401 once the user is disabled or changed password. Clients are told apart by the peer
    address (``request.client``: the proxy's X-Forwarded-For only when the proxy is trusted,
    see ``api_trusted_proxies``).
    """
    admitted: Principal | None = getattr(request.state, "admitted", None)
    if admitted is not None:
        return admitted
    ctx = context_of(request)
    client = request.client.host if request.client else "unknown"
    try:
        principal = principal_of(request, ctx.tokens)
        if principal.user is not None and not await ctx.user_may_sign(principal):
            raise unauthorized("the user of this token is disabled or signed in again")
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
        ctx = context_of(request)
        principal = await admit(request)
        if seed:
            client = principal.subject or (request.client.host if request.client else "unknown")
            await ctx.limiter.check(f"seed:{client}", ctx.settings.rate_seed)
        request.state.principal = principal
        if principal.role.rank < role.rank:
            if principal.role is Role.ANONYMOUS:
                raise unauthorized("this endpoint needs a bearer token")
            raise ApiError(403, f"this endpoint needs the {role.value} role")
        longest = ctx.settings.max_text_length
        check_parameters(request.query_params.multi_items(), longest, "query parameter")
        path = [(name, str(value)) for name, value in request.path_params.items()]
        check_parameters(path, longest, "path parameter")
        return principal

    dependency.__name__ = f"access_{role.value}{'_seed' if seed else ''}"
    return dependency
