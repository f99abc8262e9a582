"""One JSON shape for every error the API answers::

    {"error": {"status": 409, "code": "invalid_state", "message": "...", "details": {...}}}

``details`` is present when there is more to say: the fields of a validation error, the
current state and allowed actions of a refused job action. Jobs errors map to 404 (NotFound),
409 (NameTaken, JobStateError) and 422 (InvalidSpec, UnknownSource). A StoreError is mapped by
its cause: a value the database refuses (a NUL byte in a PostgreSQL string: DataError) is the
caller's 422, a conflicting write a 409, a database that cannot be reached or is busy a 503,
anything else a 500. Anything unexpected is a 500 whose message reveals nothing of the server.
Every 5xx is logged with its traceback.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from harvestman.api.responses import SafeJSONResponse
from harvestman.errors import StoreError
from harvestman.jobs.errors import InvalidSpec, JobStateError, NameTaken, NotFound

log = logging.getLogger(__name__)

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "body_too_large",
    422: "invalid",
    429: "rate_limited",
    500: "internal_error",
    503: "unavailable",
}


class ApiError(Exception):
    """An error the API answers as is: ``status``, a stable ``code``, a message, details."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code or _CODES.get(status, "error")
        self.message = message
        self.details = details
        self.headers = headers


def error_body(
    status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    error: dict[str, Any] = {"status": status, "code": code, "message": message}
    if details is not None:
        error["details"] = details
    return {"error": error}


def respond(error: ApiError) -> JSONResponse:
    body = error_body(error.status, error.code, error.message, error.details)
    return SafeJSONResponse(body, status_code=error.status, headers=error.headers)


def translate(exc: Exception) -> ApiError:
    """The ApiError for an exception raised below the API."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, NotFound):
        return ApiError(404, str(exc), details={"kind": exc.kind, "id": exc.ident})
    if isinstance(exc, InvalidSpec):
        return ApiError(422, str(exc), details={"field": exc.field})
    if isinstance(exc, NameTaken):
        return ApiError(409, str(exc), code="name_taken")
    if isinstance(exc, JobStateError):
        return ApiError(
            409,
            str(exc),
            code="invalid_state",
            details={
                "job_id": exc.job_id,
                "state": exc.state,
                "action": exc.action,
                "allowed_actions": exc.allowed_actions,
            },
        )
    if isinstance(exc, StoreError):
        return _store_error(exc)
    return ApiError(500, "internal error")


def _store_error(exc: StoreError) -> ApiError:
    from harvestman.store.transient import Refusal, refusal

    why = refusal(exc.__cause__)
    if why is Refusal.INVALID_VALUE:
        return ApiError(
            422, "the request holds a value the store cannot take", code="invalid_value"
        )
    if why is Refusal.CONFLICT:
        return ApiError(409, "the change conflicts with the stored data", code="conflict")
    if why is Refusal.UNAVAILABLE:
        return ApiError(503, "the store is unavailable, try again later", code="store_unavailable")
    return ApiError(500, "internal error")


def log_failure(request: Request | None, status: int, exc: BaseException) -> None:
    """A 5xx is the server's fault: say where, with the traceback."""
    if status >= 500:
        where = f"{request.method} {request.url.path}" if request is not None else "a request"
        log.error("%s failed with %d", where, status, exc_info=exc)


def _place(part: object) -> str:
    """A part of a validation error's ``loc``: a field name or an index, else ``?``."""
    text = str(part)
    return text if _FIELD.fullmatch(text) else "?"


_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}|[0-9]{1,9}")


def install(app: FastAPI) -> None:
    """Register the handlers that give every error the shape above."""

    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        error = translate(exc)
        log_failure(request, error.status, exc)
        return respond(error)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        message = exc.detail if isinstance(exc.detail, str) else "error"
        error = ApiError(exc.status_code, message, headers=getattr(exc, "headers", None))
        return respond(error)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        # No input is repeated: not the value, nor a key of a free-form object in ``loc``.
        fields = [
            {
                "loc": [_place(part) for part in e.get("loc", ())],
                "message": str(e.get("msg", ""))[:300],
                "type": str(e.get("type", "")),
            }
            for e in exc.errors()
        ]
        return respond(ApiError(422, "the request is invalid", details={"errors": fields}))

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log_failure(request, 500, exc)
        return respond(ApiError(500, "internal error"))

    app.add_exception_handler(ApiError, on_api_error)
    for cls in (NotFound, InvalidSpec, NameTaken, JobStateError, StoreError):
        app.add_exception_handler(cls, on_api_error)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(Exception, on_unexpected)
