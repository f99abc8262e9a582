"""The dashboard's product views end to end: Debian's Chromium (Playwright) against a real
``harvestman serve`` whose store holds products and a price history; the list filters through
``GET /api/products`` and a product's page draws its price history."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web
from sqlalchemy import insert, select

from conftest import serve
from dashboard.browser import CHROMIUM, require_chromium, screenshot_path
from dashboard.server import Served, serve_dashboard, wait_ready
from harvestman.store import SqlStore
from harvestman.store.schema import product_history, products
from harvestman.store.transaction import transaction
from productrows import T0, add_catalogue

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
    pytest.mark.xdist_group("dashboard_products"),
]
WAIT = 20_000


async def _quiet_site(request: web.Request) -> web.Response:
    return web.Response(text="<html><head><title>Quiet</title></head><body></body></html>",
                        content_type="text/html")  # fmt: skip


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def dashboard(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Served, Any]]:
    require_chromium()
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=WAIT)
    workdir = tmp_path_factory.mktemp("dashboard-products")
    async with (
        serve(_quiet_site) as port,
        serve_dashboard(workdir, f"http://127.0.0.1:{port}/") as served,
        async_playwright() as pw,
    ):
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM))
        try:
            await wait_ready(served)
            async with SqlStore(f"sqlite:///{workdir / 'crawl.db'}") as store:
                add_catalogue(store, 12)
                with transaction(store.engine) as conn:
                    kettle = conn.execute(
                        select(products.c.id).where(products.c.name == "Product 4")
                    ).scalar_one()
                    conn.execute(insert(product_history), [
                        {"product_id": kettle, "price": Decimal(price), "currency": "EUR",
                         "availability": availability, "changed_at": T0 + n * 86400}
                        for n, (price, availability) in enumerate(
                            [("25", "in_stock"), ("19.5", "in_stock"), ("19.5", "out_of_stock")]
                        )
                    ])  # fmt: skip
            yield served, browser
        finally:
            await browser.close()


async def test_the_product_list_filters_and_a_product_shows_its_price_history(
    dashboard: tuple[Served, Any],
) -> None:
    from playwright.async_api import expect

    served, browser = dashboard
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    page.set_default_timeout(WAIT)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    await page.goto(served.base + "/")
    await page.get_by_label("API token").fill(served.user)
    await page.get_by_role("button", name="Use token").click()
    await page.get_by_role("heading", name="Overview").wait_for()

    await (
        page.get_by_role("navigation", name="Sections")
        .get_by_role("link", name="Products", exact=True)
        .click()
    )
    table = page.get_by_test_id("products-table")
    await expect(table.locator("tbody tr")).to_have_count(12)
    await page.get_by_label("Brand").fill("acme")  # products 0, 4 and 8
    await page.get_by_label("Order").select_option("price:asc")
    await page.get_by_role("button", name="Show").click()
    await expect(table.locator("tbody tr")).to_have_count(2)  # 0 has no price
    await expect(table.locator("tbody tr").first).to_contain_text("Product 4")
    await expect(table.locator("tbody tr").first).to_contain_text("4.25 EUR")
    # Availability reads as the filter names it, not as the stored enum.
    await expect(table.locator("tbody tr").first).to_contain_text("in stock")
    await page.screenshot(path=screenshot_path("products"), full_page=True)

    await table.get_by_role("link", name="Product 4").click()
    await expect(page.get_by_test_id("product-name")).to_have_text("Product 4")
    history = page.get_by_test_id("history-table")
    await expect(history.locator("tbody tr")).to_have_count(3)
    await expect(history.locator("tbody tr").first).to_contain_text("out of stock")
    chart = page.locator("svg[data-testid=price-chart]")
    await expect(chart.locator("path.line")).to_have_count(1)
    # A step: 25 until the second change, then 19.5 held (the third changed availability alone).
    path = await chart.locator("path.line").get_attribute("d")
    assert path is not None
    points = [tuple(map(float, p.split(","))) for p in re.split("[ML]", path) if p]
    assert len(points) == 4
    (x0, high), (x1, high_again), (x2, low), (x3, low_again) = points
    assert (high, low) == (high_again, low_again)
    assert low > high  # SVG's y grows downwards: the price fell
    assert x0 < x1 == x2 < x3
    await page.screenshot(path=screenshot_path("product"), full_page=True)
    assert errors == []
