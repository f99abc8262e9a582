"""Whether a JWT signing secret can be guessed: the rules ``serve`` applies before it starts.

HS256 tokens are as strong as their secret: anyone who guesses it forges an admin token. The
character-frequency estimate used before passed ``0123456789abcdef0123456789abcdef``, the
alphabet, keyboard walks and jwt.io's ``your-256-bit-secret``. Now a secret is measured by
zxcvbn (Dropbox's estimator: dictionaries, sequences, keyboard walks, repeats, dates), and
refused, naming the rule, when

- it is a published default, or contains a published example secret;
- it is shorter than 32 characters (RFC 7518: an HS256 key as long as the hash) or has fewer
  than 10 different characters;
- a block of ``MIN_REPEATED_BLOCK`` characters or more appears twice;
- half of it or more is a sequence (``abc…``, ``012…``), a keyboard walk or a repeat;
- zxcvbn estimates fewer than 10^``MIN_GUESSES_LOG10`` guesses for it.

32 random hex digits score ~10^29-10^31 guesses (300 drawn: none below 10^28.9, no pattern
covering more than a quarter); ``openssl rand -hex 32`` more.

>>> secret_problem("0123456789abcdef0123456789abcdef")
'a repeated block (0123456789abcdef)'
>>> secret_problem("9f86d081884c7d659a2feaa0c55ad015") is None
True
"""

from __future__ import annotations

from harvestman.api.settings import DEFAULT_SECRETS, DEV_SECRET

MIN_SECRET_LENGTH = 32
MIN_SECRET_DISTINCT = 10
MIN_REPEATED_BLOCK = 6
MIN_GUESSES_LOG10 = 24.0  # ~80 bits
MAX_MEASURED = 100  # zxcvbn's matching grows with the square of the length: the head is enough

# Example secrets from documentation and tutorials, found in deployed services: contained
# anywhere, they make a secret guessable whatever surrounds them.
PUBLISHED_EXAMPLES = (
    "your-256-bit-secret",
    "your-384-bit-secret",
    "your-512-bit-secret",
    "your_jwt_secret",
    "your-secret-key",
    "your_secret_key",
    "secretkey",
    "supersecret",
    "super-secret",
    "mysecret",
    "my-secret",
    "changeme",
    "change-me",
    "change_me",
    "changethis",
    "dev-secret",
    "harvestman-dev-secret",
)

_RULES = {
    "sequence": "a sequence",
    "spatial": "a keyboard walk",
    "repeat": "a repeated block",
}


def secret_problem(secret: str) -> str | None:
    """Why ``secret`` cannot sign tokens (the rule that refused it), or None."""
    if secret in DEFAULT_SECRETS or secret == DEV_SECRET:
        return "a published default"
    if len(secret) < MIN_SECRET_LENGTH:
        return f"shorter than {MIN_SECRET_LENGTH} characters"
    distinct = len(set(secret))
    if distinct < MIN_SECRET_DISTINCT:
        return f"only {distinct} different characters (at least {MIN_SECRET_DISTINCT})"
    folded = secret.casefold()
    for example in PUBLISHED_EXAMPLES:
        if example in folded:
            return f"contains a published example ({example})"
    block = _repeated_block(secret)
    if block is not None:
        return f"a repeated block ({block})"
    return _measured_problem(secret[:MAX_MEASURED])


def _repeated_block(secret: str) -> str | None:
    """The longest block of at least ``MIN_REPEATED_BLOCK`` characters seen twice, or None.

    >>> _repeated_block("harvestman-secret-harvestman-key!")
    'harvestman-'
    """
    longest = None
    size = MIN_REPEATED_BLOCK
    for start in range(len(secret) - size + 1):
        end = start + size
        if end > len(secret):
            break
        if secret.find(secret[start:end], start + 1) == -1:
            continue
        while end < len(secret) and secret.find(secret[start : end + 1], start + 1) != -1:
            end += 1
        longest = secret[start:end]
        size = len(longest) + 1
    return longest


def _measured_problem(secret: str) -> str | None:
    from zxcvbn import zxcvbn

    result = zxcvbn(secret)
    covered: dict[str, int] = {}
    for match in result["sequence"]:
        kind = match["pattern"]
        if kind in _RULES:
            covered[kind] = covered.get(kind, 0) + len(match["token"])
    for pattern, count in covered.items():
        if 2 * count >= len(secret):
            return f"{_RULES[pattern]} ({count} of its {len(secret)} characters)"
    guesses = float(result["guesses_log10"])
    if guesses < MIN_GUESSES_LOG10:
        return (
            f"guessable: zxcvbn estimates 10^{guesses:.0f} guesses "
            f"(at least 10^{MIN_GUESSES_LOG10:.0f})"
        )
    return None
