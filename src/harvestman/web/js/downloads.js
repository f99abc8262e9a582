// Download buttons of a list view: the list as its filters stand, every page of it, as CSV or
// JSONL from the API's export routes (fetched with the token by api.download).

import { describe, download } from "./api.js";
import { h } from "./dom.js";
import { num } from "./format.js";

/** "CSV" and "JSONL" buttons fetching `path` with the filters `current()` gives, and a line
 * saying what the file holds or what went wrong. */
export function downloadButtons(path, current, what) {
  const status = h("span", { class: "muted", role: "status", "data-testid": "download-status" });
  const button = (format) => h("button", {
    type: "button", "data-testid": `download-${format}`, "aria-label": `Download this list as ${format.toUpperCase()}`,
    onclick: async () => {
      const query = current();
      if (!query) return;
      status.textContent = `Preparing the ${format.toUpperCase()} file…`;
      try {
        const saved = await download(path, { query: { ...query, format } });
        const most = Number(saved.headers.get("X-Export-Limit")) || null;
        status.textContent = `Saved ${saved.name}: every ${what} of these filters${most ? ` (up to ${num(most)})` : ""}.`;
      } catch (exc) {
        status.textContent = describe(exc);
      }
    },
  }, format.toUpperCase());
  return {
    box: h("div", { class: "actions downloads" }, h("span", { class: "label" }, "Download this list:"), button("csv"), button("jsonl"), status),
    status,
  };
}
