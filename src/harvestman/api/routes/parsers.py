"""Site parsers over HTTP: per-domain parse success rates, so a layout change shows as a drop;
rollouts of new parser versions, their rates beside the stable version's, promotion and
rollback (``extract/rollouts.py``)."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Path, Query, Request
from pydantic import Field

from harvestman.api.auth import Principal
from harvestman.api.context import ApiContext, context_of
from harvestman.api.crawls import CrawlQuery, crawl_id
from harvestman.api.errors import ApiError
from harvestman.api.params import Admin, User
from harvestman.api.schemas import MAX_ID, Strict
from harvestman.extract.rollouts import EVERY_DOMAIN, RolloutTable, parse_rollout
from harvestman.records import ParserRollout

router = APIRouter(tags=["parsers"])

ParserName = Path(min_length=1, max_length=100, description="the site parser's name")
DOMAIN_FIELD = Field(
    EVERY_DOMAIN, min_length=1, max_length=300, description="a host name and its subdomains; *: all"
)


class RolloutIn(Strict):
    version: str = Field(min_length=1, max_length=50, description="the candidate version")
    share: float = Field(ge=0.0, le=1.0, allow_inf_nan=False, description="of the domain's pages")
    domain: str = DOMAIN_FIELD


class PromoteIn(Strict):
    domain: str = DOMAIN_FIELD
    version: str | None = Field(
        None, min_length=1, max_length=50, description="default: the rollout's candidate"
    )


class RollbackIn(Strict):
    domain: str = DOMAIN_FIELD


def _configured(ctx: ApiContext) -> list[ParserRollout]:
    return [parse_rollout(text) for text in ctx.crawler_settings.parser_rollouts]


async def _rollouts(ctx: ApiContext, parser: str | None = None) -> list[dict[str, Any]]:
    """The rollouts in force: the stored ones, and the setting's that none of them replaces."""
    stored = await ctx.sql_store.rollouts.parser_rollouts(parser)
    keys = {(r.parser, r.domain) for r in stored}
    configured = [
        r
        for r in _configured(ctx)
        if (r.parser, r.domain) not in keys and (parser is None or r.parser == parser)
    ]
    return [
        *({**asdict(r), "origin": "store"} for r in stored),
        *({**asdict(r), "origin": "settings"} for r in configured),
    ]


def _compare(rollout: dict[str, Any], lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per version of the rollout's parser on its domain: pages, successes and the rate."""
    table = RolloutTable.of([ParserRollout(rollout["parser"], "", 0.0, rollout["domain"])])
    versions: dict[str, dict[str, Any]] = {}
    for line in lines:
        # Stats are kept per host key (with a port other than the scheme's); rollouts name
        # host names, as the registry matches them.
        host = urlsplit(f"//{line['host']}").hostname or ""
        if line["parser"] != rollout["parser"] or table.rollout(line["parser"], host) is None:
            continue
        counts = versions.setdefault(
            line["version"],
            {"version": line["version"], "candidate": line["version"] == rollout["version"],
             "attempts": 0, "successes": 0},
        )  # fmt: skip
        counts["attempts"] += line["attempts"]
        counts["successes"] += line["successes"]
    for counts in versions.values():
        attempts = counts["attempts"]
        counts["success_rate"] = round(counts["successes"] / attempts, 6) if attempts else None
    return sorted(versions.values(), key=lambda v: (not v["candidate"], v["version"]))


@router.get("/api/parsers/stats")
async def parser_stats(
    request: Request,
    _: User,
    crawl: CrawlQuery = None,
    source_id: int | None = Query(None, ge=1, le=MAX_ID, description="a source's crawl"),
    host: str | None = Query(None, min_length=1, max_length=300),
    parser: str | None = Query(None, min_length=1, max_length=100),
    since: float | None = Query(
        None, ge=0, le=1e11, allow_inf_nan=False, description="epoch seconds: from that day"
    ),
    days: bool = Query(False, description="add each day's counts (oldest first)"),
) -> dict[str, Any]:
    """Per (host, parser, version), of every crawl unless ``crawl`` (or ``source_id``: its
    source's crawl) names one (``crawl`` in the answer: null for every crawl): pages handled,
    with records, empty, failed; the success rate overall, on the last day with attempts and
    on the days before (``drop``). Each rollout in force lists its parser's versions on its
    domain with their success rates (``rollouts[].versions``, the candidate first)."""
    ctx = context_of(request)
    if crawl is not None and source_id is not None:
        raise ApiError(422, "give crawl or source_id, not both")
    name = crawl
    if source_id is not None:
        name = (await ctx.job_store.sources.get(source_id)).crawl
    one = await crawl_id(ctx, name)
    lines = await ctx.read(
        lambda: ctx.sql_store.reports.parser_stats(
            one, host=host, parser=parser, since=since, with_days=days
        )
    )
    rollouts = await _rollouts(ctx, parser)
    for rollout in rollouts:
        rollout["versions"] = _compare(rollout, lines)
    return {"crawl": name, "items": lines, "rollouts": rollouts}


@router.get("/api/parsers/rollouts")
async def list_rollouts(request: Request, _: User) -> dict[str, Any]:
    """The rollouts in force, stored (``origin: store``) or from the ``parser_rollouts``
    setting (``origin: settings``); a stored one replaces the setting's for its domain."""
    return {"items": await _rollouts(context_of(request))}


async def _set(ctx: ApiContext, rollout: ParserRollout) -> dict[str, Any]:
    await ctx.sql_store.rollouts.set_parser_rollout(rollout)
    return {**asdict(rollout), "origin": "store"}


def _by(principal: Principal) -> str | None:
    return principal.user or principal.subject


@router.put("/api/admin/parsers/{parser}/rollout")
async def set_rollout(
    request: Request, body: RolloutIn, principal: Admin, parser: str = ParserName
) -> dict[str, Any]:
    """Run ``version`` of ``parser`` on ``share`` of ``domain``'s pages (by URL hash), the
    parser's other loaded version on the rest. Crawls pick it up within
    ``parser_rollout_refresh`` seconds."""
    rollout = ParserRollout(
        parser, body.version, body.share, body.domain.lower(), time.time(), _by(principal)
    )
    return await _set(context_of(request), rollout)


async def _current(ctx: ApiContext, parser: str, domain: str) -> dict[str, Any] | None:
    return next((r for r in await _rollouts(ctx, parser) if r["domain"] == domain), None)


@router.post("/api/admin/parsers/{parser}/promote")
async def promote(
    request: Request, body: PromoteIn, principal: Admin, parser: str = ParserName
) -> dict[str, Any]:
    """The candidate version (or ``version``) parses every page of ``domain`` (share 1.0)."""
    ctx = context_of(request)
    domain = body.domain.lower()
    current = await _current(ctx, parser, domain)
    version = body.version or (current["version"] if current else None)
    if version is None:
        raise ApiError(
            404,
            f"no rollout of {parser!r} on {domain!r}: name the version to promote",
            details={"parser": parser, "domain": domain},
        )
    rollout = ParserRollout(parser, version, 1.0, domain, time.time(), _by(principal))
    return await _set(ctx, rollout)


@router.post("/api/admin/parsers/{parser}/rollback")
async def rollback(
    request: Request, body: RollbackIn, principal: Admin, parser: str = ParserName
) -> dict[str, Any]:
    """The candidate version parses no page of ``domain`` any more (share 0.0)."""
    ctx = context_of(request)
    domain = body.domain.lower()
    current = await _current(ctx, parser, domain)
    if current is None:
        raise ApiError(
            404,
            f"no rollout of {parser!r} on {domain!r}",
            details={"parser": parser, "domain": domain},
        )
    rollout = ParserRollout(parser, current["version"], 0.0, domain, time.time(), _by(principal))
    return await _set(ctx, rollout)
