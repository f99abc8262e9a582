"""JSON answers that a stored string cannot break.

The API refuses lone surrogates at its door (``text``), but a row written before that, or
behind the API's back, may hold one, and no UTF-8 encoder takes it: one such job made every
``GET /api/v1/jobs`` a 500. A single item is answered with such characters replaced by U+FFFD
(and a warning logged); a list leaves the item out (``paging.PageResponse``).

>>> SafeJSONResponse({"k": "a\\ud800"}).body
b'{"k":"a\\xef\\xbf\\xbd"}'
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi.responses import JSONResponse

log = logging.getLogger(__name__)

_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {replace_surrogates(k): replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [replace_surrogates(item) for item in value]
    return value


class SafeJSONResponse(JSONResponse):
    """Starlette's JSONResponse, but text no UTF-8 encoder takes is replaced, not a 500."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            log.warning("an answer held text that is not UTF-8: replaced by U+FFFD")
            return super().render(replace_surrogates(content))
