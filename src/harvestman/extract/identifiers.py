"""Product identifiers: GS1 trade item numbers (GTIN-8, -12, -13, -14), checked.

A page writes a GTIN under ``gtin``, ``gtin8``, ``gtin12`` (UPC-A), ``gtin13`` (EAN, ISBN-13)
or ``gtin14``, with spaces or hyphens ("978-0-306-40615-7"), or as a GS1 Digital Link URL
(``https://id.gs1.org/01/09506000134352``). It is kept as its digits, as long as they are
(8, 12, 13 or 14), when its last digit is the GS1 check digit of the others.

>>> read_gtin("978-0-306-40615-7")
('9780306406157', None)
>>> read_gtin("9780306406158")
(None, "'9780306406158' skipped: check digit 8, expected 7")
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["GTIN_KEYS", "check_digit", "read_gtin"]

GTIN_KEYS: Final = ("gtin", "gtin13", "gtin14", "gtin12", "gtin8")
_LENGTHS: Final = frozenset({8, 12, 13, 14})
_GS1_LINK: Final = re.compile(r"/01/(\d{14})(?!\d)")
_SEPARATORS: Final = re.compile(r"[\s\-‐‑]")


def check_digit(digits: str) -> int:
    """The GS1 check digit of ``digits`` (the number without it): from the right, weights
    3, 1, 3, ...; the digit that brings the sum to a multiple of 10.

    >>> check_digit("400638133393")
    1
    """
    total = sum(int(d) * (3 if i % 2 == 0 else 1) for i, d in enumerate(reversed(digits)))
    return -total % 10


def read_gtin(text: str) -> tuple[str | None, str | None]:
    """``(digits, reason)``: the GTIN ``text`` holds, or ``None`` and why it was skipped."""
    link = _GS1_LINK.search(text)
    digits = link.group(1) if link else _SEPARATORS.sub("", text)
    shown = repr(text[:40])
    if not (digits.isascii() and digits.isdigit()) or len(digits) not in _LENGTHS:
        return None, f"{shown} skipped: not 8, 12, 13 or 14 digits"
    expected = check_digit(digits[:-1])
    if int(digits[-1]) != expected:
        return None, f"{shown} skipped: check digit {digits[-1]}, expected {expected}"
    return digits, None
