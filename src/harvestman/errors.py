"""Every failure Harvestman raises or records, in one hierarchy.

Third-party errors (aiohttp, asyncio, SQLAlchemy) are translated into these at the boundary
where they occur, so a recorded failure always carries one of these stable class names
(``error_class`` in the store is ``type(exc).__name__``) and the ``category`` its class names
(``error_logs.category``; the category is in brackets)::

    HarvestmanError                                                               [parse]
    ├── ConfigError                  a setting is missing or invalid (CLI exits with status 2)
    │   ├── PatternError             a user URL pattern re2 cannot compile, or one too long
    │   └── CredentialsError         a stored proxy password does not open with the key
    ├── UrlError                     a URL is dropped; ``reason`` says why
    ├── FetchError                   a fetch did not produce a usable response
    │   ├── NetworkError             connection refused/reset, DNS failure, TLS      [network]
    │   │   └── FetchTimeout         the request exceeded its timeout                [network]
    │   ├── TooManyRedirects         more hops than ``max_redirects``                   [http]
    │   ├── RedirectLoop             a hop returned to a URL already in the chain       [http]
    │   ├── RedirectRefused          a hop left the scope or is denied by robots.txt    [http]
    │   ├── AddressRefused           the network guard refused the address              [http]
    │   ├── BodyTooLarge             the decompressed body passed ``max_page_size``     [http]
    │   ├── ContentDecodingError     a corrupt gzip/deflate/brotli stream            [network]
    │   └── HttpStatusError          a final response with a 4xx/5xx status             [http]
    ├── RobotsDenied                 robots.txt disallows the URL (a policy, not logged)[robots]
    ├── RobotsUnavailable            robots.txt could not be read, so nothing is allowed
    │                                                                             [validation]
    ├── HostUnavailable              the host's breaker stayed open past the give-up time;
    │                                its pending URLs were given up                  [network]
    ├── ContentRejected              validation judged the page garbage         [validation]
    ├── ListingInvalid               a sitemap or feed yielded nothing usable          [parse]
    ├── ImageRejected                a product image not kept: not an image, undecodable,
    │                                too many pixels; ``reason`` says which      [validation]
    ├── QueryError                   a search query finds nothing by its form; ``reason`` says why
    ├── UnstorableValue              a value its column cannot hold was cleaned  [validation]
    └── StoreError                   the store failed or is unusable                 [storage]
        ├── StoreRejected            the store refused one record; it was dead-lettered
        ├── StoreUnavailable         the store stays unusable; the process should exit
        ├── SchemaOutdated           the database schema is behind the code
        ├── BackupFailed             a backup could not be written or failed its verification
        ├── RestoreRefused           a restore would overwrite a store that exists or is in use
        └── ArchiveError             (archive.raw) a raw body could not be kept or read

Any other class (an internal error: a bug, recorded with its stack trace) is ``parse``.
"""

from __future__ import annotations


class HarvestmanError(Exception):
    """Base of every error Harvestman raises on purpose.

    ``category`` names the ``error_logs`` category of a recorded failure of this class.
    """

    category = "parse"


class ConfigError(HarvestmanError):
    """A setting is missing or invalid."""


class PatternError(ConfigError, ValueError):
    """A user-supplied URL pattern is refused: too long, or not a regex RE2 compiles.

    ``reason`` says why (RE2's message, or the length limit)."""

    def __init__(self, pattern: str, reason: str, what: str = "pattern") -> None:
        self.pattern = pattern
        self.reason = reason
        super().__init__(f"invalid {what} {pattern[:200]!r}: {reason}")


class CredentialsError(ConfigError):
    """A stored proxy password cannot be decrypted with the key given (another key made it,
    or it was altered): ``proxy_key`` is wrong, or ``rotate-key --old`` is not the old key."""


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

    ``retryable`` tells the crawler whether another attempt may succeed.
    """

    retryable = False

    def __init__(self, message: str, url: str = "") -> None:
        self.url = url
        super().__init__(message)


class NetworkError(FetchError):
    category = "network"
    retryable = True


class FetchTimeout(NetworkError):
    pass


class TooManyRedirects(FetchError):
    category = "http"


class RedirectLoop(FetchError):
    category = "http"


class RedirectRefused(FetchError):
    """A redirect hop was refused; ``reason``: ``"out_of_scope"``, ``"robots"`` or a URL reason."""

    category = "http"

    def __init__(self, message: str, url: str = "", reason: str = "") -> None:
        self.reason = reason
        super().__init__(message, url)


class AddressRefused(FetchError):
    """The network guard (:mod:`harvestman.guard`) refused every address of ``host``: private,
    loopback, link-local or reserved, and neither in the allow-list nor an admitted origin.
    ``reason`` is the refusal alone, without the message's hint of the setting."""

    category = "http"

    def __init__(self, message: str, url: str = "", host: str = "", reason: str = "") -> None:
        self.host = host
        self.reason = reason or message
        super().__init__(message, url)


class BodyTooLarge(FetchError):
    category = "http"


class ContentDecodingError(FetchError):
    category = "network"


class HttpStatusError(FetchError):
    """A final response whose status is an error; 5xx and 429 are retryable."""

    category = "http"

    def __init__(self, status: int, url: str = "", retry_after: float | None = None) -> None:
        self.status = status
        self.retry_after = retry_after
        super().__init__(f"HTTP {status}", url)

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        return self.status == 429 or self.status >= 500


class RobotsDenied(HarvestmanError):
    """robots.txt disallows the URL: the row is blocked (a policy, never an ``error_logs`` row)."""

    category = "robots"

    def __init__(self, message: str = "disallowed by robots.txt") -> None:
        super().__init__(message)


class RobotsUnavailable(HarvestmanError):
    """robots.txt could not be read (after its retries): everything on the host is blocked."""

    category = "validation"

    def __init__(self, error: str) -> None:
        super().__init__(f"robots.txt unavailable: {error}")


class HostUnavailable(HarvestmanError):
    """A host kept failing: its circuit breaker stayed open (probes failing) for ``seconds``,
    past ``breaker_give_up_seconds``, so its URLs were failed for good instead of waiting on.

    Not a ``FetchError``: no fetch was tried for the URL it is recorded for.
    """

    category = "network"

    def __init__(self, host: str, seconds: float) -> None:
        self.host = host
        self.seconds = seconds
        super().__init__(f"{host} unavailable: failing for {seconds:.0f} s, given up")


class ContentRejected(HarvestmanError):
    """Validation judged a page garbage: ``status`` (``soft``/``hard``) and ``reason``
    (``too_small``, ``needs_js``, ...) as :class:`harvestman.validate.Verdict` says."""

    category = "validation"

    def __init__(self, status: str, reason: str, detail: str | None = None) -> None:
        self.status = status
        self.reason = reason
        super().__init__(f"{status}: {reason}" + (f" ({detail})" if detail else ""))


class ListingInvalid(HarvestmanError):
    """A sitemap or feed that yielded no URL, only errors (or is not one at all)."""


class ImageRejected(HarvestmanError):
    """A product image was fetched but not kept; ``reason``: ``not_image`` (its type is not
    image/*), ``undecodable`` (truncated or corrupt), ``too_many_pixels`` (past
    ``image_max_pixels``). Too large a body is ``BodyTooLarge``, a 404 ``HttpStatusError``."""

    category = "validation"

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        super().__init__(f"{reason}: {detail}" if detail else reason)


class QueryError(HarvestmanError, ValueError):
    """A search query that cannot find anything as written (no word to look for, too long);
    ``reason`` is the sentence to show the user."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class StoreError(HarvestmanError):
    category = "storage"


STALL_EXIT_CODE = 75
"""Exit status when the store stays unusable (EX_TEMPFAIL): a supervisor should restart us."""


class StoreUnavailable(StoreError):
    """The store failed its check and a reconnect did not help; the process should exit."""


class SchemaOutdated(StoreError):
    pass


class BackupFailed(StoreError):
    """A backup could not be written (``pg_dump`` failed, the disk is full) or its copy, restored
    into a scratch database, did not hold the rows of the store it was taken from."""


class RestoreRefused(StoreError):
    """A restore would overwrite a store that exists (without ``force``), that another process
    has open, or that live workers are using."""


class StoreRejected(StoreError):
    """The store refused a record for a reason no retry helps (a broken constraint, a value it
    cannot hold). Never raised out of a batch write: the record's URL is dead-lettered with this
    class and the database's message, and the rest of the batch is written."""


class UnstorableValue(HarvestmanError, ValueError):
    """A value its column cannot hold: out of the column's range, longer than it, holding NUL.
    Recorded, not raised: the value is cleared, cut or cleaned before the write."""

    category = "validation"


def error_category(error_class: str) -> str:
    """The ``error_logs`` category of a recorded ``error_class`` name: its class's ``category``
    (network | http | validation | storage | parse; a name of no class here: parse).

    >>> error_category("FetchTimeout"), error_category("ContentRejected"), error_category("X")
    ('network', 'validation', 'parse')
    """
    category = _CATEGORY_OF.get(error_class)
    if category is None:  # a class defined since (ArchiveError), or an internal error
        _CATEGORY_OF.update(_categories(HarvestmanError))
        category = _CATEGORY_OF.setdefault(error_class, HarvestmanError.category)
    return category


def _categories(cls: type[HarvestmanError]) -> dict[str, str]:
    found = {cls.__name__: cls.category}
    for sub in cls.__subclasses__():
        found.update(_categories(sub))
    return found


_CATEGORY_OF: dict[str, str] = _categories(HarvestmanError)
