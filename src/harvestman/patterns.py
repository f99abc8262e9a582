"""User-supplied URL patterns (scope include/exclude), matched in linear time.

Python's ``re`` backtracks: a pattern such as ``(.*.*)*X`` against a long URL takes time
exponential in its length, so one pattern from an API user could hold a core forever. Patterns
that come from users are compiled with RE2 (``google-re2``), whose matching is linear in the
input whatever the pattern. RE2 has no backreferences or lookaround; a pattern that needs them
is refused with :class:`~harvestman.errors.PatternError`, as is one longer than the limit
(``pattern_max_length``, 1000 characters by default).

>>> compile_pattern(r"/private/").search("https://example.org/private/x") is not None
True
>>> compile_pattern(r"(a)\\1")
Traceback (most recent call last):
...
harvestman.errors.PatternError: invalid pattern '(a)\\\\1': invalid escape sequence: \\1
"""

from __future__ import annotations

from typing import Protocol

import re2

from harvestman.errors import PatternError

__all__ = ["DEFAULT_MAX_LENGTH", "UrlPattern", "compile_pattern"]

DEFAULT_MAX_LENGTH = 1000

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the error is raised to the caller; RE2 would also print it


class UrlPattern(Protocol):
    """What a compiled pattern offers: ``search`` anywhere in the URL, like ``re``."""

    pattern: str

    def search(self, text: str) -> object | None: ...


def compile_pattern(pattern: str, max_length: int = DEFAULT_MAX_LENGTH) -> UrlPattern:
    """Compile a user's regex with RE2; PatternError when too long or not RE2 syntax."""
    if len(pattern) > max_length:
        raise PatternError(
            pattern, f"{len(pattern)} characters, longer than the limit ({max_length})"
        )
    try:
        compiled: UrlPattern = re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise PatternError(pattern, str(detail)) from None
    return compiled
