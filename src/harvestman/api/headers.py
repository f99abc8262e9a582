"""The security headers every answer carries, and the API docs pages with their own policy.

Every answer, from the dashboard's page to a 500 raised before a route ran, gets (unless the
answer set its own) a Content-Security-Policy with ``frame-ancestors 'none'``,
``X-Frame-Options: DENY`` (for browsers without CSP 2), ``X-Content-Type-Options: nosniff``
and ``Referrer-Policy: no-referrer``. JSON is not a document: its policy is
``default-src 'none'``. The dashboard keeps its own (``app.DASHBOARD_HEADERS``).

The docs pages (``/docs``: Swagger UI, ``/redoc``: ReDoc) are FastAPI's pages with their
scripts and styles served from here (``/docs/static``: the builds the ``fastapi-offline``
package ships, Swagger UI 5 and ReDoc 2), never from a CDN: they work on a network that
reaches nothing else. Their policy allows this origin's files, Swagger's one inline script by
its SHA-256, and fetching the OpenAPI document from here.
"""

from __future__ import annotations

import base64
import hashlib
import re

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

API_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
SECURITY_HEADERS = (
    (b"content-security-policy", API_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)
# Where the docs pages' scripts and styles are served from (add_docs).
DOCS_STATIC = "/docs/static"
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


class SecurityHeaders:
    """Pure ASGI: adds each of ``SECURITY_HEADERS`` an answer does not set itself. Wraps the
    whole app (``HarvestmanApi``), so the 500 of Starlette's outermost error handler has them
    too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {name.lower() for name, _ in headers}
                headers.extend(h for h in SECURITY_HEADERS if h[0] not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_secured)


class HarvestmanApi(FastAPI):
    """FastAPI with ``SecurityHeaders`` outside everything, Starlette's error handler too."""

    def build_middleware_stack(self) -> ASGIApp:
        return SecurityHeaders(super().build_middleware_stack())


def _policy(*directives: str) -> str:
    return "; ".join(
        (*directives, "frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'")
    )


def _script_hashes(html: str) -> str:
    return " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'"
        for s in _INLINE_SCRIPT.findall(html)
    )


def add_docs(app: FastAPI) -> None:
    """``/docs`` and ``/redoc`` (the app is made with ``docs_url=None, redoc_url=None``), each
    answered with the policy its page needs, and their files under ``DOCS_STATIC``."""
    from importlib.resources import files

    from starlette.staticfiles import StaticFiles

    static = files("fastapi_offline") / "static"
    app.mount(DOCS_STATIC, StaticFiles(directory=str(static)), name="docs-static")
    openapi_url = app.openapi_url or "/openapi.json"
    swagger = get_swagger_ui_html(
        openapi_url=openapi_url,
        title=f"{app.title} - Swagger UI",
        swagger_js_url=f"{DOCS_STATIC}/swagger-ui-bundle.js",
        swagger_css_url=f"{DOCS_STATIC}/swagger-ui.css",
        swagger_favicon_url=f"{DOCS_STATIC}/favicon.png",
    )
    swagger_html = bytes(swagger.body).decode()
    swagger_policy = _policy(
        "default-src 'none'",
        f"script-src 'self' {_script_hashes(swagger_html)}",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
    )
    redoc = get_redoc_html(
        openapi_url=openapi_url,
        title=f"{app.title} - ReDoc",
        redoc_js_url=f"{DOCS_STATIC}/redoc.standalone.js",
        redoc_favicon_url=f"{DOCS_STATIC}/favicon.png",
        with_google_fonts=False,
    )
    redoc_html = bytes(redoc.body).decode()
    redoc_policy = _policy(
        "default-src 'none'",
        "script-src 'self'",
        # ReDoc writes its styles into <style> elements as it renders.
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "worker-src blob:",
    )

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return HTMLResponse(swagger_html, headers={"Content-Security-Policy": swagger_policy})

    @app.get("/redoc", include_in_schema=False)
    async def redoc_page() -> HTMLResponse:
        return HTMLResponse(redoc_html, headers={"Content-Security-Policy": redoc_policy})
