"""``--since`` and ``--until`` values: an age, a date or epoch seconds, as epoch seconds.

>>> parse_since("36h", now=1_000_000.0), parse_since("2024-05-01", now=0.0)
(870400.0, 1714521600.0)
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_AGO = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_since(value: str, *, now: float) -> float:
    """``--since`` as epoch seconds: an age (``90m``, ``36h``, ``7d``, ``2w``) before ``now``,
    an ISO 8601 date or time (UTC unless it says otherwise), or epoch seconds.

    Raises ``ValueError`` for anything else.
    """
    text = value.strip()
    if match := _AGO.fullmatch(text):
        return now - float(match[1]) * _UNITS[match[2]]
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--since {value!r}: use an age (36h, 7d), an ISO date or epoch") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
