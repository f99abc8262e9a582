"""``POST /api/auth/login``: a person signs in with a user name and password (``harvestman
user create``) and gets a bearer token for ``api_login_hours`` (24), carrying their role.

The token is the same JWT machines use, naming the user: it stops working when the user is
disabled or their password is set again. A wrong name or password is one 401 (which of the
two is not said); attempts are limited per name and per client (``api_login_failures`` per
rate window, then 429), counted in the store before the password is checked and given back
when it was right (``logins``).
"""

from __future__ import annotations

import asyncio
import math

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from harvestman.api.auth import Role, create_token
from harvestman.api.context import context_of
from harvestman.api.errors import ApiError
from harvestman.api.params import Anonymous
from harvestman.api.passwords import MAX_PASSWORD_LENGTH, verify_password
from harvestman.api.schemas import Strict

router = APIRouter(tags=["auth"])


class LoginIn(Strict):
    name: str = Field(min_length=1, max_length=100)
    password: str = Field(min_length=1, max_length=MAX_PASSWORD_LENGTH)


class LoginOut(BaseModel):
    token: str
    token_type: str = "bearer"
    expires_in: int  # seconds
    user: str
    role: str


@router.post("/api/auth/login", response_model=LoginOut)
async def login(request: Request, body: LoginIn, _: Anonymous) -> LoginOut:
    """Sign in: a bearer token for the user's role, valid ``api_login_hours``."""
    ctx = context_of(request)
    client = request.client.host if request.client else "unknown"
    keys = [f"name:{body.name.casefold()}", f"client:{client}"]
    # Counted before anything is checked: concurrent guesses are admitted one at a time.
    wait = await ctx.logins.reserve(keys)
    if wait is not None:
        seconds = max(1, math.ceil(wait))
        raise ApiError(
            429,
            "too many sign-in attempts: try again later",
            details={"retry_after": seconds},
            headers={"Retry-After": str(seconds)},
        )
    user = await ctx.read(ctx.sql_store.accounts.find_user, body.name)
    hashed = user.password_hash if user is not None else None
    # argon2 takes tens of milliseconds of CPU: off the event loop.
    matches = await asyncio.to_thread(verify_password, hashed, body.password)
    if user is None or not matches or not user.enabled:
        raise ApiError(
            401, "the user name or password is wrong", headers={"WWW-Authenticate": "Bearer"}
        )
    await ctx.logins.release(keys)
    hours = ctx.settings.login_hours
    token = create_token(
        ctx.jwt_secret, Role(user.role), subject=user.name, days=hours / 24, user=user.name
    )
    return LoginOut(token=token, expires_in=int(hours * 3600), user=user.name, role=user.role)
