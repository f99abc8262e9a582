"""Every failure Harvestman raises or records, in one hierarchy.

Third-party errors (aiohttp, asyncio, SQLAlchemy) are translated into these at the boundary
where they occur, so a recorded failure always carries one of these stable class names
(``error_class`` in the store is ``type(exc).__name__``)::

    HarvestmanError
    ├── ConfigError                  a setting is missing or invalid (CLI exits with status 2)
    │   └── PatternError             a user URL pattern re2 cannot compile, or one too long
    ├── UrlError                     a URL is dropped; ``reason`` says why
    ├── FetchError                   a fetch did not produce a usable response
    │   ├── NetworkError             connection refused/reset, DNS failure, TLS failure
    │   │   └── FetchTimeout         the request exceeded its timeout
    │   ├── TooManyRedirects         more hops than ``max_redirects``
    │   ├── RedirectLoop             a hop returned to a URL already in the chain
    │   ├── RedirectRefused          a hop left the scope or is denied by robots.txt
    │   ├── AddressRefused           the network guard refused the address (private, not admitted)
    │   ├── BodyTooLarge             the decompressed body passed ``max_page_size``
    │   ├── ContentDecodingError     a corrupt gzip/deflate/brotli stream
    │   └── HttpStatusError          a final response with a 4xx/5xx status
    ├── RobotsDenied                 robots.txt disallows the URL
    ├── QueryError                   a search query finds nothing by its form; ``reason`` says why
    ├── UnstorableValue              a value its column cannot hold was cleared, cut or cleaned
    └── StoreError                   the store failed or is unusable
        ├── StoreRejected            the store refused one record; it was dead-lettered
        └── SchemaOutdated           the database schema is behind the code
"""

from __future__ import annotations


class HarvestmanError(Exception):
    """Base of every error Harvestman raises on purpose."""


class ConfigError(HarvestmanError):
    """A setting is missing or invalid."""


class PatternError(ConfigError, ValueError):
    """A user-supplied URL pattern is refused: too long, or not a regex RE2 compiles.

    ``reason`` says why (RE2's message, or the length limit)."""

    def __init__(self, pattern: str, reason: str, what: str = "pattern") -> None:
        self.pattern = pattern
        self.reason = reason
        super().__init__(f"invalid {what} {pattern[:200]!r}: {reason}")


class UrlError(HarvestmanError, ValueError):
    """A URL cannot be crawled.

    ``reason`` is a short stable token recorded with the dropped URL, e.g. ``"scheme"``,
    ``"too_long"``, ``"unparsable"``, ``"no_host"``.
    """

    def __init__(self, reason: str, url: str = "", detail: str = "") -> None:
        self.reason = reason
        self.url = url
        self.detail = detail
        message = f"{reason}: {url[:200]!r}"
        if detail:
            message += f" ({detail})"
        super().__init__(message)


class FetchError(HarvestmanError):
    """A fetch did not produce a usable response.

    ``retryable`` tells the engine whether another attempt may succeed.
    """

    retryable = False

    def __init__(self, message: str, url: str = "") -> None:
        self.url = url
        super().__init__(message)


class NetworkError(FetchError):
    retryable = True


class FetchTimeout(NetworkError):
    pass


class TooManyRedirects(FetchError):
    pass


class RedirectLoop(FetchError):
    pass


class RedirectRefused(FetchError):
    """A redirect hop was refused; ``reason``: ``"out_of_scope"``, ``"robots"`` or a URL reason."""

    def __init__(self, message: str, url: str = "", reason: str = "") -> None:
        self.reason = reason
        super().__init__(message, url)


class AddressRefused(FetchError):
    """The network guard (:mod:`harvestman.guard`) refused every address of ``host``: private,
    loopback, link-local or reserved, and neither in the allow-list nor an admitted origin."""

    def __init__(self, message: str, url: str = "", host: str = "") -> None:
        self.host = host
        super().__init__(message, url)


class BodyTooLarge(FetchError):
    pass


class ContentDecodingError(FetchError):
    pass


class HttpStatusError(FetchError):
    """A final response whose status is an error; 5xx and 429 are retryable."""

    def __init__(self, status: int, url: str = "", retry_after: float | None = None) -> None:
        self.status = status
        self.retry_after = retry_after
        super().__init__(f"HTTP {status}", url)

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        return self.status == 429 or self.status >= 500


class RobotsDenied(HarvestmanError):
    pass


class QueryError(HarvestmanError, ValueError):
    """A search query that cannot find anything as written (no word to look for, too long);
    ``reason`` is the sentence to show the user."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class StoreError(HarvestmanError):
    pass


STALL_EXIT_CODE = 75
"""Exit status when the store stays unusable (EX_TEMPFAIL): a supervisor should restart us."""


class StoreUnavailable(StoreError):
    """The store failed its check and a reconnect did not help; the process should exit."""


class SchemaOutdated(StoreError):
    pass


class StoreRejected(StoreError):
    """The store refused a record for a reason no retry helps (a broken constraint, a value it
    cannot hold). Never raised out of a batch write: the record's URL is dead-lettered with this
    class and the database's message, and the rest of the batch is written."""


class UnstorableValue(HarvestmanError, ValueError):
    """A value its column cannot hold: out of the column's range, longer than it, holding NUL.
    Recorded, not raised: the value is cleared, cut or cleaned before the write."""


# Each recorded failure belongs to one category of ``error_logs``.
_CATEGORIES = {
    "network": ("NetworkError", "FetchTimeout", "ContentDecodingError"),
    "http": ("HttpStatusError", "TooManyRedirects", "RedirectLoop", "RedirectRefused",
             "BodyTooLarge", "AddressRefused"),
    "validation": ("ContentRejected", "RobotsUnavailable", "UnstorableValue"),
    "storage": ("StoreError", "SchemaOutdated", "StoreUnavailable", "ArchiveError",
                "StoreRejected"),
}  # fmt: skip
_CATEGORY_OF = {name: category for category, names in _CATEGORIES.items() for name in names}


def error_category(error_class: str) -> str:
    """network | http | parse | validation | storage (anything else a page yields: parse)."""
    return _CATEGORY_OF.get(error_class, "parse")
