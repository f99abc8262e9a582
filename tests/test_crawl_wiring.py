"""The wiring's one list of components: each listed once, its roles following from what it is."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from conftest import SettingsFactory
from harvestman.crawl.gates import Gate, HealthObserver, SharedState
from harvestman.crawl.run import CrawlRun
from harvestman.crawl.session import RulesSource
from harvestman.crawl.wiring import Wiring
from harvestman.crawl.work import ExchangeStep, RunResource, Step
from harvestman.render import renderer_unavailable
from harvestman.stats import Stats
from harvestman.store import SqlStore

BROWSER = "/usr/bin/chromium"
ROLES: dict[str, Any] = {
    "gate": Gate,
    "step": Step,
    "exchange": ExchangeStep,
    "observer": HealthObserver,
    "resource": RunResource,
    "rules": RulesSource,
    "shared": SharedState,
}
EVERYTHING_ON = {
    "breaker_enabled": True,
    "validate_pages": True,
    "store_text": True,
    "near_duplicates": True,
    "extract_products": True,
    "crawl_images": True,
    "parsers_enabled": True,
    "parsers": ["siteparsers:ShelfParser", "siteparsers:ShelfParserV2"],  # one in two versions
    "discovery_feeds": True,
    "discovery_pagination": True,
    "render_enabled": True,
    "render_browser": BROWSER,
    "extract_main_text": True,
}


def roles_of(component: object) -> set[str]:
    return {name for name, role in ROLES.items() if isinstance(component, role)}


@contextlib.asynccontextmanager
async def wiring_for(settings: Any) -> AsyncIterator[Wiring]:
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        run = CrawlRun(store, Stats(), lambda: 1000.0)
        yield Wiring(settings, run, on_pages=None, tasks=set[asyncio.Task[None]]())


async def test_every_component_is_listed_once_with_the_roles_it_plays(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    warc = tmp_path / "crawl.warc.gz"
    settings = make_settings(
        **EVERYTHING_ON,
        warc_path=str(warc),
        archive_enabled=True,
        archive_dir=str(tmp_path / "archive"),
    )
    renders = renderer_unavailable(BROWSER) is None
    async with wiring_for(settings) as wiring:
        table = [(type(c).__name__, roles_of(c)) for c in wiring.components]

        expected = [
            ("RobotsGate", {"gate"}),
            ("BreakerGate", {"gate", "observer", "shared"}),
            ("ValidateStep", {"step"}),
            ("StoreTextStep", {"step"}),
            ("NearDuplicateStep", {"step"}),
            ("ProductsStep", {"step"}),
            ("ImageLinksStep", {"step"}),
            ("VersionedParsersStep", {"gate", "step"}),
            ("FeedsStep", {"step"}),
            ("LinksStep", {"step"}),
            ("PaginationStep", {"gate", "step", "observer", "rules"}),
            ("WarcStep", {"exchange", "resource"}),
            *([("RenderStep", {"exchange"})] if renders else []),
            ("RawArchiveStep", {"exchange", "resource"}),
            ("MainTextStep", {"exchange"}),
        ]
        assert table == expected
        assert len({id(c) for c in wiring.components}) == len(wiring.components)
        # The same objects in every role, each role in the list's order.
        pagination, parsers = wiring.pagination, wiring.parsers
        assert [type(g).__name__ for g in wiring.gates()] == [
            "RobotsGate", "BreakerGate", "VersionedParsersStep", "PaginationStep"
        ]  # fmt: skip
        assert wiring.gates()[2:] == [parsers, pagination]
        assert wiring.observers() == [wiring.breaker, pagination]
        assert wiring.pipeline.steps[-1] is pagination
        assert wiring.session.rules == (pagination,)
        with contextlib.ExitStack() as keep:
            exchange = wiring.exchange_steps(keep)
            assert [type(s).__name__ for s in exchange] == [
                name for name, roles in expected if "exchange" in roles
            ]
            assert warc.exists()  # opened for the run
        if wiring.render is not None:
            await wiring.render.close()


@pytest.mark.parametrize(
    ("parsers", "gates"),
    [
        (["siteparsers:ShelfParser"], ["RobotsGate"]),
        (
            ["siteparsers:ShelfParser", "siteparsers:ShelfParserV2"],
            ["RobotsGate", "VersionedParsersStep"],
        ),
    ],
)
async def test_site_parsers_are_a_gate_only_with_a_parser_in_several_versions(
    make_settings: SettingsFactory, parsers: list[str], gates: list[str]
) -> None:
    settings = make_settings(
        parsers_enabled=True,
        parsers=parsers,
        breaker_enabled=False,
        discovery_pagination=False,
    )
    async with wiring_for(settings) as wiring:
        assert [type(gate).__name__ for gate in wiring.gates()] == gates
        assert wiring.parsers in wiring.pipeline.steps
        assert wiring.session.rules == ()
