"""Cookies across restarts: an aiohttp ``CookieJar`` to plain rows and back.

The crawler keeps one jar per crawl, hands it to the fetcher, and stores the rows of
:func:`dump_cookies` per host (``row["domain"]``); on the next start it feeds them to
:func:`load_cookies` on a fresh jar. Rows are JSON-ready dicts::

    {"domain": "example.org", "path": "/", "name": "sid", "value": "abc",
     "coded_value": "abc", "expires": 1767225600.0, "secure": False, "http_only": True,
     "same_site": "Lax", "host_only": True}

``expires`` is an absolute UNIX time, None for a session cookie (kept: a crawl's "session"
outlives a process). ``host_only`` marks a cookie set without a Domain attribute, which must
not reach subdomains. A jar keeps no cookies of an IP-address host unless it was created with
``CookieJar(unsafe=True)``; that rule applies to loaded rows too.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from email.utils import formatdate
from http.cookies import CookieError, Morsel, SimpleCookie
from typing import Any

import aiohttp
from aiohttp.abc import AbstractCookieJar
from yarl import URL

__all__ = ["dump_cookies", "load_cookies"]


def dump_cookies(jar: aiohttp.CookieJar) -> list[dict[str, Any]]:
    """Every unexpired cookie in ``jar`` as a row (see the module docstring), sorted by
    (domain, path, name)."""
    # The absolute deadline and the host-only flag exist only inside the jar (a Max-Age cookie
    # keeps its relative "max-age" attribute); aiohttp's own CookieJar.save reads them there too.
    expirations: Mapping[tuple[str, ...], float] = getattr(jar, "_expirations", {})
    host_only: Iterable[tuple[str, ...]] = getattr(jar, "_host_only_cookies", ())
    host_only_keys = set(host_only)
    rows: list[dict[str, Any]] = []
    for morsel in jar:  # iterating drops expired cookies first
        domain = morsel["domain"]
        name = morsel.key
        # aiohttp keys a cookie by (domain, path without its trailing slash, name); older
        # releases keyed host-only cookies by (domain, name).
        key = (domain, morsel["path"].rstrip("/"), name)
        deadline = expirations.get(key)
        rows.append(
            {
                "domain": domain,
                "path": morsel["path"] or "/",
                "name": name,
                "value": morsel.value,
                "coded_value": morsel.coded_value,
                "expires": float(deadline) if deadline is not None else None,
                "secure": bool(morsel["secure"]),
                "http_only": bool(morsel["httponly"]),
                "same_site": morsel["samesite"] or None,
                "host_only": key in host_only_keys or (domain, name) in host_only_keys,
            }
        )
    rows.sort(key=lambda row: (row["domain"], row["path"], row["name"]))
    return rows


def load_cookies(
    jar: AbstractCookieJar, rows: Iterable[Mapping[str, Any]], *, now: float | None = None
) -> int:
    """Put rows from :func:`dump_cookies` into ``jar``; return how many of them it now holds.

    Rows already expired at ``now`` (UNIX seconds, default the current time) are skipped, and
    so is a malformed row (a missing field, an illegal cookie name): one bad row must not lose
    the others. The jar applies its usual rules (an IP-address host needs ``unsafe=True``).
    """
    if now is None:
        now = time.time()
    offered: set[tuple[str, str]] = set()
    for row in rows:
        try:
            parsed = _to_cookie(row, now)
        except (KeyError, TypeError, ValueError, CookieError):
            continue
        if parsed is not None:
            cookie, origin = parsed
            jar.update_cookies(cookie, origin)
            offered.update((origin.host or "", name) for name in cookie)
    held = {(morsel["domain"], morsel.key) for morsel in jar}
    return len(offered & held)


def _to_cookie(row: Mapping[str, Any], now: float) -> tuple[SimpleCookie, URL] | None:
    domain = str(row["domain"])
    expires = row.get("expires")
    if expires is not None and float(expires) <= now:
        return None
    morsel: Morsel[str] = Morsel()
    name = str(row["name"])
    value = str(row["value"])
    morsel.set(name, value, str(row.get("coded_value") or value))
    morsel["path"] = str(row.get("path") or "/")
    if not row.get("host_only"):
        morsel["domain"] = domain
    if expires is not None:
        morsel["expires"] = formatdate(float(expires), usegmt=True)
    if row.get("secure"):
        morsel["secure"] = True
    if row.get("http_only"):
        morsel["httponly"] = True
    if row.get("same_site"):
        morsel["samesite"] = str(row["same_site"])
    cookie: SimpleCookie = SimpleCookie()
    cookie[name] = morsel
    return cookie, URL.build(scheme="https" if row.get("secure") else "http", host=domain)
