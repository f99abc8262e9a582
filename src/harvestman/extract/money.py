"""Prices, counts and currencies as pages write them, read into ``Decimal``, ``int`` and ISO 4217.

Structured data is meant to carry plain numbers ("19.99") and currency codes ("EUR"), but pages
put display text there too: "$19.99", "1.299,00 €", "1,299.00", "19,99". The separator rules:

- spaces (also no-break and thin spaces) and apostrophes between digit groups group thousands:
  "1 299,00", "1'299.50";
- with both ``.`` and ``,``, the last one is the decimal mark: "1,299.00" and "1.299,00";
- one kind repeated groups thousands: "1,299,000", "12.345.678" (groups of 3, or Indian 2s
  before a last 3: "1,00,000");
- a single ``.`` is a decimal mark ("1.299" is 1.299, as schema.org and OpenGraph define it);
  a single ``,`` followed by exactly three digits groups thousands ("1,299" is 1299), any other
  single ``,`` is a decimal mark ("19,99", "0,500");
- for counts (``integer=True``) separators that group thousands consistently do so whatever
  the mark ("1.234 reviews" is 1234).

>>> parse_price("1.299,00 €")
(Decimal('1299.00'), 'EUR', None)
>>> parse_price("free")
(None, None, "no number in 'free'")
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Final

__all__ = ["ISO_4217", "parse_count", "parse_currency", "parse_number", "parse_price"]

# Active ISO 4217 alphabetic codes (funds and precious metals included; XTS and XXX, "testing"
# and "no currency", left out), plus HRK and SLL, withdrawn recently and still on old pages.
_ISO_4217_CODES: Final = """
AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD
BTN BWP BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD
EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HRK HTG HUF IDR ILS INR IQD
IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA
MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP
PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP
SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST
XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XUA YER ZAR ZMW ZWG ZWL"""
ISO_4217: Final = frozenset(_ISO_4217_CODES.split())
# Only symbols that name one currency: "$", "¥" and "kr" are left out on purpose.
# Longest first, so "US$" is found before "S$" inside it.
_SYMBOLS: Final = dict(
    sorted(
        {
            "€": "EUR",
            "£": "GBP",
            "₹": "INR",
            "₩": "KRW",
            "₽": "RUB",
            "₺": "TRY",
            "₴": "UAH",
            "₪": "ILS",
            "₫": "VND",
            "฿": "THB",
            "₱": "PHP",
            "US$": "USD",
            "CA$": "CAD",
            "C$": "CAD",
            "AU$": "AUD",
            "A$": "AUD",
            "NZ$": "NZD",
            "HK$": "HKD",
            "S$": "SGD",
            "R$": "BRL",
            "zł": "PLN",
        }.items(),
        key=lambda item: -len(item[0]),
    )
)
_GROUP_SPACES: Final = " \u00a0\u202f\u2009'’"
# Digits, then groups joined by "." "," or an apostrophe, or by a space before exactly 3 digits.
_NUMBER: Final = re.compile(r"\d+(?:[.,'’]\d+|[ \u00a0\u202f\u2009]\d{3}(?!\d))*")
_CODE: Final = re.compile(r"(?<![A-Za-z])[A-Z]{3}(?![A-Za-z])")
_MINUS: Final = ("-", "−")


def parse_price(value: object) -> tuple[Decimal | None, str | None, str | None]:
    """``(amount, currency named in the text, reason)`` for a price as a page gives it.

    ``amount`` is ``None`` when the value holds no usable non-negative number; ``reason`` then
    says why. The currency is an ISO 4217 code written in the text ("19.99 USD") or a symbol
    that names one currency ("€", "US$"); ``None`` otherwise.

    >>> parse_price("$1,299.00")
    (Decimal('1299.00'), None, None)
    >>> parse_price(19.9)
    (Decimal('19.9'), None, None)
    """
    amount, reason = parse_number(value)
    return amount, _currency_in(value) if isinstance(value, str) else None, reason


def parse_count(value: object) -> tuple[int | None, str | None]:
    """``(count, reason)`` for a count such as a number of reviews: ``12``, ``"1,234"``."""
    number, reason = parse_number(value, integer=True)
    if number is None:
        return None, reason
    if number != number.to_integral_value():
        return None, f"not a whole number: {value!r}"
    return int(number), None


def parse_number(value: object, *, integer: bool = False) -> tuple[Decimal | None, str | None]:
    """``(number, reason)``: the first non-negative number in ``value``, by the rules above.

    ``value`` may be an ``int``, a finite ``float`` (read through its shortest repr, so
    ``19.99`` is ``Decimal('19.99')``) or text; anything else, a negative number or text
    without digits gives ``(None, reason)``.
    """
    if isinstance(value, bool) or value is None:
        return None, f"not a number: {value!r}"
    if isinstance(value, int):
        return (Decimal(value), None) if value >= 0 else (None, f"negative: {value!r}")
    if isinstance(value, float):
        if not math.isfinite(value) or value < 0:
            return None, f"not a usable number: {value!r}"
        return Decimal(repr(value)), None
    if not isinstance(value, str):
        return None, f"not a number: {type(value).__name__}"
    match = _NUMBER.search(value)
    if match is None:
        return None, f"no number in {value[:80]!r}"
    start = match.start()
    if start and value[start - 1] in _MINUS:
        return None, f"negative: {value[:80]!r}"
    number = _read_digits(match.group(), integer)
    if number is None:
        return None, f"unclear digit grouping in {value[:80]!r}"
    return number, None


def parse_currency(value: object) -> tuple[str | None, str | None]:
    """``(ISO 4217 code, reason)``: ``"usd"`` and ``"€"`` give ``"USD"`` and ``"EUR"``."""
    if not isinstance(value, str):
        return None, f"currency is not text: {value!r}"
    text = value.strip()
    code = text.upper()
    if code in ISO_4217:
        return code, None
    if text in _SYMBOLS:
        return _SYMBOLS[text], None
    return None, f"currency {text[:40]!r} is not an ISO 4217 code"


def _currency_in(text: str) -> str | None:
    for symbol, code in _SYMBOLS.items():
        if symbol in text:
            return code
    for match in _CODE.finditer(text):
        if match.group() in ISO_4217:
            return match.group()
    return None


def _read_digits(token: str, integer: bool) -> Decimal | None:
    """The number a matched token means, or ``None`` when its grouping is inconsistent."""
    for char in _GROUP_SPACES:
        token = token.replace(char, "")
    dots, commas = token.count("."), token.count(",")
    if integer and (dots or commas) and _is_grouped(re.split("[.,]", token)):
        whole, fraction = token.replace(".", "").replace(",", ""), ""
    elif dots and commas:
        mark = "." if token.rfind(".") > token.rfind(",") else ","
        if token.count(mark) > 1:
            return None
        whole, _, fraction = token.partition(mark)
        grouping = "," if mark == "." else "."
        if not _is_grouped(whole.split(grouping)):
            return None
        whole = whole.replace(grouping, "")
    elif dots + commas > 1:
        groups = token.split("." if dots else ",")
        if not _is_grouped(groups):
            return None
        whole, fraction = "".join(groups), ""
    elif dots:
        whole, _, fraction = token.partition(".")
    elif commas:
        whole, _, fraction = token.partition(",")
        if len(fraction) == 3 and whole.strip("0"):
            whole, fraction = whole + fraction, ""
    else:
        whole, fraction = token, ""
    return Decimal(f"{whole}.{fraction}" if fraction else whole)


def _is_grouped(groups: list[str]) -> bool:
    """Thousands groups: the first 1-3 digits, the last 3, those between 3 (or 2, Indian)."""
    if len(groups) < 2:
        return True
    return (
        0 < len(groups[0]) <= 3
        and len(groups[-1]) == 3
        and all(len(group) in (2, 3) for group in groups[1:-1])
    )
