"""Proxy passwords encrypted at rest: Fernet (AES-128-CBC + HMAC-SHA256) under ``proxy_key``.

The store never holds a proxy's password in clear: ``proxies.url`` is the URL with the password
masked (``user:***@host``, what logs, stats, exports and the API show) and ``proxies.secret``
the password as a Fernet token. :class:`ProxyCipher` splits a proxy URL into those two and
joins them back; ``harvestman admin rotate-key`` re-encrypts every token under a new key.

>>> cipher = ProxyCipher(ProxyCipher.generate_key())
>>> masked, secret = cipher.seal("http://user:hunter2@proxy:3128")
>>> masked, secret is not None and "hunter2" not in secret
('http://user:***@proxy:3128', True)
>>> cipher.open(masked, secret)
'http://user:hunter2@proxy:3128'
>>> cipher.seal("http://proxy:3128")
('http://proxy:3128', None)
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from harvestman.errors import ConfigError, CredentialsError
from harvestman.proxies import redact_proxy_url

__all__ = ["ProxyCipher", "has_password", "require_key"]


def has_password(url: str) -> bool:
    """Whether a proxy URL carries a password (``user:password@host``).

    >>> has_password("http://u:p@h:1"), has_password("http://u@h:1"), has_password("http://h:1")
    (True, False, False)
    """
    userinfo, at, _ = urlsplit(url).netloc.rpartition("@")
    return bool(at) and ":" in userinfo


def require_key(proxy_urls: list[str], key: str) -> None:
    """Refuse proxy URLs with passwords when no ``proxy_key`` is set: they would be stored
    in clear. Raises ``ConfigError`` naming the first such proxy (masked)."""
    if key:
        return
    for url in proxy_urls:
        if has_password(url):
            raise ConfigError(
                f"proxy URL {redact_proxy_url(url)!r} carries a password: set proxy_key"
                " (HARVESTMAN_PROXY_KEY, a Fernet key: harvestman admin new-key) so it is"
                " stored encrypted"
            )


class ProxyCipher:
    """Seals a proxy URL into (masked URL, token) and opens it again under one Fernet key.

    Raises ``ConfigError`` for a key that is not a Fernet key, ``CredentialsError`` when a
    token was not made under this key (or was altered).
    """

    def __init__(self, key: str) -> None:
        from cryptography.fernet import Fernet

        try:
            self._fernet = Fernet(key.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            raise ConfigError(
                "proxy_key is not a Fernet key (32 url-safe base64-encoded bytes)"
            ) from None

    @staticmethod
    def generate_key() -> str:
        from cryptography.fernet import Fernet

        return Fernet.generate_key().decode("ascii")

    def encrypt(self, text: str) -> str:
        return self._fernet.encrypt(text.encode("utf-8")).decode("ascii")

    def decrypt(self, token: str) -> str:
        from cryptography.fernet import InvalidToken

        try:
            return self._fernet.decrypt(token.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError):
            raise CredentialsError(
                "a stored proxy password cannot be decrypted with this key"
            ) from None

    def seal(self, url: str) -> tuple[str, str | None]:
        """``url`` with its password masked, and the password encrypted (None: it has none)."""
        if not has_password(url):
            return url, None
        userinfo = urlsplit(url).netloc.rpartition("@")[0]
        return redact_proxy_url(url), self.encrypt(userinfo.split(":", 1)[1])

    def open(self, masked: str, secret: str | None) -> str:
        """The proxy URL ``seal`` made ``(masked, secret)`` of."""
        if secret is None:
            return masked
        parts = urlsplit(masked)
        userinfo, _, hostport = parts.netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        password = self.decrypt(secret)
        return urlunsplit(parts._replace(netloc=f"{user}:{password}@{hostport}"))
