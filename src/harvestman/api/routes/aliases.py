"""Second names for existing routes: the paths of the crawler service guide
(``/api/v1/frontier``, ``/api/v1/jobs/{id}/logs/stream/v2``) beside the project's own.

An alias is the same route under another path: same handler, parameters, roles and response
model, so the two cannot drift; both are in the OpenAPI document. The handler is looked up by
its path on the router that owns it, so a reworked handler is served by its alias too.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.routing import APIRoute

from harvestman.api.routes import crawl, executions

# (owning router, the existing path, its method, the alias path)
ALIASES = (
    (crawl.router, "/api/frontier/urls", "GET", "/api/v1/frontier"),
    (crawl.router, "/api/frontier/add", "POST", "/api/v1/frontier"),
    (crawl.router, "/api/frontier", "DELETE", "/api/v1/frontier"),
    (
        executions.router,
        "/api/v1/jobs/{job_id}/logs/stream",
        "GET",
        "/api/v1/jobs/{job_id}/logs/stream/v2",
    ),
)

router = APIRouter()


def _route(owner: APIRouter, path: str, method: str) -> APIRoute:
    for route in owner.routes:
        if isinstance(route, APIRoute) and route.path == path and method in (route.methods or ()):
            return route
    raise LookupError(f"no {method} {path} to alias")


for _owner, _path, _method, _alias in ALIASES:
    _original = _route(_owner, _path, _method)
    router.add_api_route(
        _alias,
        _original.endpoint,
        methods=[_method],
        response_model=_original.response_model,
        status_code=_original.status_code,
        tags=list(_original.tags),
        summary=_original.summary,
        description=f"Alias of `{_method} {_path}`. " + (_original.description or ""),
        response_class=_original.response_class,
        operation_id=None,
    )
