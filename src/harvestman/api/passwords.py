"""Password hashes of the users who sign in: argon2id (``argon2-cffi``'s defaults, RFC 9106's
second recommended profile: 64 MiB, 3 passes), as PHC strings the store keeps.

>>> hashed = hash_password("correct horse battery staple")
>>> hashed.startswith("$argon2id$")
True
>>> verify_password(hashed, "correct horse battery staple"), verify_password(hashed, "wrong")
(True, False)
"""

from __future__ import annotations

import functools

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 200

_hasher = PasswordHasher()


@functools.cache
def _unknown() -> str:
    """Verified when the user is unknown, so a wrong name takes as long as a wrong password
    (made on first use: a hash takes 64 MiB and tens of milliseconds)."""
    return _hasher.hash("no user has this password")


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(hashed: str | None, password: str) -> bool:
    """Whether ``password`` matches ``hashed`` (None: an unknown user, never a match)."""
    try:
        return _hasher.verify(hashed or _unknown(), password) and hashed is not None
    except (VerificationError, InvalidHashError):
        return False


def password_problem(password: str) -> str | None:
    """Why a new password is refused, or None."""
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"a password needs at least {MIN_PASSWORD_LENGTH} characters"
    if len(password) > MAX_PASSWORD_LENGTH:
        return f"a password has at most {MAX_PASSWORD_LENGTH} characters"
    if len(set(password)) < 4:
        return "a password needs more than three different characters"
    return None
