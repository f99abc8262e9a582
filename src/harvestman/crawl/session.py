"""The crawl's session, kept in the store across restarts: cookies per host, the proxies'
health, and the pagination rules learnt."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import asdict
from typing import Protocol, runtime_checkable

import aiohttp

from harvestman.cookies import dump_cookies, load_cookies
from harvestman.crawl.run import CrawlRun
from harvestman.credentials import ProxyCipher, has_password
from harvestman.errors import ConfigError, CredentialsError, StoreError
from harvestman.proxies import ProxyHealth, ProxyPool, redact_proxy_url

log = logging.getLogger(__name__)

Rules = dict[str, dict[str, dict[str, int | None]]]  # host -> rules learnt (discovery_state)


@runtime_checkable
class RulesSource(Protocol):
    """A component that learns per-host rules the session keeps across restarts
    (pagination): ``changed_rules`` hands over those changed since it was last asked."""

    def changed_rules(self) -> Rules: ...


class Session:
    """Loads the session when the crawl starts and saves it with sweeps and at the end.

    ``cookies``: keep a cookie jar (else none is used); ``proxies``: the pool whose health is
    kept; ``rules``: the components whose learnt rules are saved (pagination). ``cipher``
    encrypts the proxies' passwords before they reach the store (required when one has one).
    """

    def __init__(
        self,
        run: CrawlRun,
        *,
        cookies: bool,
        proxies: ProxyPool | None,
        rules: Sequence[RulesSource] = (),
        cipher: ProxyCipher | None = None,
    ) -> None:
        self.run = run
        self.cipher = cipher
        self.cookies = cookies
        self.proxies = proxies
        self.rules = tuple(rules)
        self.cookie_jar: aiohttp.CookieJar | None = None

    async def load(self) -> aiohttp.CookieJar | None:
        """The crawl's cookie jar and the proxies' health, as the store kept them."""
        store = self.run.store
        if self.proxies is not None:
            fields = {f.name for f in dataclasses.fields(ProxyHealth)}
            saved = []
            for row in await store.sessions.load_proxies():
                url = self._open(row["url"], row.get("secret"))
                if url is not None:
                    values = {k: v for k, v in row.items() if k in fields}
                    saved.append(ProxyHealth(**{**values, "url": url}))
            self.proxies.restore(saved)
        if not self.cookies:
            return None
        jar = aiohttp.CookieJar(unsafe=True)  # unsafe: keep cookies of IP-address hosts too
        load_cookies(jar, await store.sessions.load_cookies(self.run.crawl_id))
        self.cookie_jar = jar
        return jar

    async def save(self) -> None:
        store, clock = self.run.store, self.run.clock
        try:
            for source in self.rules:
                changed = source.changed_rules()
                if changed:
                    await store.hosts.save_discovery_state(clock(), rules=changed)
            if self.cookie_jar is not None:
                await store.sessions.save_cookies(self.run.crawl_id, dump_cookies(self.cookie_jar))
            if self.proxies is not None:
                health = [self._sealed(asdict(h)) for h in self.proxies.health()]
                await store.sessions.save_proxies(health, clock())
        except StoreError as exc:
            log.warning("could not save cookies and proxy health: %s", exc)

    def _sealed(self, row: dict[str, object]) -> dict[str, object]:
        """A health row as the store keeps it: the URL masked, the password a token."""
        url = str(row["url"])
        if self.cipher is None:
            # Settings refuse a password without proxy_key; never store one in clear anyway.
            if has_password(url):
                raise ConfigError(f"proxy {redact_proxy_url(url)} has a password: set proxy_key")
            return {**row, "secret": None}
        masked, secret = self.cipher.seal(url)
        return {**row, "url": masked, "secret": secret}

    def _open(self, masked: str, secret: str | None) -> str | None:
        """The stored proxy's URL; None (its health forgotten) when the key cannot open it."""
        if secret is None:
            return masked
        if self.cipher is None:
            return None
        try:
            return self.cipher.open(masked, secret)
        except CredentialsError as exc:
            log.warning("proxy %s: health not restored: %s", masked, exc)
            return None
