"""Path and query parameters shared by the routers, with their bounds."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Query

from harvestman.api.admission import access
from harvestman.api.auth import Principal, Role
from harvestman.api.schemas import MAX_ID

Limit = Annotated[int, Query(ge=1, le=500, description="items per page")]
Offset = Annotated[
    int, Query(ge=0, le=10**9, description="items to skip (up to api_max_offset; then: cursor)")
]
Cursor = Annotated[
    str | None,
    Query(min_length=1, max_length=400, description="the next_cursor of the previous page"),
]
Id = Annotated[int, Path(ge=1, le=MAX_ID)]

Anonymous = Annotated[Principal, Depends(access(Role.ANONYMOUS))]
User = Annotated[Principal, Depends(access(Role.USER))]
Admin = Annotated[Principal, Depends(access(Role.ADMIN))]
AdminSeed = Annotated[Principal, Depends(access(Role.ADMIN, seed=True))]
