"""The process's own log lines (``serve``, ``worker``): one handler on stderr, text or JSON.

``configure_logging`` replaces the root logger's handlers with one stream handler, so every
logger that propagates — ours, uvicorn's (``serve`` gives uvicorn no logging config of its
own), the libraries' — writes through it, at ``log_level`` and above. ``log_format="json"``
writes one JSON object per line, for a log shipper to read without parsing prose:

>>> import io, json
>>> out = io.StringIO()
>>> handler = configure_logging("json", "INFO", stream=out)
>>> logging.getLogger("harvestman.example").warning("depth %d is deep", 7)
>>> record = json.loads(out.getvalue())
>>> (record["level"], record["logger"], record["message"])
('WARNING', 'harvestman.example', 'depth 7 is deep')
>>> sorted(record)
['level', 'logger', 'message', 'time']
>>> reset_logging()

Per-execution capture (``harvestman.jobs.logs``) is a second handler on the ``harvestman``
logger, independent of this one.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import IO, Any, Final

TEXT_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# uvicorn's loggers carry their own handlers only when uvicorn configures logging; these are
# the ones it creates, emptied so their records reach the root handler once.
UVICORN_LOGGERS: Final = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")
# Alembic announces each of its plugins at INFO whenever it migrates: seven lines of its
# internals before the first "Running upgrade" of a new store's serve. Shown at DEBUG only.
CHATTY_LOGGERS: Final = ("alembic.runtime.plugins",)
# Attributes every LogRecord has: anything else was passed with ``extra=`` and is written out.
# uvicorn's ``color_message`` repeats the message with terminal colours: left out.
_STANDARD: Final = frozenset(logging.makeLogRecord({}).__dict__) | {
    "message",
    "asctime",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``time`` (ISO 8601, UTC), ``level``, ``logger``,
    ``message``, then ``exception`` when there is one and any ``extra=`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            body["exception"] = record.exc_text
        if record.stack_info:
            body["stack"] = self.formatStack(record.stack_info)
        for key, value in record.__dict__.items():
            if key not in _STANDARD and key not in body and not key.startswith("_"):
                body[key] = value
        # A message may hold newlines (a traceback, a page title): JSON escapes them, so one
        # record stays one line.
        return json.dumps(body, default=str, ensure_ascii=False)


def configure_logging(
    log_format: str = "text", log_level: str | int = "INFO", *, stream: IO[str] | None = None
) -> logging.Handler:
    """Send every log record at ``log_level`` or above to ``stream`` (stderr), as readable
    text or JSON lines; the handler installed is returned. Calling it again replaces it."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    level = logging.getLevelName(log_level) if isinstance(log_level, str) else log_level
    handler.setLevel(level)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.setLevel(logging.NOTSET)  # the root's level decides (uvicorn may set its own)
        logger.propagate = True
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(
            logging.NOTSET if level <= logging.DEBUG else logging.WARNING
        )
    return handler


def reset_logging() -> None:
    """Remove the root handlers (tests end with it)."""
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.setLevel(logging.WARNING)
