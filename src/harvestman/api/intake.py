"""The ASGI middleware every request passes before FastAPI reads it: the caller is known and
counted, and the body bounded, before a byte of it is parsed.

One anonymous 23 MB JSON body used to take ``serve`` to 743 MB while it was parsed for a route
that then answered 401; a body nested 300 deep was stored and broke every list that showed it.
Now, for a request that carries a body:

1. a ``Content-Length`` above ``max_body_bytes`` is a 413 at once, the body unread;
2. the caller is identified and rate-limited (``admission.admit``: 401, 429), the body still unread;
3. the body is read while counting: beyond ``max_body_bytes`` (a chunked body says no length)
   it is a 413 and nothing more is read;
4. a JSON body must be UTF-8 (RFC 8259 §8.1): a ``charset`` other than UTF-8, bytes that are
   not UTF-8 or a NUL byte (UTF-16 and UTF-32 hold them; JSON text never does) are a 415
   ``unsupported_encoding``. Python's decoder would take UTF-16/32, where a byte scan reading
   UTF-8 saw brackets inside a string (a ``∀`` is 0x22 0x22 in UTF-16LE) and let 260 levels by;
5. a JSON body nested deeper than ``max_json_depth`` is a 422 (``json_too_deep``), counted on
   the UTF-8 text the decoder reads, before ``json.loads`` recurses into it;
6. the JSON is decoded and every string in it, keys included, checked once (``text``): a NUL,
   a lone surrogate or more than ``max_text_length`` characters is a 422 ``invalid_text``;
   NaN and Infinity (not JSON, but Python's decoder takes them) are a 422 ``invalid_json``;
   text that is not JSON at all is left to the route (its 401, then its 422).

The body is then handed to the app in one piece. A request without a body passes untouched;
its route's ``access`` dependency identifies and counts it, and checks its parameters.

>>> json_depth(b'{"a": [1, {"b": "[[[["}]}', limit=32)
3
>>> json_depth(b"[" * 100, limit=32)
33
"""

from __future__ import annotations

import json
import re

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from harvestman.api.admission import admit
from harvestman.api.errors import ApiError, log_failure, respond, translate
from harvestman.api.text import find_bad_text, invalid_text

# A JSON string (escapes included): brackets inside one do not nest.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_OPEN = frozenset(b"[{")


def json_depth(body: bytes, *, limit: int) -> int:
    """The nesting depth of a JSON text, counted up to ``limit + 1`` (then it stops)."""
    depth = deepest = 0
    for byte in _STRING.sub(b"", body).translate(None, _NOT_BRACKETS):
        if byte in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


def _is_json(content_type: str | None) -> bool:
    # FastAPI parses a body without a content type as JSON too.
    if not content_type:
        return True
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


def _charset(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a Content-Type, lowercased, or None.

    >>> _charset('application/json; Charset="UTF-8"'), _charset("application/json")
    ('utf-8', None)
    """
    for part in (content_type or "").split(";")[1:]:
        name, _, value = part.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def _unsupported(reason: str) -> ApiError:
    return ApiError(
        415,
        f"a JSON body must be UTF-8 text: {reason}",
        code="unsupported_encoding",
    )


class RequestIntake:
    def __init__(
        self, app: ASGIApp, *, max_body_bytes: int, max_json_depth: int, max_text_length: int
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_json_depth = max_json_depth
        self.max_text_length = max_text_length

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        length = headers.get("content-length")
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if not chunked and (length is None or length.strip() == "0"):
            await self.app(scope, receive, send)
            return
        try:
            body = await self._take(scope, receive, headers, length)
        except ApiError as exc:
            await _respond(exc, scope, receive, send)
            return
        except Exception as exc:  # a store error while checking a user's token
            error = translate(exc)
            log_failure(Request(scope), error.status, exc)
            await _respond(error, scope, receive, send)
            return
        if body is None:  # the client went away
            return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _take(
        self, scope: Scope, receive: Receive, headers: Headers, length: str | None
    ) -> bytes | None:
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                raise ApiError(400, "the Content-Length header is not a number") from None
            if declared > self.max_body_bytes:
                raise self._too_large()
        await admit(Request(scope))
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if _is_json(headers.get("content-type")):
            self._check_json(body, headers.get("content-type"))
        return body

    def _check_json(self, body: bytes, content_type: str | None) -> None:
        if _charset(content_type) not in (None, "utf-8", "utf8"):
            raise _unsupported("only charset=utf-8 is taken")
        if b"\x00" in body:
            raise _unsupported("it holds NUL bytes (UTF-16 or UTF-32?)")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _unsupported(f"byte {exc.start} is not UTF-8") from None
        if text.startswith("\ufeff"):
            raise _unsupported("it starts with a byte order mark")
        # Valid UTF-8 never holds an ASCII byte inside a multi-byte character, so the bytes'
        # brackets and quotes are the decoder's.
        limit = self.max_json_depth
        if json_depth(body, limit=limit) > limit:
            raise ApiError(
                422,
                f"the JSON body is nested deeper than {limit} levels",
                code="json_too_deep",
                details={"max_depth": limit},
            )
        try:
            value = json.loads(text, parse_constant=_refuse_constant)
        except json.JSONDecodeError:
            return  # not JSON at all: the route answers (its 401 first, then its 422)
        except ValueError as exc:  # JSON but for NaN or Infinity, which Python's decoder takes
            message = f"the body is not JSON (RFC 8259): {exc}"
            raise ApiError(422, message, code="invalid_json") from None
        bad = find_bad_text(value, self.max_text_length)
        if bad is not None:
            raise invalid_text(bad[0], bad[1], self.max_text_length)

    def _too_large(self) -> ApiError:
        return ApiError(
            413,
            f"the request body is larger than {self.max_body_bytes} bytes",
            code="body_too_large",
            details={"max_bytes": self.max_body_bytes},
        )


async def _respond(error: ApiError, scope: Scope, receive: Receive, send: Send) -> None:
    await respond(error)(scope, receive, send)
