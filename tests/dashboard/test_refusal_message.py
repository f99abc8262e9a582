"""The dashboard shows a refused start URL's message as the API says it: once, naming the
setting that admits the address (a real ``harvestman serve``, Debian's Chromium)."""

from __future__ import annotations

from pathlib import Path

from dashboard.browser import CHROMIUM, require_chromium
from dashboard.server import serve_dashboard, wait_ready

# serve admits 127.0.0.0/8 (its test site); a private address outside it is refused. An IP
# literal is judged as written: nothing is sent to it.
REFUSED = "http://10.11.12.13:8080/"

DESCRIBE = """async ([token, url]) => {
  sessionStorage.setItem("harvestman.token", token);
  const { api, describe } = await import("/dashboard/js/api.js");
  try {
    await api("/api/v1/sources", {
      method: "POST",
      body: { name: "lan", start_urls: [url] },
    });
    return "created";
  } catch (exc) {
    return describe(exc);
  }
}"""


async def test_a_refused_start_url_is_told_once_with_the_setting(tmp_path: Path) -> None:
    require_chromium()
    from playwright.async_api import async_playwright

    async with serve_dashboard(tmp_path, "http://127.0.0.1:9/") as served, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM))
        try:
            await wait_ready(served)
            page = await browser.new_page()
            await page.goto(f"{served.base}/")
            shown = await page.evaluate(DESCRIBE, [served.admin, REFUSED])
        finally:
            await browser.close()
    assert shown == (
        f"start_urls: {REFUSED} is refused: 10.11.12.13 port 8080 is a non-public address"
        ' outside the network allow-list. To crawl it, add "10.11.12.13:8080" to the setting'
        " network_allow and restart serve: HARVESTMAN_NETWORK_ALLOW=10.11.12.13:8080 in its"
        ' environment, or network_allow = ["10.11.12.13:8080"] in its config file (a CIDR such'
        " as 127.0.0.0/8 admits a whole network)."
    )
