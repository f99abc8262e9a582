"""The API's checks of what a user submits for the crawler, shaped as 422 errors.

A URL is normalized with the crawler's own :class:`~harvestman.urls.UrlNormalizer` first and
the result is checked, so the API checks the URL the crawler will fetch: percent-encoded hosts
(``http://%31%32%37.0.0.1/``) and backslash authorities (``http://127.0.0.1\\@a.example/``)
are decoded before the check, not after it. The check itself is the crawl's network guard
(:class:`harvestman.guard.NetworkGuard`, one allow-list: ``network_allow``): a URL whose host
is, or resolves to, an address the guard refuses is a 422; a host that does not resolve is
accepted (the crawl records the failure, and the fetcher's guard checks again at connection
time, which is what stops a name re-pointed after submission).

A refusal names the field (``start_urls.3``) and the reason, not the value sent. Scope rules
get the same treatment: an ``allow_domains`` entry that is not a host, or is a
private one outside the allow-list, is a 422, and so is an include/exclude pattern RE2 cannot
compile or one longer than ``pattern_max_length``.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from harvestman.api.errors import ApiError
from harvestman.errors import AddressRefused, ConfigError, PatternError, UrlError
from harvestman.guard import NetworkGuard, allow_entry, resolve_addresses
from harvestman.patterns import compile_pattern
from harvestman.urls import Scope, UrlNormalizer, refusal


class UrlGuard:
    """Refuses URLs and scope rules that would make the service reach private networks."""

    def __init__(
        self,
        guard: NetworkGuard,
        normalizer: UrlNormalizer,  # UrlNormalizer.from_settings: URLs hash as the crawl's do
        pattern_max_length: int = 1000,
    ) -> None:
        self.guard = guard
        self.normalizer = normalizer
        self.pattern_max_length = pattern_max_length

    async def check(self, url: str, field: str = "url") -> str:
        """The normalized ``url``; ApiError 422 when it is not crawlable http(s) or reaches a
        refused address."""
        try:
            normalized = self.normalizer.normalize(url)
        except UrlError as exc:
            raise _refused(field, f"not a crawlable URL ({refusal(exc)})") from None
        if not normalized.startswith(("http://", "https://")):
            raise _refused(field, "only http and https URLs with a host are accepted")
        try:
            await self.guard.check_url(normalized)
        except AddressRefused as exc:
            raise _address_refused(field, normalized, exc) from None
        return normalized

    async def check_all(self, urls: Iterable[str], field: str = "urls") -> list[str]:
        return [await self.check(url, f"{field}.{n}") for n, url in enumerate(urls)]

    async def check_scope(
        self,
        allow_domains: Iterable[str],
        include: Iterable[str],
        exclude: Iterable[str],
        field: str = "scope",
    ) -> None:
        """ApiError 422 for an invalid or private allowed domain, or a refused pattern."""
        for n, domain in enumerate(allow_domains):
            await self._check_domain(domain, f"{field}.allow_domains.{n}")
        for name, patterns in (("include", include), ("exclude", exclude)):
            for n, pattern in enumerate(patterns):
                try:
                    compile_pattern(pattern, self.pattern_max_length)
                except PatternError as exc:
                    where = f"{field}.{name}.{n}"
                    # RE2 quotes the offending part after a colon: the kind of error is kept.
                    reason = exc.reason.partition(": ")[0]
                    raise ApiError(
                        422,
                        f"{where}: pattern refused: {reason}",
                        code="pattern_refused",
                        details={"field": where, "reason": reason},
                    ) from None

    async def _check_domain(self, domain: str, field: str) -> None:
        try:
            key = Scope.domain_key(domain)
        except ConfigError:
            raise ApiError(
                422,
                f"{field}: domain refused: not a host name",
                code="domain_refused",
                details={"field": field, "reason": "invalid"},
            ) from None
        host, port = _split_key(key)
        if self.guard.is_allowed_host(host):
            return
        for address in await resolve_addresses(host):
            if not self.guard.is_allowed(address, port):
                reason = f"{host} is a non-public address ({address}) outside the allow-list"
                raise ApiError(
                    422,
                    f"{field}: domain refused: {reason}",
                    code="domain_refused",
                    details={"field": field, "reason": reason},
                )


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _split_key(key: str) -> tuple[str, int]:
    """``host[:port]`` -> (host, port); an entry without a port counts as port 80.

    >>> _split_key("[::1]:8080"), _split_key("example.org")
    (('::1', 8080), ('example.org', 80))
    """
    host, sep, port = key.rpartition(":")
    if sep and "]" not in port and port.isdigit():
        return host.strip("[]"), int(port)
    return key.strip("[]"), 80


def how_to_allow(entry: str) -> str:
    """What an operator does to admit a private address: the setting, in each of its forms.

    >>> how_to_allow("127.0.0.1:19200")  # doctest: +NORMALIZE_WHITESPACE
    'To crawl it, add "127.0.0.1:19200" to the setting network_allow and restart serve:
    HARVESTMAN_NETWORK_ALLOW=127.0.0.1:19200 in its environment, or network_allow =
    ["127.0.0.1:19200"] in its config file (a CIDR such as 127.0.0.0/8 admits a whole network).'
    """
    return (
        f'To crawl it, add "{entry}" to the setting network_allow and restart serve: '
        f"HARVESTMAN_NETWORK_ALLOW={entry} in its environment, or "
        f'network_allow = ["{entry}"] in its config file '
        "(a CIDR such as 127.0.0.0/8 admits a whole network)."
    )


def _address_refused(field: str, normalized: str, exc: AddressRefused) -> ApiError:
    """One message: which URL (the field, ``start_urls.3``: the input is never repeated), why
    (the guard's reason names the address), and the setting that admits it (``how_to_allow``);
    ``details`` has each part for a client (``allow``: the entry)."""
    parts = urlsplit(normalized)
    host = parts.hostname or exc.host
    entry = allow_entry(
        f"[{host}]" if ":" in host else host, parts.port or _DEFAULT_PORTS[parts.scheme]
    )
    reason = exc.reason  # without the guard's hint: the setting is named once, below
    return ApiError(
        422,
        f"{field}: URL refused: {reason}. {how_to_allow(entry)}",
        code="url_refused",
        details={
            "field": field,
            "reason": reason,
            "setting": "network_allow",
            "allow": entry,
        },
    )


def _refused(field: str, reason: str) -> ApiError:
    # The field names which URL (``start_urls.3``); the URL itself is not repeated.
    return ApiError(
        422,
        f"{field}: URL refused: {reason}",
        code="url_refused",
        details={"field": field, "reason": reason},
    )
